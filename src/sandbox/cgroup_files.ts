/**
 * What the cgroup v1 and v2 limit paths share: the interface a sandbox's start and end drive,
 * unique names for sandbox cgroups, and small readers of cgroupfs files.
 * @module
 */
import { existsSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { basename } from "node:path";
import process from "node:process";
import { openedTrampoline, type Trampoline } from "./ffi.ts";
import { signalIfSame } from "./pid_signal.ts";
import { signalNumber } from "./wait_status.ts";
import { ERRNO, errnoOf } from "./errno.ts";
import { SandboxSetupError } from "./errors.ts";
import { stepName } from "./protocol.ts";

/** Violations read from the sandbox's cgroups at teardown. */
export interface CgroupViolations {
  /** The kernel's OOM killer killed a process in the sandbox. */
  oomKilled: boolean;
  /** A fork or clone failed at pids.max (pids.events `max`); null without a pids limit. */
  pidsLimitHit: boolean | null;
}

/** CPU time a cgroup accounted, in milliseconds. */
export interface CgroupCpuTime {
  userMs: number;
  systemMs: number;
}

/** One sandbox's cgroup(s), made before its init may run and removed after it is reaped. */
export interface SandboxCgroup {
  /** The directories as `coop_start` takes them: NUL-separated, ended by an empty string. */
  attachList(): Uint8Array;
  /** The cgroup directories (one per hierarchy on v1). */
  directories(): string[];
  /** Kills every process in the cgroup now (the timeout); a no-op where the kernel cannot. */
  kill(): void;
  /** Reads OOM kills and pids-limit hits; call after the init is reaped. */
  violations(): CgroupViolations;
  /**
   * The CPU time every process that ran in the cgroup used — those the kernel reaped without
   * accounting them to a parent (whose parent ignored SIGCHLD) included; null where the cgroup
   * does not account CPU time (a v1 plan without a `cpuacct` hierarchy). Call after the init is
   * reaped, before `destroy`.
   */
  cpuTime(): CgroupCpuTime | null;
  /** Kills anything left and removes the cgroup(s). Idempotent. */
  destroy(): Promise<void>;
}

let sequence = 0;
/**
 * Tells this realm's cgroups from another's in the same process (each Worker, and each test
 * module under `deno test`, counts from 1): a clash would fail `mkdir` and the command with it.
 */
const realm = crypto.getRandomValues(new Uint32Array(1))[0].toString(36);

/** A fresh name for one sandbox's cgroup: `coop-<gateway pid>-<realm>-<n>`. */
export function sandboxCgroupName(): string {
  return `${sandboxCgroupPrefix()}${++sequence}`;
}

/**
 * What the names of this realm's sandbox cgroups start with. The pid alone is not enough to
 * tell them: another realm of this process, or a process of the same pid that died (pids are
 * reused), may have left `coop-<pid>-…` directories too.
 */
export function sandboxCgroupPrefix(): string {
  return `coop-${process.pid}-${realm}-`;
}

/** The setup step a cgroup failure is reported at (`ffi/protocol.h`). */
const CGROUP_STEP = 30;

/** A failure to prepare a sandbox's cgroups, reported at the `cgroup` step with its errno. */
export function cgroupSetupError(error: unknown, message: string): SandboxSetupError {
  return new SandboxSetupError(
    stepName(CGROUP_STEP),
    errnoOf(error),
    `${message}: ${(error as Error).message}`,
  );
}

/**
 * Writes a cgroup control file. The kernel may answer EINTR when a signal is pending — cgroup
 * v1's `memory.limit_in_bytes` checks for one while it applies the limit, and a gateway running
 * many sandboxes receives SIGCHLD all the time — so the write is tried again; nothing was changed.
 */
export function writeControl(path: string, value: string): void {
  for (let attempt = 1;; attempt++) {
    try {
      writeFileSync(path, value);
      return;
    } catch (error) {
      if (errnoOf(error) !== ERRNO.EINTR || attempt >= 100) throw error;
    }
  }
}

/**
 * Reads `key N` from a flat-keyed cgroup file (`memory.events`, `pids.events`, v1
 * `memory.oom_control`); 0 when the file or the key is absent. One read and a line scan: it
 * runs at every sandbox's end, before its status resolves.
 */
export function counter(path: string, key: string): number {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return 0;
  }
  return flatKey(text, key) ?? 0;
}

