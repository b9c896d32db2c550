// Issue 14, item 3: a base built from an older Coopfile is still used, and the gateway's log
// tells the owner once (not once per command) to `coop rebuild`.
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import fs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { withCapturedLogs } from "../fixtures/captured_logs.ts";
import { loadEnvironment } from "../../src/environments/environment_state.ts";
import { warnIfStale, withEnvironment } from "../../src/tools/environment_policy.ts";
import { writeBuiltManifest } from "./environment_fixture.ts";

Deno.test("environment: a stale base is logged once per base, as environment.stale", async () => {
  const dir = fs.mkdtempSync(join(tmpdir(), "env-stale-"));
  try {
    await withCapturedLogs((records) => {
      const coopfile = join(dir, "Coopfile");
      fs.writeFileSync(coopfile, '[base]\nimage = "host"\n');
      const state = join(dir, "state");
      writeBuiltManifest(state, coopfile);
      warnIfStale(loadEnvironment(state, coopfile));
      strictEqual(records.length, 0, "an up-to-date base says nothing");
      fs.writeFileSync(coopfile, '[base]\nimage = "host"\n[env]\nA = "1"\n');
      warnIfStale(loadEnvironment(state, coopfile));
      warnIfStale(loadEnvironment(state, coopfile));
      strictEqual(records.length, 1);
      strictEqual(records[0].level, "warning");
      strictEqual(records[0].properties.event, "environment.stale");
      strictEqual(records[0].properties.coopfile, coopfile);
      ok(records[0].message.join("").includes("coop rebuild"));
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

Deno.test("environment: withEnvironment adds the root, binds and variables to the policy", () => {
  const policy = withEnvironment({ workspace: "/w", env: { KEEP: "1" } }, {
    rootfs: { lower: "host", upper: "/u/upper", work: "/u/work" },
    persist: [{ source: "/p/0", target: "/root/.cache" }],
    env: { LANG: "C", COOP_SESSION: "s" },
  });
  deepStrictEqual(policy, {
    workspace: "/w",
    rootfs: { lower: "host", upper: "/u/upper", work: "/u/work" },
    persist: [{ source: "/p/0", target: "/root/.cache" }],
    env: { KEEP: "1", LANG: "C", COOP_SESSION: "s" },
  });
});
