/**
 * The hash that ties the trampoline library to the C sources it was built from.
 *
 * `scripts/build_ffi.ts` compiles it into the library; the loader recomputes it from the
 * checkout and refuses a library built from other sources.
 * @module
 */
import { Buffer } from "node:buffer";

const SOURCE_PATTERN = /\.(c|h|S)$/;

/** Lists the trampoline's source files under `ffiDir`, relative and sorted. */
export async function listSources(ffiDir: string): Promise<string[]> {
  const found: string[] = [];
  async function walk(rel: string): Promise<void> {
    for await (const entry of Deno.readDir(rel ? `${ffiDir}/${rel}` : ffiDir)) {
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory) await walk(path);
      else if (entry.isFile && SOURCE_PATTERN.test(entry.name)) found.push(path);
    }
  }
  await walk("");
  return found.sort();
}

/** SHA-256 (hex) over each source's relative path and bytes, in sorted order. */
export async function hashSources(ffiDir: string): Promise<string> {
  const encoder = new TextEncoder();
  const parts: Uint8Array[] = [];
  for (const rel of await listSources(ffiDir)) {
    parts.push(
      encoder.encode(`${rel}\0`),
      await Deno.readFile(`${ffiDir}/${rel}`),
      new Uint8Array([0]),
    );
  }
  const digest = await crypto.subtle.digest("SHA-256", Buffer.concat(parts));
  return Buffer.from(digest).toString("hex");
}
