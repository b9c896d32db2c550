/**
 * The coop-sandbox npm package under Node: packs it the way `npm run pack:node` does, installs
 * the tarball in an empty directory with npm, runs a five-line script that calls exec(), then
 * runs the Node subset of the sandbox suite (`sandbox_suite.mjs`, one test per layer) with
 * `node --test` against the installed package. Runs as root and unprivileged like every
 * sandbox test; needs node, npm and gcc, which the README's test command needs anyway.
 */
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { sandboxTest } from "../sandbox/harness.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const NODE_SUITE = new URL("./sandbox_suite.mjs", import.meta.url).pathname;
const text = new TextDecoder();

async function run(
  cmd: string,
  args: string[],
  cwd: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(cmd, { args, cwd, stdin: "null" }).output();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

let installed: Promise<string> | undefined;

/** Packs the package once and installs it in a fresh empty directory; resolves to that dir. */
function installPackage(): Promise<string> {
  installed ??= (async () => {
    const pack = await run("node", [`${ROOT}scripts/pack_node.mjs`], ROOT);
    assertEquals(pack.code, 0, `pack:node failed:\n${pack.stderr}`);
    const tarball = pack.stdout.trim().split("\n").pop()!;
    assertMatch(tarball, /\/coop-sandbox-\d+\.\d+\.\d+\.tgz$/);
    const dir = await Deno.makeTempDir({ prefix: "coop-npm-install-" });
    // Shared by the file's tests: removed when it unloads (each run left one in /tmp).
    globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
    await Deno.writeTextFile(`${dir}/package.json`, '{ "private": true, "type": "module" }\n');
    const install = await run(
      "npm",
      ["install", "--no-audit", "--no-fund", "--loglevel=error", tarball],
      dir,
    );
    assertEquals(install.code, 0, `npm install failed:\n${install.stderr}`);
    return dir;
  })();
  return installed;
}

sandboxTest(
  "node: npm pack, install in an empty directory, and a five-line script runs exec() sandboxed",
  async () => {
    const dir = await installPackage();
    const workspace = await Deno.makeTempDir({ prefix: "coop-npm-ws-" });
    await Deno.writeTextFile(
      `${dir}/five_lines.mjs`,
      `import { exec } from "coop-sandbox";
const workspace = process.argv[2];
const r = await exec({ workspace }, ["sh", "-c", "echo hi > /work/f; id -u; cat /proc/1/comm"]);
const seccomp = r.hardening.seccomp, landlock = r.hardening.landlockAbi;
console.log(JSON.stringify({ exitCode: r.exitCode, stdout: r.stdout, seccomp, landlock }));
`,
    );
    try {
      const r = await run("node", ["five_lines.mjs", workspace], dir);
      assertEquals(r.code, 0, r.stderr);
      const result = JSON.parse(r.stdout);
      assertEquals(result.exitCode, 0);
      assertEquals(result.stdout, "0\ncoop-init\n");
      assertEquals(result.seccomp, true);
      assert(result.landlock >= 1, `Landlock ABI ${result.landlock}`);
      assertEquals(await Deno.readTextFile(`${workspace}/f`), "hi\n");
    } finally {
      await Deno.remove(workspace, { recursive: true });
    }
  },
);

sandboxTest(
  "node: the sandbox suite's Node subset passes against the installed package",
  async () => {
    const dir = await installPackage();
    await Deno.copyFile(NODE_SUITE, `${dir}/sandbox_suite.mjs`);
    const declared = (await Deno.readTextFile(NODE_SUITE)).match(/^test\(/gm)?.length ?? 0;
    const r = await run("node", ["--test", "--test-reporter=tap", "sandbox_suite.mjs"], dir);
    const failures = r.stdout.split("\n").filter((line) => /^not ok /.test(line));
    assertEquals(failures, [], `${r.stdout.slice(-4000)}\n${r.stderr}`);
    assertEquals(r.code, 0, r.stderr);
    assert(declared >= 9, `the subset lost tests: ${declared}`);
    assertMatch(r.stdout, new RegExp(`^# pass ${declared}$`, "m"));
    assertMatch(r.stdout, /^# fail 0$/m);
    assertMatch(r.stdout, /^# skipped 0$/m);
  },
);

sandboxTest(
  "node: the installed package rebuilds its library with gcc (npx coop-sandbox-build) and still verifies it",
  async () => {
    const dir = await installPackage();
    const library = `${dir}/node_modules/coop-sandbox/build/libcoop_sandbox.so`;
    const before = (await Deno.stat(library)).mtime!.getTime();
    const build = await run("npx", ["--no-install", "coop-sandbox-build", "--force"], dir);
    assertEquals(build.code, 0, build.stderr);
    assertMatch(build.stderr, /build:ffi: built .*libcoop_sandbox\.so/);
    assert((await Deno.stat(library)).mtime!.getTime() > before, "the library was not rebuilt");
    const r = await run("node", [
      "--input-type=module",
      "-e",
      `
import { probe } from "coop-sandbox";
const report = await probe();
console.log(JSON.stringify({ available: report.available, failed: report.checks.filter((c) => !c.ok) }));
`,
    ], dir);
    assertEquals(r.code, 0, r.stderr);
    assertEquals(JSON.parse(r.stdout), { available: true, failed: [] });
  },
);
