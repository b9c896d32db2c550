/**
 * The one way Coop writes diagnostics: to stderr, never throwing. When stderr's reader is gone
 * (`coop start 2>&1 | tee log`, then Ctrl-C kills tee too) writes fail with EPIPE; a drain in
 * progress must still finish, so the output is dropped instead.
 * @module
 */

const encoder = new TextEncoder();
let gone = false;

/** Writes `text` to stderr; drops it (and all later output) once stderr is a broken pipe. */
export function writeStderr(text: string): void {
  if (gone) return;
  const bytes = encoder.encode(text);
  try {
    for (let at = 0; at < bytes.length;) at += Deno.stderr.writeSync(bytes.subarray(at));
  } catch (error) {
    // Nowhere left to report it; a broken pipe stays broken, anything else may pass.
    if (error instanceof Deno.errors.BrokenPipe) gone = true;
  }
}
