/**
 * Shared pieces of the sandbox integration tests. They run only with COOP_SANDBOX_TEST=1
 * (scripts/test.sh sets it), as root and as an unprivileged user in CI; when skipped, Deno
 * reports them as ignored, never as passed.
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exec, type ExecOptions, type ExecResult } from "../../src/sandbox/mod.ts";
import { PROXY_DIR_LOCK } from "../../src/sandbox/proxy/socket_dir.ts";
import { parseCgroupMounts, parseProcCgroup } from "../../src/sandbox/cgroup_host.ts";

/** True when the sandbox integration tests should run. */
export const SANDBOX_TESTS = Deno.env.get("COOP_SANDBOX_TEST") === "1";

/**
 * strace, with which a few tests hold a process at a syscall (`-e inject=…:delay_enter=`) to
 * open a race's window; without it those tests are skipped (CI installs it: `.ci/run`).
 */
export const STRACE = ["/usr/bin/strace", "/bin/strace"].find((path) => {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
});

/** What a fixture run under `withSetsidHeld` printed, with its exit code and strace's trace. */
export interface HeldRun {
  code: number;
  stdout: string;
  stderr: string;
  trace: string;
}

/**
 * Runs `tests/fixtures/<fixture>` with `args` under strace, which holds every setsid() of it and
 * its sandboxes `delayMs` (a race's window kept open). With `ownGroup`, in a process group of its
 * own (`setsid`), so that it may signal its group without reaching the test runner. Needs STRACE.
 */
export async function withSetsidHeld(
  fixture: string,
  args: string[],
  delayMs: number,
  ownGroup = false,
): Promise<HeldRun> {
  const path = new URL(`../fixtures/${fixture}`, import.meta.url).pathname;
  const trace = await Deno.makeTempFile({ prefix: "coop-setsid-trace-" });
  try {
    const strace = [
      ...[STRACE!, "-f", "--seccomp-bpf", "-o", trace, "-e", "trace=setsid"],
      ...["-e", `inject=setsid:delay_enter=${delayMs * 1000}`],
      ...[Deno.execPath(), "run", "--allow-all", "--quiet", path, ...args],
    ];
    const [program, ...rest] = ownGroup ? ["setsid", ...strace] : strace;
    const out = await new Deno.Command(program, { args: rest, stdin: "null" }).output();
    const text = new TextDecoder();
    return {
      code: out.code,
      stdout: text.decode(out.stdout),
      stderr: text.decode(out.stderr),
      trace: await Deno.readTextFile(trace),
    };
  } finally {
    await Deno.remove(trace);
  }
}

/** Declares a sandbox integration test. */
export function sandboxTest(
  nameOrOptions: string | { name: string; ignore?: boolean },
  fn: () => Promise<void>,
): void {
  const { name, ignore = false } = typeof nameOrOptions === "string"
    ? { name: nameOrOptions }
    : nameOrOptions;
  Deno.test({
    name,
    ignore: !SANDBOX_TESTS || ignore,
    // node:net sockets over raw fds and the SIGCHLD listener are this library's own
    // resources; the fd/thread/zombie leak test checks them for real.
    sanitizeResources: false,
    sanitizeOps: false,
    fn,
  });
}

/** Creates a fresh workspace directory and removes it afterwards. */
export async function withWorkspace<T>(fn: (workspace: string) => Promise<T>): Promise<T> {
  const workspace = await Deno.makeTempDir({ prefix: "coop-test-ws-" });
  try {
    return await fn(workspace);
  } finally {
    await Deno.remove(workspace, { recursive: true }).catch(() => {});
  }
}

/**
 * Runs the Deno script `script` with `args` (and `env` added) as another process; resolves once
 * it printed its first line, with that line (trimmed).
 */
export async function startScript(
  script: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ process: Deno.ChildProcess; first: string }> {
  const process = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--no-prompt", script, ...args],
    env,
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = process.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) break;
    text += value;
  }
  reader.releaseLock();
  return { process, first: text.trim() };
}

/** Runs a shell script in a fresh sandbox with a fresh workspace. */
export function sh(script: string, options: ExecOptions = {}): Promise<ExecResult> {
  return withWorkspace((workspace) => exec({ workspace }, ["sh", "-c", script], options));
}

/** Host processes whose command line contains `marker`. */
export function hostProcessesWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).replaceAll("\0", " ");
      if (cmdline.includes(marker)) found.push(Number(entry.name));
    } catch {
      // exited while we looked
    }
  }
  return found;
}

/**
 * A `sleep` command to find with `hostProcessesWith`: `seconds` and six random decimals, always
 * six, so that no other test's marker (one left running by a failed test) contains it.
 */
export function markedSleep(seconds: number): string {
  return `sleep ${seconds}.${String(Math.floor(Math.random() * 1e6)).padStart(6, "0")}`;
}

/** Polls `condition` every 20 ms for up to `ms`; returns whether it became true. */
export async function until(condition: () => boolean, ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (performance.now() < deadline) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return condition();
}

/** Open fds and threads of this process: cheap enough to sample while a sandbox runs. */
export function fdsAndThreads(): { fds: number; threads: number } {
  const fds = [...Deno.readDirSync("/proc/self/fd")].length;
  const status = Deno.readTextFileSync("/proc/self/status");
  const threads = Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? -1);
  return { fds, threads };
}

/** Threads of this process that the proxy's relay (ffi/relay.c) started. */
export function relayThreads(): number {
  return [...Deno.readDirSync("/proc/self/task")].filter((task) => {
    try {
      return Deno.readTextFileSync(`/proc/self/task/${task.name}/comm`).trim() === "coop-relay";
    } catch {
      return false; // exited while we looked
    }
  }).length;
}

/**
 * Waits up to `ms` for exactly `count` relay threads: a thread `close()` joined stays listed in
 * /proc/self/task for a moment after pthread_join returns, until the kernel releases it.
 */
export function relayThreadsSettleAt(count: number, ms = 2000): Promise<boolean> {
  return until(() => relayThreads() === count, ms);
}

/**
 * The policy proxies' socket directories in `parent` (default: the temporary directory) that this
 * process holds now: its pid is in their lock file (src/sandbox/proxy/socket_dir.ts), so what
 * other processes' proxies make or remove meanwhile (another test run, a gateway) does not count.
 */
export function ownProxyDirs(parent: string = tmpdir()): string[] {
  return readdirSync(parent).filter((name) => {
    if (!name.startsWith("coop-proxy-")) return false;
    try {
      return readFileSync(join(parent, name, PROXY_DIR_LOCK), "utf8").trim() === String(Deno.pid);
    } catch {
      return false; // another user's, an older layout's, or removed while we looked
    }
  });
}

/** Open fds, threads and zombie children of this process. */
export function processFootprint(): { fds: number; threads: number; zombies: number } {
  const { fds, threads } = fdsAndThreads();
  let zombies = 0;
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] === "Z" && Number(fields[1]) === Deno.pid) zombies++;
    } catch {
      // exited while we looked
    }
  }
  return { fds, threads, zombies };
}

/** This process's own cgroup v2 directory, or null when no cgroup2 hierarchy is mounted. */
export function ownV2Dir(): string | null {
  const mount = parseCgroupMounts(Deno.readTextFileSync("/proc/self/mountinfo"))
    .find((m) => m.fstype === "cgroup2");
  const path = parseProcCgroup(Deno.readTextFileSync("/proc/self/cgroup")).get("");
  if (!mount || path === undefined || mount.root !== "/") return null;
  return `${mount.point}${path === "/" ? "" : path}`;
}
