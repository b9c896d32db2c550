/**
 * `coop pairing list [--json] | approve CODE [--name NAME] [--trust LEVEL] | deny CODE |
 * remove NAME`, each with `[--config FILE]`: the owner decides who an unknown sender is, and may
 * forget a paired person again. It opens the same state
 * database as a running `coop start` (WAL lets both in; the gateway reads an approval at the
 * sender's next message, without a restart).
 * @module
 */
import { parseArgs } from "node:util";
import { sanitizeForTerminal } from "../channels/terminal_channel.ts";
import { type CoopConfig, loadConfig } from "../config/config.ts";
import { ConfigError, formatDiagnostic } from "../config/config_diagnostic.ts";
import { CoopError } from "../errors/coop_error.ts";
import { approvePairing, denyPairing } from "../gateway/pairing_approval.ts";
import { formatDuration } from "../sandbox/duration.ts";
import { type PairedPerson, type PairingRequest, PairingStore } from "../state/pairing_store.ts";
import { MemoryDatabase } from "../state/memory_store.ts";
import { leftoverData } from "../gateway/pairing_leftovers.ts";
import { openStateDb } from "../state/state_db.ts";
import { callerPath } from "./caller_path.ts";
import { DEFAULT_CONFIG_FILE } from "./check_command.ts";
import { UsageError } from "./usage_error.ts";

/** What the command writes to (tests capture it). */
export interface PairingCommandIo {
  /** Standard output: the list, the outcome. */
  out: (text: string) => void;
  /** Standard error: what went wrong. */
  err: (text: string) => void;
  /** Milliseconds since the epoch. */
  now: () => number;
}

const DEFAULT_IO: PairingCommandIo = {
  out: (text) => Deno.stdout.writeSync(new TextEncoder().encode(text)),
  err: (text) => Deno.stderr.writeSync(new TextEncoder().encode(text)),
  now: Date.now,
};

/** Runs `coop pairing …`; returns the exit status (1 for a refused decision or a bad config). */
export async function pairingCommand(
  args: string[],
  io: PairingCommandIo = DEFAULT_IO,
): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== "list" && sub !== "approve" && sub !== "deny" && sub !== "remove") {
    throw new UsageError(
      sub === undefined
        ? "coop pairing needs list, approve CODE, deny CODE or remove NAME"
        : `unknown pairing command "${sub}"; expected list, approve, deny or remove`,
    );
  }
  const { values, positionals } = parseArgs({
    args: rest,
    options: {
      config: { type: "string", default: DEFAULT_CONFIG_FILE },
      ...(sub === "list" ? { json: { type: "boolean" } } : {}),
      ...(sub === "approve" ? { name: { type: "string" }, trust: { type: "string" } } : {}),
    },
    strict: true,
    allowPositionals: true,
  }) as {
    values: { config: string; json?: boolean; name?: string; trust?: string };
    positionals: string[];
  };
  const wanted = sub === "list" ? 0 : 1;
  if (positionals.length !== wanted) {
    throw new UsageError(
      sub === "list"
        ? "coop pairing list takes no arguments"
        : `coop pairing ${sub} needs one ${sub === "remove" ? "NAME" : "CODE"}`,
    );
  }
  const file = callerPath(values.config);
  let config: CoopConfig;
  try {
    config = await loadConfig(file);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const d of error.diagnostics) io.err(`error: ${formatDiagnostic(file, d)}\n`);
    return 1;
  }
  let db;
  try {
    db = openStateDb(config.agent.stateDir);
  } catch (error) {
    if (!(error instanceof CoopError)) throw error;
    io.err(`coop: ${error.message}\n`);
    return 1;
  }
  const store = new PairingStore(db);
  const now = io.now();
  try {
    if (sub === "list") {
      const report = { pending: store.pending(now), paired: store.people() };
      io.out(values.json ? `${JSON.stringify(jsonReport(report), null, 2)}\n` : human(report, now));
      return 0;
    }
    const code = positionals[0];
    if (sub === "remove") {
      if (!store.remove(code)) {
        io.err(`coop: nobody paired is named "${code}" (see coop pairing list)\n`);
        return 1;
      }
      io.out(`removed ${code}: their next message is from an unknown sender again\n`);
      return 0;
    }
    if (sub === "deny") {
      const request = denyPairing(store, code, now);
      io.out(`denied ${address(request)}; they get no new code until ${iso(request.expiresAt)}\n`);
      return 0;
    }
    const hasData = leftoverData(config.agent.workspace, new MemoryDatabase(db));
    const person = approvePairing(store, config.users, code, {
      ...(values.name === undefined ? {} : { name: values.name }),
      ...(values.trust === undefined ? {} : { trust: values.trust }),
      hasData,
    }, now);
    io.out(
      `approved ${address(person)} as ${person.name} (trust ${person.trust}); ` +
        "their next message is answered as them\n",
    );
    if (values.name !== undefined && hasData(person.name)) {
      io.err(
        `coop: note: "${person.name}" still has data from before (its workspace directory or ` +
          "memories); the newly paired person sees it as theirs\n",
      );
    }
    return 0;
  } catch (error) {
    if (error instanceof CoopError && error.code.startsWith("pairing.")) {
      io.err(`coop: ${error.message}\n`);
      return 1;
    }
    throw error;
  } finally {
    db.close();
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function address(who: PairingRequest | PairedPerson): string {
  const also = who.aliases.map((a) => `${who.channel}:${a}`);
  return `${who.channel}:${who.sender}${also.length ? ` (also ${also.join(", ")})` : ""}`;
}

/** A display name the sender chose: quoted, with no way to drive the terminal (ATTACKS T3). */
function shownName(name: string | undefined): string {
  return name === undefined ? "" : ` ${sanitizeForTerminal(JSON.stringify(name))}`;
}

function human(report: { pending: PairingRequest[]; paired: PairedPerson[] }, now: number) {
  const lines = [`Pairing requests (${report.pending.length}):`];
  for (const r of report.pending) {
    const minutes = Math.round((now - r.createdAt) / 60_000);
    const age = minutes < 1 ? "just now" : `${formatDuration(minutes * 60_000)} ago`;
    const left = formatDuration(Math.max(1, Math.round((r.expiresAt - now) / 60_000)) * 60_000);
    lines.push(
      `  ${address(r)}${shownName(r.senderName)} — ${
        r.denied ? "denied" : "waiting"
      }, asked ${age}, expires in ${left}`,
    );
  }
  lines.push(`Paired people (${report.paired.length}):`);
  for (const p of report.paired) {
    lines.push(
      `  ${p.name} (${p.trust}) ${address(p)}${shownName(p.senderName)}, approved ${
        iso(p.approvedAt)
      }`,
    );
  }
  if (report.pending.some((r) => !r.denied)) {
    lines.push("Approve with: coop pairing approve CODE [--name NAME] [--trust LEVEL]");
  }
  return `${lines.join("\n")}\n`;
}

function jsonReport(report: { pending: PairingRequest[]; paired: PairedPerson[] }) {
  return {
    pending: report.pending.map((r) => ({
      channel: r.channel,
      sender: r.sender,
      aliases: r.aliases,
      senderName: r.senderName ?? null,
      denied: r.denied,
      createdAt: iso(r.createdAt),
      expiresAt: iso(r.expiresAt),
    })),
    paired: report.paired.map((p) => ({
      name: p.name,
      trust: p.trust,
      channel: p.channel,
      sender: p.sender,
      aliases: p.aliases,
      senderName: p.senderName ?? null,
      approvedAt: iso(p.approvedAt),
    })),
  };
}
