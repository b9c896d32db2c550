/**
 * `coop usage [--json] [--config FILE]`: each person's and group chat's consumption against their
 * budgets, read from the state database (beside a running gateway).
 * @module
 */
import { BUDGET_KINDS } from "../config/budget_settings.ts";
import { type UsageLine, usageReport } from "../gateway/usage_report.ts";
import { pairedUsers } from "../gateway/pairing_approval.ts";
import { PairingStore } from "../state/pairing_store.ts";
import { UsageStore } from "../state/usage_store.ts";
import { openOwnerState, parseStateArgs } from "./owner_state.ts";
import { UsageError } from "./usage_error.ts";

const encoder = new TextEncoder();
const print = (text: string) => Deno.stdout.writeSync(encoder.encode(text));

const COLUMNS = [
  { key: "turns_per_hour", title: "turns/hour" },
  { key: "tokens_per_day", title: "tokens/day" },
  { key: "sandbox_seconds_per_day", title: "sandbox s/day" },
] as const;

function cell(line: UsageLine, key: (typeof COLUMNS)[number]["key"]): string {
  const limit = line.budget[key];
  const used = String(line.used[key]);
  if (line.exempt || limit === undefined) return used;
  return `${used}/${limit}${line.spent.includes(key) ? " SPENT" : ""}`;
}

function table(title: string, lines: readonly UsageLine[]): string {
  const rows = [
    [title, ...COLUMNS.map((c) => c.title), ""],
    ...lines.map((l) => [
      l.name,
      ...COLUMNS.map((c) => cell(l, c.key)),
      l.exempt ? "(exempt: owner)" : "",
    ]),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd()).join("\n");
}

/**
 * `coop usage`: prints the report; returns 1 when the config or database cannot be read.
 *
 * @example
 * ```ts
 * Deno.exit(await usageCommand(["--json", "--config", "coop.toml"]));
 * ```
 */
export async function usageCommand(args: string[]): Promise<number> {
  const parsed = parseStateArgs(args);
  if (parsed.positionals.length) {
    throw new UsageError(`unexpected argument "${parsed.positionals[0]}"`);
  }
  const state = await openOwnerState(parsed.config);
  if (!state) return 1;
  try {
    const paired = pairedUsers(new PairingStore(state.db), state.config);
    const report = usageReport(state.config, new UsageStore(state.db), paired);
    if (parsed.json) {
      print(JSON.stringify(report, null, 2) + "\n");
      return 0;
    }
    const windows = BUDGET_KINDS.map((k) => `${k.unit}: ${k.window}`).join("; ");
    const parts = [table("person", report.people)];
    if (report.groups.length) parts.push(table("group", report.groups));
    print(`${parts.join("\n\n")}\n\nused/budget over rolling windows (${windows})\n`);
    return 0;
  } finally {
    state.db.close();
  }
}
