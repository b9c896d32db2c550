/**
 * The git config parser against git itself: every case is also given to the installed
 * `git config --file F --list -z`, and both must read the same names, values and bad line.
 * Then our canonical rewrite must read back, by git, as exactly what we parsed.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import {
  entryName,
  parseGitConfig,
  serializeGitConfig,
} from "../../src/workspace/git_config_parser.ts";

const encoder = new TextEncoder();
const HAVE_GIT = (() => {
  try {
    return new Deno.Command("git", { args: ["--version"] }).outputSync().success;
  } catch {
    return false;
  }
})();

interface Case {
  name: string;
  text: string;
  /** `name=value` (or a bare `name` for a key without `=`), as git lists them. */
  expect: string[];
  /** The line git refuses, if any. */
  badLine?: number;
  /** Where we are stricter than git on purpose (the file is then rewritten): why. */
  stricter?: string;
}

const CASES: Case[] = [
  {
    name: "sections, keys, values",
    text: "[core]\n\tbare = false\n[user]\n\tname = Bob B.\n",
    expect: ["core.bare=false", "user.name=Bob B."],
  },
  {
    name: "section and key names are case-insensitive, subsections are not",
    text: '[Core]\n\tFsMonitor = x\n[Remote "OrIgin"]\n\tURL = u\n',
    expect: ["core.fsmonitor=x", "remote.OrIgin.url=u"],
  },
  {
    name: "the old [section.subsection] form is lowercased",
    text: "[remote.Origin]\n\turl = u\n",
    expect: ["remote.origin.url=u"],
  },
  {
    name: 'subsection escapes: \\" and \\\\ and any other escaped character',
    text: '[remote "a\\"b\\\\c\\d"]\n\turl = u\n',
    expect: ['remote.a"b\\cd.url=u'],
  },
  {
    name: 'dots in the section part: [a.b "c"] is a.b.c',
    text: '[a.b "c"]\n\tk = v\n',
    expect: ["a.b.c.k=v"],
  },
  {
    name: "a backslash-newline continues the value",
    text: "[core]\n\tpager = touch \\\n/tmp/x\n\tbare = false\n",
    expect: ["core.pager=touch /tmp/x", "core.bare=false"],
  },
  {
    name: "continuation inside quotes",
    text: '[core]\n\tpager = "a \\\nb"\n',
    expect: ["core.pager=a b"],
  },
  {
    name: "# and ; inside quotes are kept, outside they start a comment",
    text: '[alias]\n\tx = "!echo # not a comment" ; a comment\n\ty = a;b\n\tz = a#b\n',
    expect: ["alias.x=!echo # not a comment", "alias.y=a", "alias.z=a"],
  },
  {
    name: "a key without = is true; an empty value is empty",
    text: '[core]\n\tbare\n\tpager =\n\teditor = ""\n',
    expect: ["core.bare", "core.pager=", "core.editor="],
  },
  {
    name: "duplicate keys are all kept, in order",
    text: "[credential]\n\thelper = a\n\thelper = b\n[credential]\n\thelper = c\n",
    expect: ["credential.helper=a", "credential.helper=b", "credential.helper=c"],
  },
  {
    name: "a key on the header's line",
    text: "[core] fsmonitor = touch /tmp/x\n[alias]st=!sh\n",
    expect: ["core.fsmonitor=touch /tmp/x", "alias.st=!sh"],
  },
  {
    name: "unquoted whitespace is trimmed at the ends and kept inside; quoted kept",
    text: '[user]\n\tname =   Bob   B   \n\temail = "  b@x  "  \n',
    expect: ["user.name=Bob   B", "user.email=  b@x  "],
  },
  {
    name: 'escapes \\t \\n \\b \\\\ \\" in values',
    text: '[x]\n\tv = a\\tb\\nc\\bd\\\\e\\"f\n',
    expect: ['x.v=a\tb\nc\bd\\e"f'],
  },
  {
    name: "CRLF line ends, tabs before =, comment after the header",
    text: "[core] # header comment\r\n\tbare\t=\ttrue\r\n; whole-line comment\r\n",
    expect: ["core.bare=true"],
  },
  {
    name: "a UTF-8 byte-order mark at the start is skipped",
    text: "\uFEFF[user]\n\tname = Bérénice\n",
    expect: ["user.name=Bérénice"],
  },
  {
    name: "an unknown escape is a bad line",
    text: "[core]\n\tbare = false\n\tpager = a\\qb\n\tfsmonitor = x\n",
    expect: ["core.bare=false"],
    badLine: 3,
  },
  {
    name: "an unterminated quote is a bad line",
    text: '[core]\n\tpager = "a\n\tfsmonitor = x\n',
    expect: [],
    badLine: 2,
  },
  {
    name: "an underscore in a key is a bad line",
    text: "[core]\n\tbare = false\n\tfs_monitor = x\n",
    expect: ["core.bare=false"],
    badLine: 3,
  },
  {
    name: "junk after a subsection is a bad line",
    text: '[core]\n\tbare = false\n[remote "o" x]\n\turl = u\n',
    expect: ["core.bare=false"],
    badLine: 3,
  },
  {
    name: "a key followed by junk instead of = is a bad line",
    text: "[core]\n\tfsmonitor x\n",
    expect: [],
    badLine: 2,
  },
  {
    name: "a key before any section",
    text: "fsmonitor = x\n[core]\n\tbare = false\n",
    expect: [],
    badLine: 1,
    stricter: "git reads a section-less key; Coop rewrites such a file",
  },
  {
    name: "an empty section name",
    text: '[ "x"]\n\tk = v\n',
    expect: [],
    badLine: 1,
    stricter: 'git reads [ "x"] as ".x"; Coop rewrites such a file',
  },
];

