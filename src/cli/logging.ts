/**
 * Sets up Coop's one logger: human lines on stderr at `$COOP_LOG` level (default warning),
 * and JSON lines appended to `$COOP_LOG_FILE` when set, for traces. Never stdout: that is for
 * the output a command was asked for (`--json` reports are piped). A sink never throws:
 * logging must not fail a turn or a drain.
 * @module
 */
import {
  configure,
  getAnsiColorFormatter,
  getJsonLinesFormatter,
  getTextFormatter,
  type LogLevel,
  type Sink,
} from "@logtape/logtape";
import { writeStderr } from "./stderr.ts";

const LEVELS: LogLevel[] = ["trace", "debug", "info", "warning", "error", "fatal"];

function fileSink(path: string): Sink {
  const format = getJsonLinesFormatter();
  const encoder = new TextEncoder();
  return (record) => {
    try {
      Deno.writeFileSync(path, encoder.encode(format(record)), { append: true, create: true });
    } catch {
      // A full disk or a removed directory loses trace lines, never the turn.
    }
  };
}

function stderrSink(): Sink {
  const options = { timestamp: "time", level: "ABBR", category: "·" } as const;
  const format = Deno.stderr.isTerminal() && !Deno.env.get("NO_COLOR")
    ? getAnsiColorFormatter(options)
    : getTextFormatter(options);
  return (record) => writeStderr(format(record));
}

/** Configures logging once per process from the environment (`$COOP_LOG` over `fallback`). */
export async function setupLogging(fallback: LogLevel = "warning"): Promise<void> {
  const wanted = (Deno.env.get("COOP_LOG") ?? fallback) as LogLevel;
  const level = LEVELS.includes(wanted) ? wanted : fallback;
  const file = Deno.env.get("COOP_LOG_FILE");
  const sinks: Record<string, Sink> = { stderr: stderrSink() };
  if (file) sinks.file = fileSink(file);
  await configure({
    sinks,
    loggers: [
      { category: ["coop"], lowestLevel: level, sinks: Object.keys(sinks) },
      { category: ["logtape", "meta"], lowestLevel: "warning", sinks: ["stderr"] },
    ],
  });
}
