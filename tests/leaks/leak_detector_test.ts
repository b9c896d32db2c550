/**
 * The gateway's own secrets are found exactly and in base64 (each alignment), base64url, hex
 * and URL-encoded forms, also when split across lines; markers name the kind, never the value.
 */
import { Buffer } from "node:buffer";
import { assert, assertEquals, assertNotIncludes } from "../assert.ts";
import { type HeldSecret, LeakDetector } from "../../src/leaks/leak_detector.ts";
import { PatternAutomaton } from "../../src/leaks/pattern_automaton.ts";

const PROVIDER = "pk-test-0123456789abcdefghijklmnopqrstuvwxyz~AB=CD/EF";
const CHANNEL = "123456789:AAHdq+TcvCH1vGWJx/fSeofSAs0K5PALDsaw";
const SECRETS: HeldSecret[] = [
  { value: PROVIDER, kind: "provider_key", label: "provider key" },
  { value: CHANNEL, kind: "channel_token", label: "channel token" },
];
const detector = new LeakDetector(SECRETS);

const b64 = (text: string, url = false) => Buffer.from(text).toString(url ? "base64url" : "base64");
const hex = (text: string) => Buffer.from(text).toString("hex");

/** Asserts nothing of the secret is left: no 12-character run of any of its forms. */
function assertGone(text: string, secret: string): void {
  for (const form of [secret, b64(secret), b64(secret, true), hex(secret)]) {
    for (let i = 0; i + 12 <= form.length; i += 4) {
      assertNotIncludes(text.replace(/\s/g, ""), form.slice(i, i + 12), `a piece of ${form}`);
    }
  }
}

const FORMS: Array<[string, (secret: string) => string, string]> = [
  ["exact", (s) => `key: ${s}\n`, "exact"],
  ["base64 alone", (s) => b64(s), "base64"],
  ["base64 after 1 byte", (s) => b64(`K${s}\n`), "base64"],
  ["base64 after 2 bytes", (s) => b64(`KE${s}`), "base64"],
  ["base64 after 3 bytes of a file", (s) => b64(`KEY=${s}\nOTHER=1\n`), "base64"],
  // Where no + or / falls in the stable part, base64url is the same text as base64.
  ["base64url", (s) => b64(`xx${s}`, true), "base64url base64"],
  ["hex", (s) => `0x${hex(s)}`, "hex"],
  ["HEX", (s) => hex(s).toUpperCase(), "hex"],
  ["URL-encoded", (s) => `https://x.test/?t=${encodeURIComponent(s)}&a=1`, "url-encoded"],
  [
    "split across lines",
    (s) => `${s.slice(0, 20)}\n${s.slice(20, 31)}\r\n  ${s.slice(31)}`,
    "exact",
  ],
  ["base64 wrapped at 76", (s) => b64(`KEY=${s}${s}`).replace(/.{1,20}/g, "$&\n"), "base64"],
  ["hex wrapped", (s) => hex(s).replace(/.{1,30}/g, "$&\n"), "hex"],
];

for (const secret of SECRETS) {
  for (const [name, write, form] of FORMS) {
    Deno.test(`leak detector: the ${secret.kind}, ${name}`, () => {
      const text = `output before\n${write(secret.value)}\noutput after`;
      const result = detector.redact(text);
      assert(result.text.includes(`[redacted: ${secret.label}]`), result.text);
      assertGone(result.text, secret.value);
      assert(result.text.startsWith("output before\n"), result.text);
      assert(result.text.endsWith("output after"), result.text);
      const forms = form.split(" ");
      assert(result.leaks.some((l) => l.kind === secret.kind && forms.includes(l.form)), form);
      assertNotIncludes(JSON.stringify(result.leaks), secret.value.slice(0, 12));
    });
  }
}

Deno.test("leak detector: ordinary text is left as it is", () => {
  const text = "total 8\ndrwxr-xr-x 2 bob bob 4096 Nov 24 .\n-rw-r--r-- 1 bob bob 12 notes.md\n" +
    `${b64("hello world, nothing to see here")} ${hex("plain text")} sk-learn AKIA`;
  assertEquals(detector.redact(text), { text, leaks: [] });
});

Deno.test("leak detector: secrets shorter than 8 characters are not looked for", () => {
  const short = new LeakDetector([{ value: "dave-3", kind: "channel_token", label: "t" }]);
  assertEquals(short.redact("dave-3 said hi").leaks, []);
});

Deno.test("leak detector: several leaks in one text, each replaced once", () => {
  const text = `${PROVIDER} and AKIAIOSFODNN7EXAMPLE and ${b64(CHANNEL)}`;
  const { text: out, leaks } = detector.redact(text);
  assertEquals(
    out,
    "[redacted: provider key] and [redacted: aws access key id] and [redacted: channel token]",
  );
  assertEquals(leaks.map((l) => l.kind), ["provider_key", "aws_access_key_id", "channel_token"]);
});

Deno.test("leak detector: a held key that also has a known shape is named as held", () => {
  const key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789";
  const held = new LeakDetector([{ value: key, kind: "provider_key", label: "provider key" }]);
  assertEquals(held.redact(`x ${key} y`).text, "x [redacted: provider key] y");
});

Deno.test("pattern automaton: finds what a naive search finds, in random texts", () => {
  const alphabet = "ab \ncd";
  const random = (n: number) =>
    Array.from({ length: n }, () => alphabet[Math.floor(Math.random() * alphabet.length)]).join("");
  for (let round = 0; round < 200; round++) {
    const patterns = Array.from({ length: 4 }, () => random(2 + round % 4).replace(/\s/g, "a"));
    const text = random(200);
    const automaton = new PatternAutomaton(patterns);
    const found = automaton.find(text).map((h) => `${h.pattern}@${h.start}-${h.end}`).sort();
    // Naive: the text without whitespace, indices mapped back.
    const kept = [...text].map((c, i) => [c, i] as const).filter(([c]) => !/\s/.test(c));
    const flat = kept.map(([c]) => c).join("");
    const expected: string[] = [];
    patterns.forEach((p, index) => {
      for (let at = flat.indexOf(p); at !== -1; at = flat.indexOf(p, at + 1)) {
        expected.push(`${index}@${kept[at][1]}-${kept[at + p.length - 1][1] + 1}`);
      }
    });
    assertEquals(found, expected.sort(), `${JSON.stringify(patterns)} in ${JSON.stringify(text)}`);
  }
});
