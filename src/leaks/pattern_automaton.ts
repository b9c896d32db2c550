/**
 * Many literal strings found in one pass over a text: an Aho-Corasick automaton compiled to a
 * dense table, so each character costs one lookup whatever the number of strings. Whitespace in
 * the text (space, tab, CR, LF) is stepped over, so a string split across lines (`base64 -w 76`,
 * a key wrapped in a message) is still found.
 * @module
 */

/** One occurrence of a string in the text. */
export interface PatternHit {
  /** Index of the string, in the order given to the constructor. */
  pattern: number;
  /** Where it starts in the text (UTF-16 index). */
  start: number;
  /** Just after its last character. */
  end: number;
}

/** Character class of text characters that appear in no string: they lead back to the start. */
const NONE = 0;
/** Character class of whitespace: every state stays where it is. */
const SPACE = 1;

function isSpace(code: number): boolean {
  return code === 32 || code === 9 || code === 10 || code === 13;
}

/**
 * The automaton over a fixed list of strings (whitespace in them is ignored).
 *
 * @example
 * ```ts
 * const automaton = new PatternAutomaton(["secret", "AKIA"]);
 * automaton.find("a sec\nret here"); // [{ pattern: 0, start: 2, end: 11 }]
 * ```
 */
export class PatternAutomaton {
  /** Class per UTF-16 code unit: NONE, SPACE or 1.. for the characters the strings use. */
  readonly #classOf = new Uint8Array(65536);
  readonly #classes: number;
  /** The transition table, `states × classes`. */
  readonly #next: Int32Array;
  /** Per state (by table offset / classes): the strings that end there, through failure links too. */
  readonly #ends: (number[] | undefined)[];
  /** Length of each string without whitespace. */
  readonly #lengths: number[];

  /** Compiles `patterns`; empty ones are never found. */
  constructor(patterns: readonly string[]) {
    const clean = patterns.map((p) => [...p].filter((c) => !isSpace(c.charCodeAt(0))).join(""));
    this.#lengths = clean.map((p) => p.length);
    for (const code of [32, 9, 10, 13]) this.#classOf[code] = SPACE;
    let classes = 2;
    for (const p of clean) {
      for (let i = 0; i < p.length; i++) {
        const code = p.charCodeAt(i);
        if (this.#classOf[code] === NONE) this.#classOf[code] = classes++;
      }
    }
    if (classes > 256) throw new RangeError("too many distinct characters in the patterns");
    this.#classes = classes;
    // The trie: goto[state] maps a class to the child state.
    const children: Map<number, number>[] = [new Map()];
    const ends: (number[] | undefined)[] = [undefined];
    clean.forEach((p, index) => {
      if (p.length === 0) return;
      let state = 0;
      for (let i = 0; i < p.length; i++) {
        const c = this.#classOf[p.charCodeAt(i)];
        let child = children[state].get(c);
        if (child === undefined) {
          child = children.length;
          children.push(new Map());
          ends.push(undefined);
          children[state].set(c, child);
        }
        state = child;
      }
      (ends[state] ??= []).push(index);
    });
    // Breadth first: each state's failure link is complete before its children's, so each row
    // of the table copies its failure state's row and overrides its own children.
    const next = new Int32Array(children.length * classes);
    const failure = new Int32Array(children.length);
    const queue: number[] = [];
    for (const [c, child] of children[0]) {
      next[c] = child;
      queue.push(child);
    }
    for (let head = 0; head < queue.length; head++) {
      const state = queue[head];
      const fail = failure[state];
      const inherited = ends[fail];
      if (inherited) ends[state] = [...(ends[state] ?? []), ...inherited];
      next.copyWithin(state * classes, fail * classes, fail * classes + classes);
      for (const [c, child] of children[state]) {
        failure[child] = next[fail * classes + c];
        next[state * classes + c] = child;
        queue.push(child);
      }
    }
    // Entries hold the next state's row offset (no multiplication per character), negated
    // when some string ends in that state (one test per character).
    for (let i = 0; i < next.length; i++) {
      next[i] = ends[next[i]] ? -next[i] * classes : next[i] * classes;
    }
    for (let state = 0; state < children.length; state++) {
      next[state * classes + SPACE] = state * classes; // never negative: no second report
    }
    this.#next = next;
    this.#ends = ends;
  }

  /** Every occurrence of every string in `text`, in order of their ends. */
  find(text: string): PatternHit[] {
    const classOf = this.#classOf, next = this.#next, k = this.#classes;
    const hits: PatternHit[] = [];
    let offset = 0; // the state times the number of classes
    for (let i = 0, n = text.length; i < n; i++) {
      offset = next[offset + classOf[text.charCodeAt(i)]];
      if (offset >= 0) continue;
      offset = -offset;
      for (const pattern of this.#ends[offset / k]!) {
        hits.push({ pattern, start: this.#startOf(text, i, this.#lengths[pattern]), end: i + 1 });
      }
    }
    return hits;
  }

  /** Where a string of `length` non-space characters ending at `last` begins. */
  #startOf(text: string, last: number, length: number): number {
    let i = last;
    for (let left = length - 1; left > 0; left--) {
      i--;
      while (isSpace(text.charCodeAt(i))) i--;
    }
    return i;
  }
}
