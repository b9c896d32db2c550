/**
 * The cgroup a sandbox's limit plan asks for: v2, v1, or none (the rlimit path).
 * @module
 */
import { type SandboxCgroup, writeControl } from "./cgroup_files.ts";
import { CgroupV1Sandbox } from "./cgroup_v1.ts";
import { CgroupV2Sandbox } from "./cgroup_v2.ts";
import type { LimitPlan } from "./limits.ts";

/** Makes the plan's cgroup(s) with their limits; null on the rlimit path. Throws SandboxSetupError. */
export function sandboxCgroup(plan: LimitPlan): SandboxCgroup | null {
  if (plan.cgroupV2) return CgroupV2Sandbox.create(plan.cgroupV2);
  if (plan.cgroupV1) return CgroupV1Sandbox.create(plan.cgroupV1);
  return null;
}

/**
 * What makes two plans' cgroups interchangeable — hierarchy, parents, files and values — as
 * a string; "" on the rlimit path (no cgroup).
 */
export function cgroupPlanKey(plan: LimitPlan): string {
  if (plan.cgroupV2) return `v2:${JSON.stringify(plan.cgroupV2)}`;
  if (plan.cgroupV1) return `v1:${JSON.stringify(plan.cgroupV1)}`;
  return "";
}

/**
 * The hierarchies a plan's cgroups are in: "v2", or "v1:" and the controllers; "" without
 * cgroups. Moving a process into a plan's cgroups takes it out of its former ones only where
 * the hierarchies are the same (a v1 process stays in its memory cgroup when moved into a
 * pids cgroup).
 */
export function cgroupHierarchies(plan: LimitPlan): string {
  if (plan.cgroupV2) return "v2";
  if (plan.cgroupV1) return `v1:${plan.cgroupV1.map((dir) => dir.controller).join(",")}`;
  return "";
}

/**
 * Moves a process into the cgroup(s), as `ffi/cgroup.c` does for a starting init: used for an
 * idle init that has not run anything yet (it is the caller's unreaped child, so its pid
 * cannot have been reused). Throws the write's error.
 */
export function moveIntoCgroup(cgroup: SandboxCgroup, pid: number): void {
  for (const dir of cgroup.directories()) writeControl(`${dir}/cgroup.procs`, String(pid));
}
