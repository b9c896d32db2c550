/**
 * Splits a reply that is too long for one chat message into messages that each fit, cutting at
 * a paragraph break, else a line break, else a space, else anywhere (never inside a surrogate
 * pair); the pieces keep their order.
 * @module
 */

/**
 * The pieces of `text`, each at most `limit` UTF-16 code units (Telegram's count).
 *
 * @example
 * ```ts
 * splitMessage("a".repeat(10_000), 4096).length; // 3
 * ```
 */
export function splitMessage(text: string, limit: number): string[] {
  const pieces: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    const window = rest.slice(0, limit + 1);
    // A break in the second half of the window only: otherwise pieces get tiny.
    const floor = Math.floor(limit / 2);
    let cut = -1;
    let skip = 0;
    for (const separator of ["\n\n", "\n", " "]) {
      const at = window.lastIndexOf(separator, limit);
      if (at >= floor) {
        cut = at;
        skip = separator.length;
        break;
      }
    }
    if (cut === -1) {
      cut = limit;
      const code = rest.charCodeAt(cut - 1);
      if (code >= 0xd800 && code <= 0xdbff) cut -= 1; // keep a surrogate pair together
    }
    pieces.push(rest.slice(0, cut));
    rest = rest.slice(cut + skip);
  }
  if (rest.length > 0 || pieces.length === 0) pieces.push(rest);
  return pieces;
}
