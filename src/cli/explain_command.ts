/**
 * `coop explain --user NAME | --channel C --sender S [--channel C] [--group G] [--json]
 * [--config FILE]`: what that person can do, and why (`explainAccess`), plus a measured probe
 * of the sandbox when their commands would run in it.
 * @module
 */
import { PairedPeopleError } from "../gateway/paired_routing.ts";
import { parseArgs } from "node:util";
import { loadConfig } from "../config/config.ts";
import { ConfigError, formatDiagnostic } from "../config/config_diagnostic.ts";
import {
  explainAccess,
  ExplainError,
  type ExplainIdentity,
  type Explanation,
} from "../gateway/explain.ts";
import { callerPath } from "./caller_path.ts";
import { DEFAULT_CONFIG_FILE } from "./check_command.ts";
import { probeSandbox, type SandboxProbe, type SandboxProbeResult } from "./sandbox_probe.ts";

const USAGE = "usage: coop explain (--user NAME | --channel C --sender ID) [--channel C] " +
  "[--group G] [--json] [--config FILE]";

/** What `runExplain` uses from the outside world; tests pass fakes. */
export interface ExplainDependencies {
  /** Probes the sandbox (default: a real tiny sandbox). */
  probe: SandboxProbe;
  /** Writes one chunk of output (default: stdout). */
  write: (text: string) => void;
}

/** `coop explain --json`: the explanation plus the measured sandbox, when it was probed. */
export type ExplainReport = Explanation & { sandboxProbe: SandboxProbeResult | null };

/**
 * Group and sender ids may start with "-" (Telegram groups: `-1001234`); parseArgs would read
 * them as options, so `--group -100` becomes `--group=-100`.
 */
function joinDashValues(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const next = args[i + 1];
    if ((args[i] === "--group" || args[i] === "--sender") && next?.startsWith("-")) {
      out.push(`${args[i]}=${next}`);
      i++;
    } else out.push(args[i]);
  }
  return out;
}

