/**
 * The command's environment, built from an allowlist — never by filtering the gateway's,
 * so a secret added to the gateway tomorrow cannot leak into a sandbox.
 * @module
 */
import process from "node:process";
import type { SandboxPolicy } from "./policy.ts";

/** Where the workspace is mounted inside (read-write; also `$HOME` and the working directory). */
export const WORKSPACE_MOUNT = "/work";

/** The fixed part of every sandbox's environment. */
export const BASE_ENV: Readonly<Record<string, string>> = {
  PATH: "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
  HOME: WORKSPACE_MOUNT,
  USER: "root",
  TMPDIR: "/tmp",
};

/** Harmless host variables copied when set: locale, terminal, time zone. */
export const HOST_ENV_ALLOWLIST = ["LANG", "TERM", "TZ"] as const;

/** Builds `NAME=value` entries: base, then allowlisted host values, then explicit extras. */
export function buildEnvironment(
  policy: SandboxPolicy,
  extra: Record<string, string> = {},
  hostEnv: (name: string) => string | undefined = (name) => process.env[name],
): string[] {
  const env: Record<string, string> = { ...BASE_ENV };
  for (const name of [...HOST_ENV_ALLOWLIST, ...policy.envPassthrough]) {
    const value = hostEnv(name);
    if (value !== undefined && !value.includes("\0")) env[name] = value;
  }
  Object.assign(env, policy.env, extra);
  return Object.entries(env).map(([name, value]) => `${name}=${value}`);
}
