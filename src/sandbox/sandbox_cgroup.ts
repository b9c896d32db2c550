/**
 * The cgroup a sandbox's limit plan asks for: v2, v1, or none (the rlimit path).
 * @module
 */
import type { SandboxCgroup } from "./cgroup_files.ts";
import { CgroupV1Sandbox } from "./cgroup_v1.ts";
import { CgroupV2Sandbox } from "./cgroup_v2.ts";
import type { LimitPlan } from "./limits.ts";

/** Makes the plan's cgroup(s) with their limits; null on the rlimit path. Throws SandboxSetupError. */
export function sandboxCgroup(plan: LimitPlan): SandboxCgroup | null {
  if (plan.cgroupV2) return CgroupV2Sandbox.create(plan.cgroupV2);
  if (plan.cgroupV1) return CgroupV1Sandbox.create(plan.cgroupV1);
  return null;
}
