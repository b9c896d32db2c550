/**
 * A started sandbox while it runs: its output as sockets, its timeout, how it is ended, and
 * its status once the init is reaped.
 *
 * The init is reaped through a SIGCHLD listener (reaper.ts) and killed through its pidfd —
 * SIGKILL to pid 1 ends the whole pid namespace, so nothing the command started survives it.
 * @module
 */
import net from "node:net";
import { removeCgroupLater } from "./cgroup_removal.ts";
import { OUT } from "./ffi.ts";
import { END_SIGNAL } from "./protocol.ts";
import { sandboxCpuTime, waitForExit } from "./reaper.ts";
import { readReport } from "./report.ts";
import { setupFailure } from "./setup_failure.ts";
import { decodeWaitStatus, type SignalName, signalNumber } from "./wait_status.ts";
import type { SandboxProcess } from "./sandbox_process.ts";
import { logSetupFailure, type StartedInit } from "./start_init.ts";
import { syncUpperInBackground } from "./upper_sync.ts";

/** How long the init may take to end its sandbox when asked before it is killed outright. */
const END_GRACE_MS = 2000;

/**
 * Turns a started init into the `SandboxProcess` its caller holds: its pipes as sockets, the
 * timeout and the end (asked, then forced), and its status once it is reaped, its cgroup's
 * violations read, and its quota watch and proxy undone (the cgroup is removed right after).
 */
export function trackSandbox(
  started: StartedInit,
  argv: readonly string[],
  timeoutMs: number | undefined,
): SandboxProcess {
  const { lib, out, limits, cgroup, proxy, quota, tty, upper, overlay, upperLock } = started;
  const pid = out[OUT.pid], pidfd = out[OUT.pidfd];
  const socket = (fd: number, writable: boolean) =>
    new net.Socket({ fd, readable: !writable, writable });
  const stdin = out[OUT.stdin] >= 0 ? socket(out[OUT.stdin], true) : null;
  stdin?.on("error", () => {}); // EPIPE when the command does not read its input
  const stdout = socket(out[OUT.stdout], false);
  const stderr = socket(out[OUT.stderr], false);
  let alive = true, timedOut = false;
  let force: ReturnType<typeof setTimeout> | undefined;
  // The pidfd stays valid until we close it after reaping, so no pid-reuse race.
  const end = () => {
    if (!alive || force !== undefined) return;
    // The init kills the command, then everything else, and reaps them all — so their CPU time
    // is counted — before it exits. SIGKILL to the init follows if it has not gone by then (a
    // process stuck in the kernel, an init still in setup); that ends the pid namespace anyway.
    lib.coop_kill(pidfd, END_SIGNAL);
    // The pidfd stays valid until we close it after reaping, so no pid-reuse race; on the
    // cgroup v2 path `cgroup.kill` ends whatever is left in the sandbox's cgroup as well.
    force = setTimeout(() => {
      if (alive) lib.coop_kill(pidfd, signalNumber("SIGKILL"));
      cgroup?.kill();
    }, END_GRACE_MS);
  };
  const timer = timeoutMs === undefined ? undefined : setTimeout(() => {
    timedOut = true;
    end();
  }, timeoutMs);

  const status = waitForExit(lib, pid).then(async ({ status: waitStatus, cpu }) => {
    const rep = readReport(lib, out[OUT.report]);
    alive = false;
    clearTimeout(timer);
    clearTimeout(force);
    lib.coop_close(pidfd);
    try {
      // Before the go socket closes: a fresh overlay the init sent back to be held is on it.
      overlay?.settle(out[OUT.go], rep.setupError !== undefined);
    } finally {
      lib.coop_close(out[OUT.go]);
      tty?.closeMaster();
      syncUpperInBackground(upper);
      upperLock?.release(); // the init is reaped: its mount namespace, and the overlay, are gone
    }
    const violations = cgroup ? cgroup.violations() : { oomKilled: false, pidsLimitHit: null };
    const counted = cgroup?.cpuTime() ?? null;
    // Removed (leftovers killed first) right after the status; settleSandboxCgroups() awaits it.
    if (cgroup) removeCgroupLater(cgroup);
    const disk = quota ? await quota.finish() : null;
    // The pid namespace is gone, so every connection the sandbox made is queued at the proxy
    // with its whole request (or is already decided): decide them all before the denials are
    // read — an event still in the relay's pipe would otherwise be lost from the result.
    await proxy?.drain();
    await proxy?.close();
    if (rep.setupError) {
      throw logSetupFailure(setupFailure(rep.setupError.step, rep.setupError.errno), argv);
    }
    const decoded = decodeWaitStatus(rep.commandStatus ?? waitStatus);
    return {
      ...decoded,
      execErrno: rep.execErrno ?? null,
      hardening: rep.ready ?? { landlockAbi: 0, seccomp: false },
      timedOut,
      ...violations,
      limits,
      cpu: sandboxCpuTime(cpu, counted),
      disk,
      proxyDenials: [...(proxy?.denials ?? [])],
      proxyRefusedConnections: proxy?.refusedConnections ?? 0,
    };
  });

  const child: SandboxProcess = {
    pid,
    lib,
    limits,
    fds: { stdout: out[OUT.stdout], stderr: out[OUT.stderr] },
    stdin,
    stdout,
    stderr,
    terminal: tty?.terminal ?? null,
    status,
    kill(signal: SignalName = "SIGKILL") {
      if (signal === "SIGKILL") end();
      else if (alive) lib.coop_kill(pidfd, signalNumber(signal));
    },
  };
  quota?.watch(() => child.kill("SIGKILL"));
  return child;
}
