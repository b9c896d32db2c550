/**
 * A measured sandbox probe: run `true` in a real sandbox and report what happened.
 * @module
 */
import { exec } from "../sandbox/mod.ts";

/** The outcome of a probe. */
export interface SandboxProbeResult {
  /** True when a real sandbox started and `true` exited 0. */
  available: boolean;
  /** What was measured, or the error that stopped the sandbox (with the library's fix hint). */
  detail: string;
}

/** Runs a probe; injectable so tests and the check command need no real sandbox. */
export type SandboxProbe = () => Promise<SandboxProbeResult>;

/** Starts a tiny sandbox in a fresh temporary workspace and runs `true` in it. */
export const probeSandbox: SandboxProbe = async () => {
  const workspace = await Deno.makeTempDir({ prefix: "coop-probe-" });
  try {
    const result = await exec({ workspace }, ["true"], { timeoutMs: 10_000 });
    if (result.exitCode === 0) {
      return {
        available: true,
        detail: `started and ran \`true\` in ${Math.round(result.durationMs)} ms`,
      };
    }
    return {
      available: false,
      detail: `\`true\` exited ${result.exitCode} in the sandbox: ${result.stderr.trim()}`,
    };
  } catch (error) {
    return { available: false, detail: error instanceof Error ? error.message : String(error) };
  } finally {
    await Deno.remove(workspace, { recursive: true }).catch(() => {});
  }
};