/** The integer value of `key` in the text of a flat-keyed cgroup file; undefined when absent. */
function flatKey(text: string, key: string): number | undefined {
  const prefix = `${key} `;
  for (let start = 0; start < text.length;) {
    const end = text.indexOf("\n", start);
    const stop = end === -1 ? text.length : end;
    if (text.startsWith(prefix, start)) {
      const value = Number(text.slice(start + prefix.length, stop));
      return Number.isInteger(value) ? value : undefined;
    }
    start = stop + 1;
  }
  return undefined;
}

/**
 * cgroup v2's `cpu.stat` (`user_usec`, `system_usec`: kept in every v2 cgroup, cpu controller
 * enabled or not); null when the file or its keys are absent.
 */
export function cpuStatV2(dir: string): CgroupCpuTime | null {
  let text: string;
  try {
    text = readFileSync(`${dir}/cpu.stat`, "utf8");
  } catch {
    return null;
  }
  const user = flatKey(text, "user_usec"), system = flatKey(text, "system_usec");
  return user !== undefined && system !== undefined
    ? { userMs: user / 1000, systemMs: system / 1000 }
    : null;
}

/**
 * cgroup v1's `cpuacct.usage_user` and `cpuacct.usage_sys` (nanoseconds) in `dir`, a directory
 * of a hierarchy with the cpuacct controller; null when they are absent (another hierarchy).
 */
export function cpuacctV1(dir: string): CgroupCpuTime | null {
  // Most of a plan's hierarchies have no cpuacct, asked at every sandbox's end: no failed read.
  if (!existsSync(`${dir}/cpuacct.usage_user`)) return null;
  try {
    const user = Number(readFileSync(`${dir}/cpuacct.usage_user`, "utf8").trim());
    const system = Number(readFileSync(`${dir}/cpuacct.usage_sys`, "utf8").trim());
    return Number.isFinite(user) && Number.isFinite(system)
      ? { userMs: user / 1e6, systemMs: system / 1e6 }
      : null;
  } catch {
    return null;
  }
}

/**
 * SIGKILLs every process listed in the `cgroup.procs` of the cgroup at `dir` (v1 has no
 * cgroup.kill; v2 before 5.14). Never another process: a listed one may have exited and its
 * pid been reused by the time it is signalled, so the signal goes through a pidfd, and only if
 * /proc still shows that process in this cgroup once the pidfd is open. Nothing to do before
 * the sandbox library is open: no sandbox has run in the cgroup then.
 */
export function killAll(dir: string, lib: Trampoline | undefined = openedTrampoline()): void {
  let text = "";
  try {
    text = readFileSync(`${dir}/cgroup.procs`, "utf8");
  } catch {
    return;
  }
  if (!lib) return;
  const name = basename(dir);
  for (const pid of text.split("\n").filter(Boolean).map(Number)) {
    signalIfSame(lib, pid, () => inCgroupNamed(pid, name), signalNumber("SIGKILL"));
  }
}

/** Whether /proc lists `pid` in a cgroup whose directory is called `name` (any hierarchy). */
function inCgroupNamed(pid: number, name: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cgroup`, "utf8").split("\n")
      .some((line) => line.endsWith(`/${name}`));
  } catch {
    return false; // gone
  }
}

/**
 * Removes an emptied cgroup directory, calling `kill` and retrying while tasks are still
 * leaving it (a killed task leaves once the kernel finishes its exit; that is quick).
 */
export async function removeCgroupDir(dir: string, kill: () => void): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      rmdirSync(dir);
      return;
    } catch (error) {
      if (errnoOf(error) === ERRNO.ENOENT) return;
      kill();
      if (attempt === 49) {
        throw new Error(`cannot remove the sandbox cgroup ${dir}: ${(error as Error).message}`);
      }
      await new Promise((done) => setTimeout(done, 2));
    }
  }
}
