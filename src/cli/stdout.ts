/**
 * The CLI's user-facing output on stdout, written whole.
 * @module
 */

const encoder = new TextEncoder();

/** Writes all of `bytes` to `file` (a pipe or a terminal may take them in pieces). */
export function writeAllSync(file: { writeSync(p: Uint8Array): number }, bytes: Uint8Array): void {
  let offset = 0;
  while (offset < bytes.length) offset += file.writeSync(bytes.subarray(offset));
}

/** Writes `text` to stdout, all of it. */
export function printStdout(text: string): void {
  writeAllSync(Deno.stdout, encoder.encode(text));
}
