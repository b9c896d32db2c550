/**
 * A git config file read the way git reads it (git-config(1) "Syntax", and git's own
 * `config.c`): sections `[section "subsection"]` and the older `[section.subsection]`,
 * case-insensitive section and key names, quoted values, the escapes `\\ \" \n \t \b`, a
 * backslash before a newline continuing the value, `#` and `;` comments, a key without `=`
 * meaning true, and a header followed by a key on the same line. Anything else is a bad line;
 * git refuses such a file, and we never keep what follows it.
 *
 * Values follow git 2.45 and later, which keeps whitespace inside an unquoted value as written
 * (earlier gits wrote each such character as a space); names, which decide what is dangerous, read
 * the same in every version.
 *
 * Text is handled as a binary string (one char per byte), so a value goes back byte for byte;
 * git itself is byte-oriented and knows no encoding here. `serializeGitConfig` writes entries in
 * one canonical form — a value bare only when plain, else quoted and escaped — so a rewritten
 * file means to git exactly what our parser read, whatever tricks the original played.
 * @module
 */

/** One `key = value` of a git config file. */
export interface GitConfigEntry {
  /** The section, lowercased: `core`, `remote`. */
  section: string;
  /** The subsection (`origin` of `remote.origin.url`), case kept; null when there is none. */
  subsection: string | null;
  /** The key, lowercased: `url`, `fsmonitor`. */
  key: string;
  /** The value as git reads it; null for a key written without `=` (boolean true). */
  value: string | null;
  /** Its line (1-based) in the file. */
  line: number;
}

/** What `parseGitConfig` read: the entries before the first bad line, and that line. */
export interface GitConfigParse {
  /** Every entry git would read, in order (duplicates kept: git keeps them too). */
  entries: GitConfigEntry[];
  /** The first line git would refuse (nothing after it is kept), or null. */
  error: { line: number; message: string } | null;
}

/** The dotted name git uses for an entry, e.g. `remote.origin.url` (never a value). */
export function entryName(entry: GitConfigEntry): string {
  return entry.subsection === null
    ? `${entry.section}.${entry.key}`
    : `${entry.section}.${entry.subsection}.${entry.key}`;
}

const NEWLINE = 10;
const BOM = [0xef, 0xbb, 0xbf];

/** git's `isspace` in the C locale. */
const isSpace = (c: number) => c === 32 || (c >= 9 && c <= 13);
const isAlpha = (c: number) => (c | 32) >= 97 && (c | 32) <= 122;
const isDigit = (c: number) => c >= 48 && c <= 57;
/** git's `iskeychar`: letters, digits and `-`. */
const isKeyChar = (c: number) => isAlpha(c) || isDigit(c) || c === 45;
const lower = (c: number) => (c >= 65 && c <= 90 ? c + 32 : c);

class BadLine extends Error {}

/** A cursor over the bytes with git's `get_next_char`: CRLF reads as LF, the end as a LF. */
class Source {
  at = 0;
  line = 1;
  eof = false;
  constructor(readonly text: string) {}
  /** The line of the last character read (a newline belongs to the line it ends). */
  charLine = 1;
  next(): number {
    this.charLine = this.line;
    if (this.at >= this.text.length) {
      this.eof = true;
      return NEWLINE;
    }
    let c = this.text.charCodeAt(this.at++);
    if (c === 13 && this.text.charCodeAt(this.at) === NEWLINE) c = this.text.charCodeAt(this.at++);
    if (c === NEWLINE) this.line++;
    return c;
  }
  bad(message: string): never {
    throw new BadLine(message);
  }
}

/** `[section]`, `[section.sub]` or `[section "sub"]`; the `[` is already read. */
function readHeader(src: Source): { base: string; sub: string | null } {
  let base = "";
  for (;;) {
    const c = src.next();
    if (src.eof) src.bad("unterminated section header");
    if (c === 93) return { base, sub: null }; // ]
    if (isSpace(c)) return { base, sub: readSubsection(src, c) };
    if (!isKeyChar(c) && c !== 46) src.bad("invalid character in a section name");
    base += String.fromCharCode(lower(c));
  }
}

function readSubsection(src: Source, first: number): string {
  let c = first;
  do {
    if (c === NEWLINE) src.bad("unterminated section header");
    c = src.next();
  } while (isSpace(c));
  if (c !== 34) src.bad('a subsection must be in double quotes: [section "sub"]');
  let sub = "";
  for (;;) {
    c = src.next();
    if (c === NEWLINE) src.bad("unterminated subsection");
    if (c === 34) break;
    if (c === 92) {
      c = src.next(); // git keeps the character after a backslash, whatever it is
      if (c === NEWLINE) src.bad("unterminated subsection");
    }
    sub += String.fromCharCode(c);
  }
  if (src.next() !== 93) src.bad('expected "]" after the subsection');
  return sub;
}

