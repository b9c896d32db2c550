/**
 * `probe()`: starts a real tiny sandbox and reports what it *measured* inside — never what
 * kernel flags suggest. `coop sandbox status` and the startup banner print this. The checks
 * are in probe_isolation.ts, probe_limits.ts and probe_capture.ts.
 * @module
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { machine, tmpdir } from "node:os";
import process from "node:process";
import { detectAppArmorUserns } from "./apparmor_userns.ts";
import { SandboxError } from "./errors.ts";
import { probeForeignBackend } from "./foreign_probe.ts";
import { type HostPlatform, hostPlatform } from "./platform.ts";
import { exec } from "./exec.ts";
import { disabledLayers } from "./ffi.ts";
import { captureCheck } from "./probe_capture.ts";
import { isolationArgv, isolationChecks } from "./probe_isolation.ts";
import { limitsCheck, quotaCheck } from "./probe_limits.ts";

/** One measured capability of the sandbox. */
export interface ProbeCheck {
  /** Stable identifier, e.g. `pid-namespace`. */
  id: string;
  /** Human label. */
  label: string;
  /** True when the evidence shows the protection in force. */
  ok: boolean;
  /** What was observed inside the sandbox. */
  evidence: string;
}

/** The result of `probe()`. */
export interface ProbeReport {
  /** True when a sandbox could be started at all. */
  available: boolean;
  /** Why not, when `available` is false. */
  error?: string;
  /** Where it ran: operating system, architecture, kernel release, the invoker's uid. */
  platform: { os: string; arch: string; kernel: string; uid: number };
  /** Measured checks, in display order (empty when unavailable). */
  checks: ProbeCheck[];
  /** Wall-clock time of the probe sandbox, spawn to exit. */
  durationMs?: number;
  /** Protections the loaded library was built without (a debug build; empty normally). */
  disabledLayers?: string[];
  /** The backend that ran the probe: `linux-namespaces`, `apple-container`, `sandbox-exec`, or `none`. */
  backend?: string;
  /** Something the owner may want to change about the backend choice (e.g. a stopped service). */
  note?: string;
}

/** Options of {@link probe}. */
export interface ProbeOptions {
  /**
   * The host as the backend choice sees it (tests drive the macOS backends with fakes).
   * @ignore
   */
  platform?: HostPlatform;
}

function kernelRelease(): string {
  try {
    return readFileSync("/proc/sys/kernel/osrelease", "utf8").trim();
  } catch {
    return "unknown";
  }
}

/**
 * Runs one tiny sandbox and measures each protection from inside it.
 *
 * @example
 * ```ts
 * const report = await probe();
 * for (const c of report.checks) console.log(c.ok ? "✓" : "✗", c.label, c.evidence);
 * ```
 */
export async function probe(options: ProbeOptions = {}): Promise<ProbeReport> {
  const host = options.platform ?? hostPlatform();
  if (host.os !== "linux") return probeForeignBackend(host);
  const platform = {
    os: process.platform as string,
    arch: machine(),
    kernel: kernelRelease(),
    uid: process.getuid?.() ?? -1,
  };
  // Ubuntu's restriction explains a sandbox that cannot start; shown with its fix either way.
  const userns = detectAppArmorUserns();
  const appArmor: ProbeCheck = {
    id: "apparmor-userns",
    label: "user namespaces allowed (AppArmor)",
    ok: userns.ok,
    evidence: userns.ok ? userns.evidence : `${userns.evidence}. Fix: ${userns.fix}`,
  };
  const unavailableChecks = userns.ok ? [] : [appArmor];
  const workspace = await mkdtemp(`${tmpdir()}/coop-probe-`);
  try {
    const result = await exec({ workspace }, isolationArgv(), {
      timeoutMs: 10_000,
    });
    if (result.exitCode !== 0) {
      return {
        available: false,
        error: `the probe sandbox exited with ${result.exitCode}: ${result.stderr.trim()}`,
        platform,
        checks: unavailableChecks,
      };
    }
    const checks = isolationChecks(result);
    checks.push(appArmor);
    checks.push(await limitsCheck(workspace));
    checks.push(await quotaCheck(workspace));
    checks.push(await captureCheck(workspace));
    return {
      available: true,
      platform,
      checks,
      durationMs: result.durationMs,
      disabledLayers: await disabledLayers(),
      backend: "linux-namespaces",
    };
  } catch (error) {
    const message = error instanceof SandboxError ? error.message : String(error);
    return {
      available: false,
      error: message,
      platform,
      checks: unavailableChecks,
      backend: "linux-namespaces",
    };
  } finally {
    await rm(workspace, { recursive: true, force: true }).catch(() => {});
  }
}