function parse(args: readonly string[]) {
  const { values } = parseArgs({
    args: joinDashValues(args),
    options: {
      user: { type: "string" },
      channel: { type: "string" },
      sender: { type: "string" },
      group: { type: "string" },
      json: { type: "boolean" },
      config: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
    allowPositionals: false,
  });
  return values;
}

function identityOf(values: ReturnType<typeof parse>): ExplainIdentity | string {
  const group = values.group === undefined ? {} : { group: values.group };
  if (values.user !== undefined) {
    if (values.sender !== undefined) return "give --user or --sender, not both";
    return { user: values.user, ...(values.channel ? { channel: values.channel } : {}), ...group };
  }
  if (values.channel === undefined || values.sender === undefined) {
    return "give --user NAME, or --channel and --sender for someone not configured";
  }
  return { channel: values.channel, sender: values.sender, ...group };
}

function pad(text: string, width: number): string {
  return text.padEnd(width);
}

/** Renders the report for a person to read. */
export function renderExplanation(report: ExplainReport): string {
  const { identity: id, trust, sandbox: sb } = report;
  const who = id.configuredUser
    ? `user "${id.principal}"`
    : `"${id.principal}" (no [[users]] entry)`;
  const where = id.group === null ? "direct chat" : `group ${id.group}`;
  const from = id.sender === null ? id.channel : `${id.channel}:${id.sender}`;
  const lines = [`${from} → ${who}, ${where} (route: ${id.route})`];
  for (const note of report.notes) lines.push(`  note: ${note}`);
  lines.push("", `Effective trust: ${trust.effective}`);
  lines.push(`  user trust   ${trust.user}`);
  lines.push(
    `  ceiling      ${trust.ceiling === null ? "none (direct chat)" : trust.ceiling}` +
      (trust.ceilingFrom ? ` — ${trust.ceilingFrom}` : ""),
  );
  lines.push(`  taint        ${trust.taint}`);
  lines.push("", `Tools offered (${report.tools.length}):`);
  for (const t of report.tools) lines.push(`  ${pad(t.name, 14)}${pad(t.placement, 9)}${t.rule}`);
  if (report.toolsDenied.length) {
    lines.push("Not offered:");
    for (const t of report.toolsDenied) lines.push(`  ${pad(t.name, 14)}${t.rule}`);
  }
  lines.push("", "Memory:");
  lines.push(`  reads   ${report.memory.read.join(", ") || "nothing"}`);
  lines.push(`  writes  ${report.memory.write.join(", ") || "nothing"}`);
  lines.push("", `Commands (bash, exec) run: ${sb.commandsRun} (${sb.rule})`);
  lines.push(
    `  workspace   ${sb.workspace.host}` +
      (sb.workspace.visibleAs === sb.workspace.host ? "" : ` (seen as ${sb.workspace.visibleAs})`),
  );
  lines.push(
    `  timeouts    ${sb.timeouts.defaultMs / 1000} s default, ${
      sb.timeouts.maxMs / 1000
    } s at most`,
  );
  if (sb.commandsRun === "host") lines.push("  on the host, as the gateway's user: no sandbox");
  if (sb.commandsRun === "sandbox") {
    lines.push(
      sb.lifetime.kind === "session"
        ? `  lifetime    one live sandbox per chat session (background jobs stay between calls), ` +
          `ended by /clear or ${(sb.lifetime.idleTimeoutMs ?? 0) / 1000} s unused`
        : "  lifetime    a fresh sandbox per command",
    );
  }
  if (sb.network) {
    lines.push(
      `  network     ${sb.network.mode}` +
        (sb.network.mode === "proxy"
          ? `, allowed: ${sb.network.allowDomains.join(", ") || "nothing"}, at most ` +
            `${sb.network.proxyMaxConnections} connections`
          : ""),
    );
  }
  if (sb.environment) {
    lines.push(`  PATH        ${sb.environment.PATH}`);
    lines.push(`  from host   ${sb.environment.hostVariables.join(", ")}`);
    if (sb.environment.set.length) lines.push(`  set         ${sb.environment.set.join(", ")}`);
  }
  if (sb.limits) {
    const l = sb.limits;
    lines.push(`  limits      enforced by ${l.path} (${l.reason})`);
    if (l.memory) lines.push(`    memory    ${l.memory.bytes} bytes (${l.memory.enforcedBy})`);
    if (l.pids) lines.push(`    pids      ${l.pids.max} (${l.pids.enforcedBy})`);
    if (l.cpus) lines.push(`    cpus      ${l.cpus.cores} (${l.cpus.enforcedBy})`);
    lines.push(`    files     ${l.fileSizeBytes} bytes each, ${l.openFiles} open at once`);
  }
  if (sb.limitsError) lines.push(`  limits      CANNOT BE ENFORCED: ${sb.limitsError}`);
  if (sb.policyError) lines.push(`  policy      INVALID: ${sb.policyError}`);
  if (sb.placeholderSession) {
    lines.push(
      `  session     [session] upper = "session": each chat session gets its own layer, ` +
        `discarded when it ends (/clear); shown for a placeholder session ` +
        `(${sb.placeholderSession}) — a real one's layer path and COOP_SESSION differ`,
    );
  }
  if (sb.mounts) {
    lines.push("  mounts");
    for (const m of sb.mounts) lines.push(`    ${pad(m.inside, 28)} ${pad(m.mode, 8)}${m.source}`);
  }
  if (report.sandboxProbe) {
    const p = report.sandboxProbe;
    lines.push(`  sandbox     ${p.available ? "available" : "UNAVAILABLE"}: ${p.detail}`);
  }
  for (const [name, sectionLines] of Object.entries(report.sectionLines)) {
    lines.push(
      "",
      `${name[0].toUpperCase()}${name.slice(1)}:`,
      ...sectionLines.map((l) => `  ${l}`),
    );
  }
  return lines.join("\n") + "\n";
}

/** Runs `coop explain` with injectable dependencies and returns the exit code. */
export async function runExplain(
  args: readonly string[],
  deps: ExplainDependencies,
): Promise<number> {
  let values: ReturnType<typeof parse>;
  try {
    values = parse(args);
  } catch (error) {
    if (!String((error as { code?: string }).code).startsWith("ERR_PARSE_ARGS")) throw error;
    deps.write(`error: ${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    deps.write(`${USAGE}\n`);
    return 0;
  }
  const identity = identityOf(values);
  if (typeof identity === "string") {
    deps.write(`error: ${identity}\n${USAGE}\n`);
    return 2;
  }
  const file = callerPath(values.config ?? DEFAULT_CONFIG_FILE);
  let report: ExplainReport;
  try {
    const config = await loadConfig(file);
    const explanation = await explainAccess(config, identity);
    const probed = explanation.sandbox.commandsRun === "sandbox";
    report = { ...explanation, sandboxProbe: probed ? await deps.probe() : null };
  } catch (error) {
    if (error instanceof ConfigError) {
      for (const d of error.diagnostics) deps.write(`error: ${formatDiagnostic(file, d)}\n`);
      return 1;
    }
    // An unknown name; paired people unreadable (a damaged state database): the reason.
    if (error instanceof ExplainError || error instanceof PairedPeopleError) {
      deps.write(`error: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
  deps.write(values.json ? JSON.stringify(report, null, 2) + "\n" : renderExplanation(report));
  return 0;
}

/** `coop explain`: prints what a person can do (human or `--json`); exit 1 on config errors. */
export function explainCommand(args: string[]): Promise<number> {
  const encoder = new TextEncoder();
  return runExplain(args, {
    probe: probeSandbox,
    write: (text) => Deno.stdout.writeSync(encoder.encode(text)),
  });
}
