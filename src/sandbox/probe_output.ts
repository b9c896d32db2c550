/**
 * Reads what a probe script prints: one `key=value` per line.
 * @module
 */

/** The `key=value` lines of a probe script's stdout (other lines are ignored). */
export function parseProbeOutput(stdout: string): Map<string, string> {
  const values = new Map<string, string>();
  for (const line of stdout.split("\n")) {
    const at = line.indexOf("=");
    if (at > 0) values.set(line.slice(0, at), line.slice(at + 1));
  }
  return values;
}
