/**
 * The command's environment, built from an allowlist — never by filtering the gateway's,
 * so a secret added to the gateway tomorrow cannot leak into a sandbox.
 * @module
 */
import process from "node:process";
import type { SandboxPolicy } from "./policy.ts";

/** Where the workspace is mounted inside (read-write; also `$HOME` and the working directory). */
export const WORKSPACE_MOUNT = "/work";

/**
 * Directories in the workspace that lead `PATH`: a program the sandbox downloads or builds
 * once into one of them (`/work/bin`, …) is found by name in every later command and session,
 * since the workspace is all that persists. They come first on purpose: the workspace is the
 * sandbox's own, so shadowing a system program there only affects the sandbox itself.
 */
export const WORKSPACE_TOOL_DIRS = [
  `${WORKSPACE_MOUNT}/tools`,
  `${WORKSPACE_MOUNT}/bin`,
  `${WORKSPACE_MOUNT}/.local/bin`,
] as const;

/** `PATH` inside every sandbox: the workspace's tool directories, then the system's. */
export const TOOL_PATH = [
  ...WORKSPACE_TOOL_DIRS,
  "/usr/local/bin",
  "/usr/bin",
  "/bin",
  "/usr/local/sbin",
  "/usr/sbin",
  "/sbin",
].join(":");

/** The fixed part of every sandbox's environment. */
export const BASE_ENV: Readonly<Record<string, string>> = {
  PATH: TOOL_PATH,
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
