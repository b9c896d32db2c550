/**
 * The hash that ties the trampoline library to the C sources it was built from.
 *
 * `scripts/build_ffi.ts` compiles it into the library; the loader recomputes it from the
 * checkout and refuses a library built from other sources.
 * @module
 */
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";

const SOURCE_PATTERN = /\.(c|h|S)$/;

/** Lists the trampoline's source files under `ffiDir`, relative and sorted. */
export async function listSources(ffiDir: string): Promise<string[]> {
  const found: string[] = [];
  async function walk(rel: string): Promise<void> {
    const entries = await readdir(rel ? `${ffiDir}/${rel}` : ffiDir, { withFileTypes: true });
    for (const entry of entries) {
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile() && SOURCE_PATTERN.test(entry.name)) found.push(path);
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
      await readFile(`${ffiDir}/${rel}`),
      new Uint8Array([0]),
    );
  }
  return createHash("sha256").update(Buffer.concat(parts)).digest("hex");
}
