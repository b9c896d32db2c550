/**
 * Getting a delegated cgroup v2 subtree from the user's systemd instance, for a gateway that
 * is not root and not a `Delegate=yes` service: the running gateway asks its user manager, over
 * D-Bus (`busctl --user`), to start a transient scope holding itself with `Delegate=yes` —
 * the same request `systemd-run --user --scope -p Delegate=yes` makes, but for a process that
 * already runs, so nothing is re-executed. systemd then moves the gateway into the scope and
 * hands it the scope's cgroup: the gateway's own cgroup becomes writable, and the v2 path
 * (cgroup_host.ts) applies. Without systemd (no `busctl`, no user bus) it answers why not.
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { readFileSync } from "node:fs";
import process from "node:process";
import { type CgroupHost, cgroupHost, forgetCgroupHost, parseProcCgroup } from "./cgroup_host.ts";
import { isNotFound } from "./errno.ts";
import { runHostProgram } from "./host_program.ts";

const log = getLogger(["coop", "sandbox"]);

/** How a command ran (injectable: tests use a stand-in for busctl). */
export interface CommandOutcome {
  code: number;
  stderr: string;
}

/** Runs a host program; rejects with an ENOENT error (`isNotFound`) when it is not installed. */
export type RunCommand = (program: string, args: string[]) => Promise<CommandOutcome>;

/** What `delegateUserScope` did. */
export interface DelegationOutcome {
  /** The scope the gateway now runs in, or null when none was obtained. */
  scope: string | null;
  /** What happened, for logs and `coop sandbox status`. */
  detail: string;
}

/** The `busctl` arguments that put `pid` into a new delegated transient scope `unit`. */
export function startTransientScopeArgs(unit: string, pid: number): string[] {
  return [
    "--user",
    "call",
    "org.freedesktop.systemd1",
    "/org/freedesktop/systemd1",
    "org.freedesktop.systemd1.Manager",
    "StartTransientUnit",
    "ssa(sv)a(sa(sv))",
    unit,
    "fail",
    "2",
    "PIDs",
    "au",
    "1",
    String(pid),
    "Delegate",
    "b",
    "true",
    "0",
  ];
}

/**
 * Moves this process into a delegated transient scope of the user's systemd, then waits (up to
 * `waitMs`) until /proc/self/cgroup shows it there. Never throws: without systemd the outcome
 * says why, and the next best limits path applies.
 *
 * @example
 * ```ts
 * const { scope, detail } = await delegateUserScope();
 * ```
 */
export async function delegateUserScope(
  run: RunCommand = runHostProgram,
  readProcCgroup: () => string = () => readFileSync("/proc/self/cgroup", "utf8"),
  waitMs = 2000,
): Promise<DelegationOutcome> {
  const unit = `coop-${process.pid}.scope`;
  let outcome: CommandOutcome;
  try {
    outcome = await run("busctl", startTransientScopeArgs(unit, process.pid));
  } catch (error) {
    const why = isNotFound(error) ? "busctl is not installed" : String(error);
    return { scope: null, detail: `no systemd user instance to delegate a cgroup (${why})` };
  }
  if (outcome.code !== 0) {
    return {
      scope: null,
      detail: `the user's systemd refused a delegated scope: ${outcome.stderr || outcome.code}`,
    };
  }
  const deadline = Date.now() + waitMs;
  for (;;) {
    const own = parseProcCgroup(readProcCgroup()).get("") ?? "";
    if (own.endsWith(`/${unit}`)) {
      forgetCgroupHost();
      log.info("sandbox.cgroup.delegated {scope}", { scope: own });
      return { scope: own, detail: `delegated scope ${own} from the user's systemd` };
    }
    if (Date.now() > deadline) {
      return { scope: null, detail: `systemd started ${unit} but did not move the gateway in` };
    }
    await new Promise((done) => setTimeout(done, 10));
  }
}

/**
 * The host's cgroups, after asking the user's systemd for a delegated scope when that is what
 * stands between this gateway and the cgroup v2 path (not root, v2 present but not delegated).
 */
export async function cgroupHostWithDelegation(run?: RunCommand): Promise<CgroupHost> {
  const host = cgroupHost();
  if (host.v2 || (process.getuid?.() ?? 0) === 0 || !/not delegated/.test(host.v2Reason)) {
    return host;
  }
  const { detail } = await delegateUserScope(run);
  log.info("sandbox.cgroup.delegation {detail}", { detail });
  return cgroupHost();
}