function git(args: string[], file: string): { out: string; err: string; ok: boolean } {
  const r = new Deno.Command("git", {
    args: ["config", "--file", file, ...args],
    env: { GIT_CONFIG_NOSYSTEM: "1", HOME: "/nonexistent" },
  }).outputSync();
  return {
    out: new TextDecoder().decode(r.stdout),
    err: new TextDecoder().decode(r.stderr),
    ok: r.success,
  };
}

/** git's `--list -z`: `name\nvalue\0`, or `name\0` for a key without a value. */
function gitList(file: string): { list: string[]; badLine: number | null } {
  const r = git(["--list", "-z"], file);
  if (!r.ok) {
    const line = /bad config line (\d+)/.exec(r.err);
    return { list: [], badLine: line ? Number(line[1]) : -1 };
  }
  const list = r.out.split("\0").filter((e) => e !== "").map((e) => e.replace("\n", "="));
  return { list, badLine: null };
}

function ours(bytes: Uint8Array): string[] {
  return parseGitConfig(bytes).entries.map((e) =>
    e.value === null ? entryName(e) : `${entryName(e)}=${binaryToText(e.value)}`
  );
}

/** Our values are one char per byte; compare them as UTF-8 text like git prints. */
function binaryToText(value: string): string {
  return new TextDecoder().decode(Uint8Array.from(value, (c) => c.charCodeAt(0)));
}

for (const c of CASES) {
  Deno.test(`parseGitConfig: ${c.name}`, () => {
    const bytes = encoder.encode(c.text);
    const parsed = parseGitConfig(bytes);
    deepStrictEqual(ours(bytes), c.expect);
    strictEqual(parsed.error?.line ?? null, c.badLine ?? null, parsed.error?.message);
    // Whatever we keep, rewritten by us, reads back the same — for us and for git.
    const rewritten = serializeGitConfig(parsed.entries);
    deepStrictEqual(ours(rewritten), c.expect);
    strictEqual(parseGitConfig(rewritten).error, null);
  });

  Deno.test({
    name: `parseGitConfig agrees with git: ${c.name}`,
    ignore: !HAVE_GIT,
    fn: () => {
      const dir = Deno.makeTempDirSync({ prefix: "coop-gitcfg-" });
      try {
        const file = `${dir}/config`;
        Deno.writeFileSync(file, encoder.encode(c.text));
        const theirs = gitList(file);
        if (c.stricter) {
          // git reads it; we refuse the file (it gets rewritten): no entry of ours is one
          // git does not have.
          strictEqual(theirs.badLine, null, c.stricter);
          ok(c.expect.every((e) => theirs.list.includes(e)), c.stricter);
        } else {
          strictEqual(theirs.badLine, c.badLine ?? null, "the same bad line");
          if (c.badLine === undefined) deepStrictEqual(theirs.list, c.expect);
        }
        Deno.writeFileSync(
          file,
          serializeGitConfig(parseGitConfig(encoder.encode(c.text)).entries),
        );
        deepStrictEqual(gitList(file), { list: c.expect, badLine: null }, "git reads our rewrite");
      } finally {
        Deno.removeSync(dir, { recursive: true });
      }
    },
  });
}

