/**
 * `SandboxPolicy`: what one sandboxed command may see and use. Validated once, then trusted.
 * @module
 */
import { z } from "zod";
import { SandboxPolicyError } from "./errors.ts";

/** Network modes the Linux sandbox implements. */
export const NETWORK_MODES = ["none", "host"] as const;
/** `none`: an empty network namespace (only `lo`); `host`: the host's network (owner opt-in). */
export type NetworkMode = (typeof NETWORK_MODES)[number];

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const HOSTNAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

const policySchema = z.strictObject({
  workspace: z.string().min(1).refine((p) => p.startsWith("/"), "must be an absolute path"),
  network: z.enum(NETWORK_MODES).default("none"),
  hostname: z.string().regex(HOSTNAME, "must be a lowercase DNS label").default("coop"),
  tmpSizeBytes: z.number().int().min(1 << 20).max(64 * 2 ** 30).default(64 * 2 ** 20),
  readOnlyPaths: z.array(
    z.string().refine((p) => p.startsWith("/") && !p.split("/").includes(".."), {
      message: "must be an absolute path without ..",
    }),
  ).default([]),
  env: z.record(
    z.string().regex(ENV_NAME, "must be an environment variable name"),
    z.string().refine((v) => !v.includes("\0"), "must not contain NUL"),
  ).default({}),
  envPassthrough: z.array(z.string().regex(ENV_NAME, "must be an environment variable name"))
    .default([]),
  sandboxUid: z.number().int().min(1).max(2 ** 32 - 2).default(65534),
  sandboxGid: z.number().int().min(1).max(2 ** 32 - 2).default(65534),
});

/** A validated sandbox policy, every field present. */
export type SandboxPolicy = z.output<typeof policySchema>;
/** What callers write: only `workspace` is required. */
export type SandboxPolicyInput = z.input<typeof policySchema>;

/**
 * Validates a policy and fills in defaults.
 *
 * @example
 * ```ts
 * const policy = resolvePolicy({ workspace: "/home/me/agent/bob" });
 * ```
 */
export function resolvePolicy(input: SandboxPolicyInput): SandboxPolicy {
  const result = policySchema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = issue.path.length ? issue.path.join(".") : "(policy)";
  throw new SandboxPolicyError(`invalid sandbox policy: ${path}: ${issue.message}`);
}
