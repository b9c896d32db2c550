/**
 * `coop check [--config FILE] [--json]`: validate config and probe the sandbox; exit 1 on errors.
 * @module
 */
import { parseArgs } from "node:util";
import {
  type AutoexecFile,
  autoexecInSandboxWorkspaces,
  autoexecWarning,
} from "../workspace/autoexec_files.ts";
import { type CoopConfig, loadConfig } from "../config/config.ts";
import { diagnoseConfig } from "./config_diagnostics.ts";
import {
  type ConfigDiagnostic,
  ConfigError,
  formatDiagnostic,
} from "../config/config_diagnostic.ts";
import { callerPath } from "./caller_path.ts";
import { type CheckedLimits, checkedLimits, renderLimits } from "./check_limits.ts";
import { type CheckPeople, checkPeople, pairedWarnings, peopleLines } from "./check_people.ts";
import { probeSandbox, type SandboxProbe, type SandboxProbeResult } from "./sandbox_probe.ts";

/** The default config file. */
export const DEFAULT_CONFIG_FILE = "coop.toml";

/** What `checkCommand` uses from the outside world; tests pass fakes. */
export interface CheckDependencies {
  /** Probes the sandbox (default: a real tiny sandbox). */
  probe: SandboxProbe;
  /** Writes one chunk of output (default: stdout). */
  write: (text: string) => void;
  /** Looks up environment variables (default: `Deno.env.get`). */
  env: (name: string) => string | undefined;
}

/** The `--json` report. */
export interface CheckReport {
  /** True when there are no errors. */
  ok: boolean;
  /** The config file checked (absolute: the path that was tried). */
  config: string;
  /** Problems that stop Coop from starting. */
  errors: ConfigDiagnostic[];
  /** Problems worth a look. */
  warnings: ConfigDiagnostic[];
  /** The measured probe, or null when it did not run (config invalid or sandbox disabled). */
  sandbox: SandboxProbeResult | null;
  /**
   * Files in non-owners' workspaces that tools on the host run by themselves (git hooks and
   * program-running config, `.envrc`, VS Code tasks): ATTACKS F23. Not errors; read them first.
   */
  autoexec: AutoexecFile[];
  /** The limits of each non-owner's sandboxed commands, and the path enforcing them here. */
  limits?: CheckedLimits[];
  /** Configured users and the people paired with `coop pairing approve` (null: config invalid). */
  people: CheckPeople | null;
}

const USAGE = "usage: coop check [--config FILE] [--json]";

/** What the command line asked for, or the usage mistake in it (one line). */
type CheckArgs = { config: string; json: boolean; help: boolean } | { mistake: string };

/** Parses the arguments with node:util's parseArgs; its errors become one short line each. */
export function parseCheckArgs(args: readonly string[]): CheckArgs {
  let values: { config?: string; json?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: [...args],
      options: {
        config: { type: "string" },
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    const code = (error as { code?: string }).code ?? "";
    if (!code.startsWith("ERR_PARSE_ARGS")) throw error;
    const quoted = /'([^']*)'/.exec((error as Error).message)?.[1] ?? "";
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") return { mistake: `unknown option "${quoted}"` };
    if (code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL") {
      return { mistake: `unexpected argument "${quoted}" (a config file goes after --config)` };
    }
    if (quoted.startsWith("--config")) return { mistake: "--config needs a file" };
    return { mistake: `${quoted} takes no value` };
  }
  if (values.config === "") return { mistake: "--config needs a file" };
  return {
    config: values.config ?? DEFAULT_CONFIG_FILE,
    json: values.json ?? false,
    help: values.help ?? false,
  };
}

function renderHuman(report: CheckReport): string {
  const lines: string[] = [];
  for (const d of report.errors) lines.push(`error: ${formatDiagnostic(report.config, d)}`);
  for (const d of report.warnings) lines.push(`warning: ${formatDiagnostic(report.config, d)}`);
  for (const f of report.autoexec) lines.push(autoexecWarning(f));
  lines.push(...renderLimits(report.limits ?? []));
  if (report.people) lines.push(...peopleLines(report.people));
  if (report.sandbox) {
    lines.push(
      report.sandbox.available
        ? `sandbox: available (${report.sandbox.detail})`
        : `sandbox: UNAVAILABLE — ${report.sandbox.detail}`,
    );
  }
  const e = report.errors.length;
  const w = report.warnings.length;
  lines.push(
    e === 0
      ? `${report.config}: ok (${w} warning${w === 1 ? "" : "s"})`
      : `${report.config}: ${e} error${e === 1 ? "" : "s"}, ${w} warning${w === 1 ? "" : "s"}`,
  );
  return lines.join("\n") + "\n";
}

/** Runs the check with injectable dependencies and returns the exit code. */
export async function runCheck(
  args: readonly string[],
  deps: CheckDependencies,
): Promise<number> {
  const parsed = parseCheckArgs(args);
  if ("mistake" in parsed) {
    deps.write(`error: ${parsed.mistake}\n${USAGE}\n`);
    return 2;
  }
  if (parsed.help) {
    deps.write(`${USAGE}\n`);
    return 0;
  }
  const report: CheckReport = {
    ok: false,
    config: callerPath(parsed.config),
    errors: [],
    warnings: [],
    sandbox: null,
    autoexec: [],
    people: null,
  };
  let config: CoopConfig | null = null;
  try {
    config = await loadConfig(report.config);
  } catch (error) {
    // Only config mistakes are reported as diagnostics; anything else is a bug and may throw.
    if (!(error instanceof ConfigError)) throw error;
    report.errors.push(...error.diagnostics);
  }
  if (config) {
    for (const d of diagnoseConfig(config, deps.env)) {
      (d.severity === "error" ? report.errors : report.warnings).push(d);
    }
    report.autoexec = await autoexecInSandboxWorkspaces(config);
    report.limits = checkedLimits(config);
    report.people = checkPeople(config);
    report.warnings.push(...pairedWarnings(config, report.people));
    if (config.sandbox.enabled) {
      report.sandbox = await deps.probe();
      if (!report.sandbox.available) {
        report.errors.push({
          severity: "error",
          code: "sandbox.unavailable",
          path: "sandbox.enabled",
          message: `the sandbox is enabled but cannot start: ${report.sandbox.detail}`,
        });
      }
    }
  }
  report.ok = report.errors.length === 0;
  deps.write(parsed.json ? JSON.stringify(report, null, 2) + "\n" : renderHuman(report));
  return report.ok ? 0 : 1;
}

/**
 * `coop check`: prints the report (human or `--json`) and returns 0, or 1 when there are errors.
 *
 * @example
 * ```ts
 * Deno.exit(await checkCommand(["--config", "coop.toml", "--json"]));
 * ```
 */
export function checkCommand(args: string[]): Promise<number> {
  const encoder = new TextEncoder();
  return runCheck(args, {
    probe: probeSandbox,
    write: (text) => Deno.stdout.writeSync(encoder.encode(text)),
    env: (name) => Deno.env.get(name),
  });
}

if (import.meta.main) Deno.exit(await checkCommand(Deno.args));
