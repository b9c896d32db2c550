/**
 * Sets up Coop's one logger: human lines on stderr at `$COOP_LOG` level (default warning),
 * and JSON lines appended to `$COOP_LOG_FILE` when set, for traces.
 * @module
 */
import {
  configure,
  getConsoleSink,
  getJsonLinesFormatter,
  type LogLevel,
  type Sink,
} from "@logtape/logtape";

const LEVELS: LogLevel[] = ["trace", "debug", "info", "warning", "error", "fatal"];

function fileSink(path: string): Sink {
  const format = getJsonLinesFormatter();
  const encoder = new TextEncoder();
  return (record) => {
    Deno.writeFileSync(path, encoder.encode(format(record)), { append: true, create: true });
  };
}

/** Configures logging once per process from the environment (`$COOP_LOG` over `fallback`). */
export async function setupLogging(fallback: LogLevel = "warning"): Promise<void> {
  const wanted = (Deno.env.get("COOP_LOG") ?? fallback) as LogLevel;
  const level = LEVELS.includes(wanted) ? wanted : fallback;
  const file = Deno.env.get("COOP_LOG_FILE");
  const sinks: Record<string, Sink> = { console: getConsoleSink() };
  if (file) sinks.file = fileSink(file);
  await configure({
    sinks,
    loggers: [
      { category: ["coop"], lowestLevel: level, sinks: Object.keys(sinks) },
      { category: ["logtape", "meta"], lowestLevel: "warning", sinks: ["console"] },
    ],
  });
}
