/**
 * The cgroup v2 limits path, gateway side: one cgroup per sandbox directly below the delegated
 * subtree (the gateway's own cgroup), with `memory.max`, `memory.swap.max`, `pids.max` and
 * `cpu.max`. Made and limited before the go byte; `ffi/cgroup.c` moves the init in while it is
 * still blocked (as on v1: a prestarted init was cloned before its policy was known);
 * `cgroup.kill` ends it at the timeout and at teardown; `memory.events` and `pids.events` say
 * what was hit; then the directory is removed.
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { existsSync, mkdirSync, readFileSync, rmdirSync } from "node:fs";
import {
  type CgroupCpuTime,
  cgroupSetupError,
  type CgroupViolations,
  counter,
  cpuStatV2,
  killAll,
  removeCgroupDir,
  type SandboxCgroup,
  sandboxCgroupName,
  writeControl,
} from "./cgroup_files.ts";
import { ERRNO, errnoOf } from "./errno.ts";
import type { CgroupV2Dir } from "./limits.ts";

const log = getLogger(["coop", "sandbox"]);

/** Where the gateway's own processes go when its cgroup must give controllers to children. */
export const GATEWAY_LEAF = "coop-gateway";

/** Files absent without swap accounting; then the memory limit alone bounds RAM. */
const OPTIONAL_FILES = new Set(["memory.swap.max"]);

/** Parents whose subtree_control already enables what a sandbox needs (once per process). */
const prepared = new Map<string, Set<string>>();

/**
 * Enables `controllers` for the children of `parent` (its `cgroup.subtree_control`). The
 * kernel refuses that (EBUSY) while `parent` itself holds processes — "no internal processes",
 * cgroups(7) — unless it is the root: then they are moved into the leaf `coop-gateway` first,
 * which is what systemd's documentation asks of a delegatee. Throws the underlying error.
 */
export function enableControllers(parent: string, controllers: readonly string[]): void {
  const done = prepared.get(parent) ?? new Set<string>();
  const needed = controllers.filter((c) => !done.has(c));
  if (needed.length === 0) return;
  const control = `${parent}/cgroup.subtree_control`;
  const enabled = readFileSync(control, "utf8").trim().split(/\s+/);
  const missing = needed.filter((c) => !enabled.includes(c));
  if (missing.length) {
    const request = missing.map((c) => `+${c}`).join(" ");
    try {
      writeControl(control, request);
    } catch (error) {
      if (errnoOf(error) !== ERRNO.EBUSY) throw error;
      moveProcessesToLeaf(parent);
      writeControl(control, request);
    }
  }
  prepared.set(parent, new Set([...done, ...needed]));
}

function moveProcessesToLeaf(parent: string): void {
  const leaf = `${parent}/${GATEWAY_LEAF}`;
  if (!existsSync(leaf)) mkdirSync(leaf);
  const pids = readFileSync(`${parent}/cgroup.procs`, "utf8").split("\n").filter(Boolean);
  for (const pid of pids) {
    try {
      writeControl(`${leaf}/cgroup.procs`, pid);
    } catch (error) {
      if (errnoOf(error) !== ERRNO.ESRCH) throw error; // it exited meanwhile
    }
  }
  log.info("sandbox.cgroup.leaf {leaf}: moved {count} process(es) out of {parent}", {
    leaf,
    parent,
    count: pids.length,
  });
}

/** One sandbox's cgroup v2 directory. */
export class CgroupV2Sandbox implements SandboxCgroup {
  /** The sandbox's cgroup directory. */
  readonly dir: string;
  /** Whether the plan set `pids.max` (else pids.events says nothing about a limit). */
  readonly #pidsLimited: boolean;
  #removed = false;

  private constructor(dir: string, pidsLimited: boolean) {
    this.dir = dir;
    this.#pidsLimited = pidsLimited;
  }

  /**
   * Enables the controllers in the parent, makes the cgroup and writes its limits; on any
   * failure removes what it made and throws SandboxSetupError at the `cgroup` step (fail
   * closed: no limit, no sandbox).
   */
  static create(plan: CgroupV2Dir): CgroupV2Sandbox {
    const dir = `${plan.parent}/${sandboxCgroupName()}`;
    let made = false;
    try {
      enableControllers(plan.parent, plan.controllers);
      mkdirSync(dir);
      made = true;
      for (const [file, value] of plan.files) {
        if (OPTIONAL_FILES.has(file) && !existsSync(`${dir}/${file}`)) continue;
        writeControl(`${dir}/${file}`, value);
      }
    } catch (error) {
      if (made) rmdirSync(dir); // empty: nothing joined yet
      throw cgroupSetupError(
        error,
        `cannot prepare the sandbox's cgroup v2 limits in ${plan.parent}`,
      );
    }
    return new CgroupV2Sandbox(dir, plan.files.some(([file]) => file === "pids.max"));
  }

  /** The directory as `coop_start` takes it: NUL-terminated, then an empty string. */
  attachList(): Uint8Array {
    return new TextEncoder().encode(`${this.dir}\0\0`);
  }

  /** The one directory (until it is removed). */
  directories(): string[] {
    return this.#removed ? [] : [this.dir];
  }

  /** Kills every process in the cgroup at once (`cgroup.kill`, Linux 5.14+). */
  kill(): void {
    if (this.#removed) return;
    try {
      writeControl(`${this.dir}/cgroup.kill`, "1");
    } catch {
      // Before 5.14 there is no cgroup.kill: signal each listed process instead.
      killAll(this.dir);
    }
  }

  /** Reads OOM kills (`memory.events`) and pids-limit hits (`pids.events`). */
  violations(): CgroupViolations {
    return {
      oomKilled: counter(`${this.dir}/memory.events`, "oom_kill") > 0,
      pidsLimitHit: this.#pidsLimited ? counter(`${this.dir}/pids.events`, "max") > 0 : null,
    };
  }

  /** Every process's CPU time (`cpu.stat`, kept whether or not the cpu controller is enabled). */
  cpuTime(): CgroupCpuTime | null {
    return this.#removed ? null : cpuStatV2(this.dir);
  }

  /** Kills anything left (`cgroup.kill`) and removes the cgroup. Idempotent. */
  async destroy(): Promise<void> {
    if (this.#removed) return;
    await removeCgroupDir(this.dir, () => this.kill());
    this.#removed = true;
  }
}
