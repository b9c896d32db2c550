/**
 * The cgroup v1 limits path, gateway side: one cgroup per sandbox in each needed hierarchy,
 * below the gateway's own cgroup (so the gateway's own limits still bound it). They are made
 * and given their limits before clone; `ffi/cgroup.c` moves the init in before it may run;
 * after the init is reaped, leftovers are killed, violations read and the cgroups removed.
 * @module
 */
import { mkdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from "node:fs";
import process from "node:process";
import { SandboxSetupError } from "./errors.ts";
import type { CgroupV1Dir } from "./limits.ts";
import { ERRNO } from "./errno.ts";
import { stepName } from "./protocol.ts";

const STEP_CGROUP = 30;

let sequence = 0;
/**
 * Tells this realm's cgroups from another's in the same process (each Worker, and each test
 * module under `deno test`, counts from 1): a clash would fail `mkdir` and the command with it.
 */
const realm = crypto.getRandomValues(new Uint32Array(1))[0].toString(36);

/** Violations read from the sandbox's cgroups at teardown. */
export interface CgroupViolations {
  /** The kernel's OOM killer killed a process in the sandbox (memory.oom_control oom_kill). */
  oomKilled: boolean;
  /** A fork or clone failed at pids.max (pids.events `max`); null without a pids cgroup. */
  pidsLimitHit: boolean | null;
}

function errnoOf(error: unknown): number {
  const code = (error as { code?: string }).code ?? "";
  return ERRNO[code] ?? 5; // EIO when the runtime does not say
}

/** One sandbox's cgroups. */
export class CgroupV1Sandbox {
  /** Directories, one per controller. */
  readonly dirs: Map<string, string>;

  private constructor(dirs: Map<string, string>) {
    this.dirs = dirs;
  }

  /**
   * Makes the cgroups and writes their limits; on any failure removes what it made and
   * throws SandboxSetupError at the `cgroup` step (fail closed: no limit, no sandbox).
   */
  static create(plan: readonly CgroupV1Dir[]): CgroupV1Sandbox {
    const name = `coop-${process.pid}-${realm}-${++sequence}`;
    const made = new CgroupV1Sandbox(new Map());
    try {
      for (const entry of plan) {
        const dir = `${entry.parent}/${name}`;
        mkdirSync(dir);
        made.dirs.set(entry.controller, dir);
        for (const [file, value] of entry.files) {
          if (file === "memory.memsw.limit_in_bytes" && !exists(`${dir}/${file}`)) continue;
          writeFileSync(`${dir}/${file}`, value);
        }
      }
    } catch (error) {
      for (const dir of made.dirs.values()) rmdirSync(dir); // empty: nothing joined yet
      throw new SandboxSetupError(
        stepName(STEP_CGROUP),
        errnoOf(error),
        `cannot prepare the sandbox's cgroup v1 limits: ${(error as Error).message}`,
      );
    }
    return made;
  }

  /** The directories as `coop_start` takes them: NUL-separated, ended by an empty string. */
  attachList(): Uint8Array {
    return new TextEncoder().encode([...this.dirs.values()].map((d) => `${d}\0`).join("") + "\0");
  }

  /** Reads OOM kills and pids-limit hits; call after the init is reaped. */
  violations(): CgroupViolations {
    const memory = this.dirs.get("memory");
    const pids = this.dirs.get("pids");
    const oomKills = memory ? counter(`${memory}/memory.oom_control`, "oom_kill") : 0;
    return {
      oomKilled: oomKills > 0,
      pidsLimitHit: pids ? counter(`${pids}/pids.events`, "max") > 0 : null,
    };
  }

  /** Kills anything left (v1 has no cgroup.kill) and removes the cgroups. Idempotent. */
  async destroy(): Promise<void> {
    for (const [controller, dir] of this.dirs) {
      for (let attempt = 0; attempt < 50; attempt++) {
        try {
          rmdirSync(dir);
          break;
        } catch (error) {
          if (errnoOf(error) === ERRNO.ENOENT) break;
          killAll(`${dir}/cgroup.procs`);
          if (attempt === 49) {
            throw new Error(`cannot remove the sandbox cgroup ${dir}: ${(error as Error).message}`);
          }
          // A killed task leaves its cgroup once the kernel finishes its exit; that is quick.
          await new Promise((done) => setTimeout(done, 2));
        }
      }
      this.dirs.delete(controller);
    }
  }
}

function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Reads `key N` from a flat-keyed cgroup file; 0 when absent. */
function counter(path: string, key: string): number {
  try {
    const text = readFileSync(path, "utf8");
    const match = new RegExp(`^${key} (\\d+)$`, "m").exec(text);
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

function killAll(procs: string): void {
  let text = "";
  try {
    text = readFileSync(procs, "utf8");
  } catch {
    return;
  }
  for (const pid of text.split("\n").filter(Boolean)) {
    try {
      process.kill(Number(pid), "SIGKILL");
    } catch {
      // already gone
    }
  }
}
