/**
 * The cgroup v1 limits path, gateway side: one cgroup per sandbox in each needed hierarchy,
 * below the gateway's own cgroup (so the gateway's own limits still bound it). They are made
 * and given their limits before clone; `ffi/cgroup.c` moves the init in before it may run;
 * after the init is reaped, leftovers are killed, violations read and the cgroups removed.
 * @module
 */
import { existsSync, mkdirSync, rmdirSync } from "node:fs";
import {
  type CgroupCpuTime,
  cgroupSetupError,
  type CgroupViolations,
  counter,
  cpuacctV1,
  killAll,
  removeCgroupDir,
  type SandboxCgroup,
  sandboxCgroupName,
  writeControl,
} from "./cgroup_files.ts";
import type { CgroupV1Dir } from "./limits.ts";

/** One sandbox's cgroups. */
export class CgroupV1Sandbox implements SandboxCgroup {
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
    const name = sandboxCgroupName();
    const made = new CgroupV1Sandbox(new Map());
    try {
      for (const entry of plan) {
        const dir = `${entry.parent}/${name}`;
        mkdirSync(dir);
        made.dirs.set(entry.controller, dir);
        for (const [file, value] of entry.files) {
          if (file === "memory.memsw.limit_in_bytes" && !existsSync(`${dir}/${file}`)) continue;
          writeControl(`${dir}/${file}`, value);
        }
      }
    } catch (error) {
      for (const dir of made.dirs.values()) rmdirSync(dir); // empty: nothing joined yet
      throw cgroupSetupError(error, "cannot prepare the sandbox's cgroup v1 limits");
    }
    return made;
  }

  /** The directories as `coop_start` takes them: NUL-separated, ended by an empty string. */
  attachList(): Uint8Array {
    return new TextEncoder().encode([...this.dirs.values()].map((d) => `${d}\0`).join("") + "\0");
  }

  /** The directories, one per hierarchy. */
  directories(): string[] {
    return [...this.dirs.values()];
  }

  /** v1 has no cgroup.kill; the timeout's SIGKILL to the init ends the pid namespace. */
  kill(): void {}

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

  /**
   * Every process's CPU time, from whichever of the directories is in a hierarchy with the
   * cpuacct controller (`cpu,cpuacct` are mounted together on most v1 hosts, so a `cpus` limit
   * brings one); null without one.
   */
  cpuTime(): CgroupCpuTime | null {
    for (const dir of this.dirs.values()) {
      const counted = cpuacctV1(dir);
      if (counted) return counted;
    }
    return null;
  }

  /** Kills anything left (v1 has no cgroup.kill) and removes the cgroups. Idempotent. */
  async destroy(): Promise<void> {
    for (const [controller, dir] of this.dirs) {
      await removeCgroupDir(dir, () => killAll(dir));
      this.dirs.delete(controller);
    }
  }
}
