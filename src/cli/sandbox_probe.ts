/**
 * A measured sandbox probe: a real tiny sandbox reports what it proved from inside.
 * @module
 */
import { probe } from "../sandbox/mod.ts";
import { sandboxBanner } from "./banner.ts";

/** The outcome of a probe. */
export interface SandboxProbeResult {
  /** True when a real probe sandbox started and ran. */
  available: boolean;
  /** What was measured, or the error that stopped the sandbox (with the library's fix hint). */
  detail: string;
}

/** Runs a probe; injectable so tests and the check command need no real sandbox. */
export type SandboxProbe = () => Promise<SandboxProbeResult>;

/** Measures the sandbox with a real probe sandbox; the detail is the startup banner line. */
export const probeSandbox: SandboxProbe = async () => {
  const report = await probe();
  return { available: report.available, detail: sandboxBanner(report) };
};
