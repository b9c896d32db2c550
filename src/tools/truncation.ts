/**
 * Head-and-tail truncation of tool output, with a marker saying how much was cut.
 * @module
 */

/** Default cap on what a tool returns to the model, in characters. */
export const DEFAULT_MAX_OUTPUT_CHARS = 30_000;

/** Returns the marker put where `omitted` characters were removed. */
export function truncationMarker(omitted: number): string {
  return `\n[… ${omitted} characters truncated …]\n`;
}

// Never cut between the halves of a surrogate pair: the model would see U+FFFD.
function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * Keeps the first and last parts of `text` so the result fits in `maxChars`, marking the cut.
 * The tail usually holds the error, so both ends survive.
 *
 * @example
 * ```ts
 * truncateHeadTail("a".repeat(100), 60); // "aaa…[… 55 characters truncated …]…aaa"
 * ```
 */
export function truncateHeadTail(
  text: string,
  maxChars: number = DEFAULT_MAX_OUTPUT_CHARS,
): string {
  if (text.length <= maxChars) return text;
  // The marker's own length depends on the number it prints; size it for the worst case.
  const budget = Math.max(0, maxChars - truncationMarker(text.length).length);
  let head = Math.ceil(budget / 2);
  let tailStart = text.length - (budget - head);
  if (head > 0 && isHighSurrogate(text.charCodeAt(head - 1))) head -= 1;
  if (tailStart < text.length && tailStart > 0 && isHighSurrogate(text.charCodeAt(tailStart - 1))) {
    tailStart += 1;
  }
  return text.slice(0, head) + truncationMarker(tailStart - head) + text.slice(tailStart);
}

/** What one command's stdout or stderr is captured up to, before truncation for the model. */
export const MAX_CAPTURE_BYTES = 1 << 20;
