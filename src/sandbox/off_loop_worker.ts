/**
 * The worker thread of `off_loop.ts`: imports the requested module — only one of Coop's own,
 * under `src/` — calls the named export and posts the result back.
 * @module
 */
import { parentPort } from "node:worker_threads";

/** Only modules below `src/` may be run here. */
const SOURCE_ROOT = new URL("../", import.meta.url).href;

interface Job {
  id: number;
  module: string;
  name: string;
  args: unknown[];
}

parentPort!.on("message", async ({ id, module, name, args }: Job) => {
  try {
    if (!module.startsWith(SOURCE_ROOT)) throw new Error(`${module} is not one of Coop's modules`);
    const exports = await import(module);
    if (typeof exports[name] !== "function") throw new Error(`${module} has no function ${name}`);
    const value = await exports[name](...args);
    parentPort!.postMessage({ id, ok: true, value });
  } catch (error) {
    const e = error as { name?: string; message?: string; code?: unknown };
    parentPort!.postMessage({
      id,
      ok: false,
      error: {
        name: e?.name ?? "Error",
        message: e?.message ?? String(error),
        code: typeof e?.code === "string" ? e.code : undefined,
      },
    });
  }
});
