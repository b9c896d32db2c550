/**
 * Puts a user's environment into their sandbox policy, and warns the owner (once per base)
 * when a base was built from an older Coopfile than the one configured.
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type { SandboxPolicyInput } from "../sandbox/mod.ts";
import type { EnvironmentMounts } from "../environments/environment_mounts.ts";
import type { EnvironmentState } from "../environments/environment_state.ts";

const log = getLogger(["coop", "environments"]);

/** Bases already warned about (`<path>\0<manifest hash>`): one log line each, not one per call. */
const warned = new Set<string>();

/** Logs `environment.stale` once per base when the Coopfile changed since `coop init`. */
export function warnIfStale(environment: EnvironmentState): void {
  if (!environment.stale || environment.manifest === null) return;
  const key = `${environment.coopfilePath}\0${environment.manifest.hash}`;
  if (warned.has(key)) return;
  warned.add(key);
  log.warn(
    "environment {coopfile} changed since its base was built ({builtAt}); the owner runs " +
      "`coop rebuild` to apply it",
    {
      event: "environment.stale",
      coopfile: environment.coopfilePath,
      builtAt: environment.manifest.builtAt,
    },
  );
}

/** `policy` with the environment's overlay root, persist binds and variables. */
export function withEnvironment(
  policy: SandboxPolicyInput,
  mounts: EnvironmentMounts,
): SandboxPolicyInput {
  return {
    ...policy,
    rootfs: mounts.rootfs,
    persist: mounts.persist,
    env: { ...policy.env, ...mounts.env },
  };
}
