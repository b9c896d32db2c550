/**
 * The scan after a call runs on the event loop only while the workspace is small; past a
 * listing's buffer or a few dozen directories it hands over to a worker (ATTACKS R12), and
 * either way finds the same trap as the plain scan.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { scanWorkspaceBounded } from "../../src/workspace/workspace_scan.ts";

const TRAP = "[core]\n\tfsmonitor = touch /tmp/never\n";

/** A repository git would recognise, with a trap in its config, at `dir`/`at`. */
function plantRepo(dir: string, at: string): void {
  const git = join(dir, at, ".git");
  for (const sub of ["objects", "refs", "hooks"]) {
    Deno.mkdirSync(join(git, sub), { recursive: true });
  }
  Deno.writeTextFileSync(join(git, "HEAD"), "ref: refs/heads/main\n");
  Deno.writeTextFileSync(join(git, "config"), TRAP);
}

const SHAPES: Array<[string, (dir: string) => void]> = [
  ["an empty workspace", () => {}],
  ["a small workspace", (dir) => plantRepo(dir, "p/q")],
  ["a top too large for one listing", (dir) => {
    for (let i = 0; i < 800; i++) {
      Deno.writeTextFileSync(join(dir, `file-with-a-long-name-${i}`), "");
    }
    plantRepo(dir, "r");
  }],
  ["too many directories", (dir) => {
    for (let i = 0; i < 40; i++) Deno.mkdirSync(join(dir, `d${i}`, "e"), { recursive: true });
    plantRepo(dir, "d39/e");
  }],
];

for (const [name, make] of SHAPES) {
  Deno.test(`bounded scan: ${name} — the trap is found and neutralised`, async () => {
    const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-scan-bounded-" }));
    try {
      const since = Date.now() - 2000;
      make(dir);
      const report = await scanWorkspaceBounded(dir, { since, neutralise: true });
      strictEqual(report.complete, true, report.problems.join("; "));
      const expected = name === "an empty workspace" ? [] : [["core.fsmonitor"]];
      deepStrictEqual(report.neutralised.map((n) => n.keys), expected);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}