/** git's `parse_value`: quotes, escapes, comments, continuation, trailing space trimmed. */
function readValue(src: Source): string {
  let value = "";
  let quote = false, comment = false;
  let trimTo = 0; // length before trailing unquoted whitespace; 0 when there is none
  for (;;) {
    let c = src.next();
    if (c === NEWLINE) {
      if (quote) src.bad("unterminated quoted value");
      return trimTo ? value.slice(0, trimTo) : value;
    }
    if (comment) continue;
    if (isSpace(c) && !quote) {
      if (!trimTo) trimTo = value.length;
      if (value.length) value += String.fromCharCode(c);
      continue;
    }
    if (!quote && (c === 59 || c === 35)) {
      comment = true;
      continue;
    }
    trimTo = 0;
    if (c === 92) {
      c = src.next();
      if (c === NEWLINE) continue; // a continuation line
      const escaped = ({ 116: 9, 98: 8, 110: 10, 92: 92, 34: 34 } as Record<number, number>)[c];
      if (escaped === undefined) src.bad("unknown escape sequence in a value");
      value += String.fromCharCode(escaped);
      continue;
    }
    if (c === 34) {
      quote = !quote;
      continue;
    }
    value += String.fromCharCode(c);
  }
}

/**
 * Parses a git config file given as bytes. Stops at the first line git would refuse.
 *
 * @example
 * ```ts
 * const { entries } = parseGitConfig(new TextEncoder().encode('[remote "origin"]\nurl = x\n'));
 * entries[0]; // { section: "remote", subsection: "origin", key: "url", value: "x", line: 2 }
 * ```
 */
export function parseGitConfig(bytes: Uint8Array): GitConfigParse {
  const entries: GitConfigEntry[] = [];
  const src: Source = new Source(bytesToBinary(bytes));
  let header: { base: string; sub: string | null } | null = null;
  try {
    if (bytes.includes(0)) src.bad("contains a NUL byte");
    if (bytes[0] === BOM[0]) {
      if (bytes[1] !== BOM[1] || bytes[2] !== BOM[2]) src.bad("a partial byte-order mark");
      src.at = 3;
    }
    let comment = false;
    for (;;) {
      const c = src.next();
      if (c === NEWLINE) {
        if (src.eof) return { entries, error: null };
        comment = false;
        continue;
      }
      if (comment || isSpace(c)) continue;
      if (c === 35 || c === 59) {
        comment = true;
        continue;
      }
      if (c === 91) {
        header = readHeader(src);
        if (header.base === "" || header.base.startsWith(".")) src.bad("empty section name");
        continue;
      }
      if (!isAlpha(c)) src.bad("a key must start with a letter");
      if (!header) src.bad("a key outside any section");
      const line = src.line;
      let key = String.fromCharCode(lower(c));
      let next = src.next();
      while (!src.eof && isKeyChar(next)) {
        key += String.fromCharCode(lower(next));
        next = src.next();
      }
      while (next === 32 || next === 9) next = src.next();
      let value: string | null = null;
      if (next !== NEWLINE) {
        if (next !== 61) src.bad('expected "=" after the key');
        value = readValue(src);
      }
      entries.push({ ...split(header), key, value, line });
    }
  } catch (error) {
    if (!(error instanceof BadLine)) throw error;
    return { entries, error: { line: src.charLine, message: error.message } };
  }
}

/** `[a.b "c"]` is `a.b.c.*` to git: the section is up to the first dot, the rest subsection. */
function split(header: { base: string; sub: string | null }) {
  const dot = header.base.indexOf(".");
  const section = dot < 0 ? header.base : header.base.slice(0, dot);
  const fromBase = dot < 0 ? null : header.base.slice(dot + 1);
  const subsection = header.sub === null
    ? fromBase
    : fromBase === null
    ? header.sub
    : `${fromBase}.${header.sub}`;
  return { section, subsection };
}

/**
 * Writes entries in canonical form: one header per run of entries of the same section and
 * subsection, a value bare when it is only letters, digits and `._/:@+-`, else quoted and
 * escaped, a key without a value as a bare key.
 *
 * @example
 * ```ts
 * serializeGitConfig([{ section: "user", subsection: null, key: "name", value: "Bob", line: 1 }]);
 * // "[user]\n\tname = Bob\n" as bytes
 * ```
 */
export function serializeGitConfig(entries: readonly GitConfigEntry[]): Uint8Array {
  let out = "";
  let current: string | null = null;
  for (const entry of entries) {
    const header = entry.subsection === null
      ? `[${entry.section}]`
      : `[${entry.section} "${entry.subsection.replace(/[\\"]/g, (c) => `\\${c}`)}"]`;
    if (header !== current) {
      out += `${header}\n`;
      current = header;
    }
    out += `\t${entry.key}${entry.value === null ? "" : ` = ${quoted(entry.value)}`}\n`;
  }
  return binaryToBytes(out);
}

/** A value as written: bare when it is plain (readable), else quoted and escaped. */
function quoted(value: string): string {
  if (/^[A-Za-z0-9._/:@+-]+$/.test(value)) return value;
  return `"${escape(value)}"`;
}

function escape(value: string): string {
  const named: Record<string, string> = { "\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t" };
  return value.replace(/[\\"\n\t\b]/g, (c) => named[c] ?? "\\b");
}

function bytesToBinary(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i += 8192) {
    text += String.fromCharCode(...bytes.subarray(i, i + 8192));
  }
  return text;
}

function binaryToBytes(text: string): Uint8Array {
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}
