/**
 * Request bodies whose repeating parts are serialized once. Every model call of a turn sends
 * the same tool definitions (≈ 4.5 KiB of JSON Schema for the built-in tools) and the same
 * conversation plus one step; serializing them again for each call was most of the request's
 * CPU. A wire format puts `JsonText` (JSON serialized earlier) where those parts go, and
 * `stringifyBody` splices it in verbatim: the bytes sent are what `JSON.stringify` of the plain
 * body would give.
 * @module
 */

/** JSON text serialized earlier, put into a request body as it is by `stringifyBody`. */
export class JsonText {
  /** The JSON text of one value. */
  readonly text: string;

  constructor(text: string) {
    this.text = text;
  }

  /** So that a plain `JSON.stringify` of a body holding it gives the same JSON. */
  toJSON(): unknown {
    return JSON.parse(this.text);
  }
}

/**
 * Serialized values keyed by an object their value is derived from, for as long as that object
 * lives. The key must not change after its first use: the request's tool list and messages,
 * which the agent loop never mutates, are what it is for.
 */
export class JsonCache<K extends object> {
  readonly #texts = new WeakMap<K, string>();

  /** The JSON of `make(key)`, made and serialized on the first call for `key` only. */
  text(key: K, make: (key: K) => unknown): string {
    let text = this.#texts.get(key);
    if (text === undefined) {
      text = JSON.stringify(make(key)) ?? "null";
      this.#texts.set(key, text);
    }
    return text;
  }
}

/**
 * `JSON.stringify(body)`, except that a `JsonText` value at the top level of an object body is
 * written as its text without being parsed and serialized again.
 */
export function stringifyBody(body: unknown): string {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    return JSON.stringify(body);
  }
  const entries = Object.entries(body);
  if (!entries.some(([, value]) => value instanceof JsonText)) return JSON.stringify(body);
  const parts: string[] = [];
  for (const [key, value] of entries) {
    // Like JSON.stringify, a value that has no JSON (undefined, a function) leaves its key out.
    const text = value instanceof JsonText ? value.text : JSON.stringify(value);
    if (text !== undefined) parts.push(`${JSON.stringify(key)}:${text}`);
  }
  return `{${parts.join(",")}}`;
}