Deno.test("serializeGitConfig: plain values bare, others quoted; bytes kept exactly", () => {
  const text = '[user]\n\tname = Bob\n\temail = "b@x.org"\n[alias]\n\tl = log --oneline\n' +
    "[x]\n\tv = \xff\xfe raw bytes\n";
  const bytes = Uint8Array.from(text, (c) => c.charCodeAt(0)); // latin1: arbitrary bytes
  const out = new TextDecoder("latin1").decode(serializeGitConfig(parseGitConfig(bytes).entries));
  strictEqual(
    out,
    '[user]\n\tname = Bob\n\temail = b@x.org\n[alias]\n\tl = "log --oneline"\n' +
      '[x]\n\tv = "\xff\xfe raw bytes"\n',
  );
});

Deno.test("parseGitConfig: a NUL byte makes the file unreadable (git would cut the value)", () => {
  const parsed = parseGitConfig(encoder.encode("[core]\n\tpager = less\0; touch /tmp/x\n"));
  deepStrictEqual(parsed.entries, []);
  ok(parsed.error?.message.includes("NUL"));
});

Deno.test({
  name: "parseGitConfig agrees with git on 300 generated files of tricky pieces",
  ignore: !HAVE_GIT,
  fn: async () => {
    const fc = (await import("fast-check")).default;
    const piece = fc.constantFrom(
      "[core]",
      '[Remote "o\\"x"]',
      "[a.B]",
      '[x "y"] k = v',
      "[bad",
      "\n",
      "\r\n",
      "\r",
      "key",
      "Key-2",
      "k_x",
      " = ",
      "=",
      "\t=\t",
      "a",
      " ",
      '"',
      "\\",
      "\\\n",
      "#c",
      ";c",
      "\\t",
      "\\q",
      "é",
      "!sh -c x",
    );
    const dir = Deno.makeTempDirSync({ prefix: "coop-gitcfg-fuzz-" });
    Deno.writeTextFileSync(`${dir}/config`, "[x]\n\tv = a\tb\n");
    const oldGit = gitList(`${dir}/config`).list[0] === "x.v=a b";
    try {
      fc.assert(
        fc.property(fc.array(piece, { maxLength: 30 }), (pieces) => {
          const text = `[s]\n${pieces.join("")}\n`;
          const bytes = encoder.encode(text);
          Deno.writeFileSync(`${dir}/config`, bytes);
          const theirs = gitList(`${dir}/config`);
          const parsed = parseGitConfig(bytes);
          const mine = ours(bytes);
          if (oldGit) {
            // git before 2.45 wrote unquoted whitespace inside a value as spaces (names are
            // the same either way); we read values as git does now.
            const spaced = (list: string[]) => list.map((e) => e.replace(/[\t\r\v\f]/g, " "));
            theirs.list = spaced(theirs.list);
            mine.splice(0, mine.length, ...spaced(mine));
          }
          if (theirs.badLine !== null) {
            strictEqual(parsed.error?.line, theirs.badLine, JSON.stringify(text));
          } else if (parsed.error) {
            ok(
              /outside any section|empty section/.test(parsed.error.message),
              JSON.stringify(text),
            );
          } else {
            deepStrictEqual(mine, theirs.list, JSON.stringify(text));
          }
          // What we keep is always what git reads first, in order.
          deepStrictEqual(theirs.list.slice(0, mine.length), theirs.badLine ? [] : mine);
        }),
        { numRuns: 300 },
      );
    } finally {
      Deno.removeSync(dir, { recursive: true });
    }
  },
});
