/**
 * `coop sandbox status|test|exec|ps|stop|reset|clean`: the sandbox from the command line,
 * exactly as a non-owner gets it. `exec` is in sandbox_exec_command.ts.
 * @module
 */
import { parseArgs } from "node:util";
import {
  cgroupHostWithDelegation,
  lastSelfTest,
  probe,
  type ProbeReport,
  selfTest,
  type SelfTestResult,
} from "../sandbox/mod.ts";
import { callerPath } from "./caller_path.ts";
import { printStdout } from "./stdout.ts";
import { UsageError } from "./usage_error.ts";
import {
  liveSessionsForStatus,
  psCommand,
  renderLiveSandboxes,
  stopCommand,
} from "./sandbox_sessions_command.ts";
import { DEFAULT_CONFIG_FILE } from "./check_command.ts";
import { sandboxCleanCommand, sandboxResetCommand } from "./sandbox_reset_command.ts";
import { renderEnvironments, statusEnvironments } from "./sandbox_environments_status.ts";
import { sandboxExecCommand } from "./sandbox_exec_command.ts";

/** The human `coop sandbox status`: one ✓/✗ line per measured check, or why it is unavailable. */
export function renderStatus(report: ProbeReport): string {
  const p = report.platform;
  const backend = report.backend ? `, backend ${report.backend}` : "";
  const lines = [
    `Coop sandbox: ${p.os} ${p.arch}, kernel ${p.kernel}, invoked as uid ${p.uid}${backend}`,
  ];
  if (report.note) lines.push(`  note: ${report.note}`);
  if (!report.available) {
    lines.push(`  ✗ unavailable: ${report.error}`);
    for (const check of report.checks) lines.push(`  ✗ ${check.label}: ${check.evidence}`);
    lines.push("  Non-owner commands will be refused (fail closed).");
    return lines.join("\n") + "\n";
  }
  if (report.disabledLayers?.length) {
    lines.push(`  ⚠ DEBUG LIBRARY built without: ${report.disabledLayers.join(", ")}`);
  }
  const width = Math.max(...report.checks.map((c) => c.label.length));
  for (const check of report.checks) {
    lines.push(`  ${check.ok ? "✓" : "✗"} ${check.label.padEnd(width)}  ${check.evidence}`);
  }
  lines.push(`  measured in a probe sandbox that took ${report.durationMs?.toFixed(1)} ms`);
  return lines.join("\n") + "\n";
}

function renderLastSelfTest(last: SelfTestResult | undefined): string {
  if (!last) return "  self-test: never run with this sandbox library (coop sandbox test)\n";
  const failed = last.checks.filter((c) => !c.ok).map((c) => c.id);
  const verdict = last.passed
    ? "passed"
    : `FAILED${failed.length ? `: ${failed.join(", ")}` : `: ${last.error}`}`;
  return `  last self-test (${last.at}): ${verdict}\n`;
}

async function statusCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { json: { type: "boolean" }, config: { type: "string" } },
    strict: true,
  });
  await cgroupHostWithDelegation();
  const report = await probe();
  const last = await lastSelfTest();
  const live = await liveSessionsForStatus(callerPath(values.config ?? DEFAULT_CONFIG_FILE));
  const environments = await statusEnvironments(values.config);
  const status = { ...report, lastSelfTest: last ?? null, environments, liveSessions: live };
  printStdout(
    values.json
      ? JSON.stringify(status, null, 2) + "\n"
      : renderStatus(report) + renderLastSelfTest(last) + renderEnvironments(environments) +
        (live ? `  live sessions:\n${renderLiveSandboxes(live).replace(/^/gm, "    ")}` : ""),
  );
  return report.available ? 0 : 1;
}

async function testCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { json: { type: "boolean" } }, strict: true });
  const result = await selfTest();
  if (values.json) {
    printStdout(JSON.stringify(result, null, 2) + "\n");
  } else {
    if (result.error) printStdout(`  ✗ the sandbox could not start: ${result.error}\n`);
    for (const check of result.checks) {
      printStdout(`  ${check.ok ? "✓" : "✗ ESCAPE"} ${check.name} — ${check.detail}\n`);
    }
    printStdout(result.passed ? "sandbox self-test passed\n" : "sandbox self-test FAILED\n");
  }
  return result.passed ? 0 : 1;
}

/** Dispatches `coop sandbox <sub>`; returns the process exit status. */
export function sandboxCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === "status") return statusCommand(rest);
  if (sub === "exec") return sandboxExecCommand(rest);
  if (sub === "test") return testCommand(rest);
  if (sub === "ps") return psCommand(rest);
  if (sub === "stop") return stopCommand(rest);
  if (sub === "reset") return sandboxResetCommand(rest);
  if (sub === "clean") return sandboxCleanCommand(rest);
  throw new UsageError(
    sub
      ? `unknown sandbox command "${sub}"`
      : "sandbox needs a command: status, test, exec, ps, stop, reset, clean",
  );
}
