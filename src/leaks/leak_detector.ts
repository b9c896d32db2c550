/**
 * `LeakDetector`: finds the gateway's own secrets (in every form of `secret_variants.ts`, also
 * split across lines) and well-known credential shapes (`credential_shapes.ts`) in one pass
 * over a text, and replaces each by a marker naming its kind, e.g. `[redacted: anthropic key]`.
 * @module
 */
import { BACKWARD_LIMIT, CREDENTIAL_SHAPES, type CredentialShape } from "./credential_shapes.ts";
import { PatternAutomaton } from "./pattern_automaton.ts";
import { MIN_SECRET_LENGTH, type SecretForm, secretVariants } from "./secret_variants.ts";

/** A secret the gateway holds, and what it is (never logged with its value). */
export interface HeldSecret {
  /** The secret itself. */
  value: string;
  /** Stable id of what it is, e.g. `provider_key`, `channel_token`. */
  kind: string;
  /** What the marker says, e.g. `provider key`. */
  label: string;
}

/** One thing found (the value itself is never kept). */
export interface Leak {
  /** A held secret's kind or a credential shape's. */
  kind: string;
  /** How it was written: a held secret's form, or `shape`. */
  form: SecretForm | "shape";
}

/** A text with its leaks replaced, and what was replaced. */
export interface Redaction {
  text: string;
  leaks: Leak[];
}

interface Needle {
  kind: string;
  label: string;
  form: SecretForm | "shape";
  /** Base64 matches are widened over the encoded groups they share with their neighbours. */
  widen: boolean;
  shape?: CredentialShape;
  /** A shape's row in the table: where two start together, the earlier row wins. */
  row: number;
}

interface Span {
  start: number;
  end: number;
  needle: Needle;
}

const BASE64_CHAR = /[A-Za-z0-9+/_=-]/;

/**
 * Scans texts for leaks. Build one per set of held secrets (compiling takes about a
 * millisecond); `redact` is then one pass over the text.
 *
 * @example
 * ```ts
 * const detector = new LeakDetector([{ value: key, kind: "provider_key", label: "provider key" }]);
 * detector.redact(`key: ${btoa(key)}`).text; // "key: [redacted: provider key]"
 * ```
 */
export class LeakDetector {
  readonly #automaton: PatternAutomaton;
  readonly #needles: Needle[] = [];

  /** Compiles the variants of `secrets` (those shorter than 8 characters are skipped). */
  constructor(secrets: readonly HeldSecret[]) {
    const patterns: string[] = [];
    for (const secret of secrets) {
      if (secret.value.length < MIN_SECRET_LENGTH) continue;
      for (const variant of secretVariants(secret.value)) {
        patterns.push(variant.text);
        this.#needles.push({
          kind: secret.kind,
          label: secret.label,
          form: variant.form,
          widen: variant.form === "base64" || variant.form === "base64url",
          row: -1,
        });
      }
    }
    CREDENTIAL_SHAPES.forEach((shape, row) => {
      for (const trigger of shape.triggers) {
        patterns.push(trigger);
        this.#needles.push({ ...shape, form: "shape", widen: false, shape, row });
      }
    });
    this.#automaton = new PatternAutomaton(patterns);
  }

  /** `text` with every leak replaced by `[redacted: <label>]`, and the leaks. */
  redact(text: string): Redaction {
    const hits = this.#automaton.find(text);
    if (hits.length === 0) return { text, leaks: [] };
    const spans: Span[] = [];
    const triedShapeAt = new Set<string>();
    for (const hit of hits) {
      const needle = this.#needles[hit.pattern];
      if (needle.shape) {
        const span = matchShape(text, hit.start, needle, triedShapeAt);
        if (span) spans.push(span);
      } else {
        spans.push({ ...widened(text, hit.start, hit.end, needle.widen), needle });
      }
    }
    return replace(text, spans);
  }
}

/** The span of a shape whose trigger starts at `at`, if its expression matches there. */
function matchShape(
  text: string,
  at: number,
  needle: Needle,
  tried: Set<string>,
): Span | undefined {
  const shape = needle.shape!;
  const from = Math.max(0, at - (shape.before ?? 0));
  const key = `${shape.kind}@${from}`;
  if (tried.has(key)) return undefined;
  tried.add(key);
  shape.pattern.lastIndex = from;
  const match = shape.pattern.exec(text);
  if (!match) return undefined;
  let start = from;
  if (shape.backOver) {
    const limit = Math.max(0, from - BACKWARD_LIMIT);
    while (start > limit && shape.backOver.test(text[start - 1])) start--;
  }
  return { start, end: from + match[0].length, needle };
}

/** A base64 match grown over up to 4 more encoded characters on each side. */
function widened(text: string, start: number, end: number, widen: boolean) {
  if (!widen) return { start, end };
  for (let n = 0; n < 4 && start > 0 && BASE64_CHAR.test(text[start - 1]); n++) start--;
  for (let n = 0; n < 4 && end < text.length && BASE64_CHAR.test(text[end]); n++) end++;
  return { start, end };
}

/**
 * Replaces the spans, merging those that overlap. Where spans start together a held secret
 * wins over a shape (it says more), an earlier row of the table over a later one, and a longer
 * span over a shorter one.
 */
function replace(text: string, spans: Span[]): Redaction {
  if (spans.length === 0) return { text, leaks: [] };
  spans.sort((a, b) => a.start - b.start || a.needle.row - b.needle.row || b.end - a.end);
  const parts: string[] = [];
  const leaks: Leak[] = [];
  let done = 0;
  let current: Span | undefined;
  const flush = () => {
    if (!current) return;
    parts.push(text.slice(done, current.start), `[redacted: ${current.needle.label}]`);
    leaks.push({ kind: current.needle.kind, form: current.needle.form });
    done = current.end;
  };
  for (const span of spans) {
    if (current && span.start < current.end) {
      current = { ...current, end: Math.max(current.end, span.end) };
      continue;
    }
    flush();
    current = span;
  }
  flush();
  parts.push(text.slice(done));
  return { text: parts.join(""), leaks };
}
