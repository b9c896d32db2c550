/**
 * How many HTTP connections the gateway can afford to hold open.
 * @module
 */

/** The process's open-file limit (Linux `/proc/self/limits`), or undefined when unknown. */
export function openFileLimit(): number | undefined {
  try {
    const line = Deno.readTextFileSync("/proc/self/limits").split("\n")
      .find((l) => l.startsWith("Max open files"));
    const soft = line?.split(/\s{2,}/)[1];
    return soft && /^\d+$/.test(soft) ? Number(soft) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The connection cap to use: at most half of the open-file limit, so sandboxes, the database
 * and provider connections keep theirs while every HTTP connection is taken (Deno aborts when
 * it cannot get a descriptor for a signal handler).
 */
export function connectionCap(configured: number, fileLimit: number | undefined): number {
  if (fileLimit === undefined) return configured;
  return Math.max(1, Math.min(configured, Math.floor(fileLimit / 2)));
}
