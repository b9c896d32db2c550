import { assert, assertEquals, assertMatch, assertThrows } from "../assert.ts";
import { buildSpec, etcFiles } from "../../src/sandbox/spec.ts";
import { buildEnvironment } from "../../src/sandbox/environment.ts";
import { resolvePolicy } from "../../src/sandbox/policy.ts";
import { SandboxPolicyError } from "../../src/sandbox/errors.ts";

const policy = resolvePolicy({ workspace: "/tmp/ws" });

function decode(spec: Uint8Array): string[] {
  return new TextDecoder().decode(spec).split("\0");
}

Deno.test("the spec carries argv, workspace and an end tag, in the C format", () => {
  const parts = decode(buildSpec(policy, ["sh", "-c", "echo hi"]));
  assertEquals(parts[0], "COOP-SPEC-1");
  assert(parts.includes("w/tmp/ws"));
  const args = parts.filter((p) => p.startsWith("a")).map((p) => p.slice(1));
  assertEquals(args, ["sh", "-c", "echo hi"]);
  assertEquals(parts.at(-1), "z");
});

Deno.test("a NUL byte in an argument is refused, not truncated", () => {
  assertThrows(() => buildSpec(policy, ["echo", "a\0b"]), SandboxPolicyError);
});

Deno.test("an empty command is refused", () => {
  assertThrows(() => buildSpec(policy, []), SandboxPolicyError);
});

Deno.test("the environment is an allowlist: host secrets never appear", () => {
  const host: Record<string, string> = {
    OPENAI_API_KEY: "sk-secret",
    LANG: "C.UTF-8",
    HOME: "/root",
  };
  const env = buildEnvironment(policy, {}, (name) => host[name]);
  assert(!env.some((e) => e.includes("sk-secret")));
  assert(env.includes("LANG=C.UTF-8"));
  assert(env.includes("HOME=/work"), "HOME is the workspace, never the host's");
});

Deno.test("passthrough names and explicit extras are the only additions", () => {
  const p = resolvePolicy({
    workspace: "/w",
    envPassthrough: ["GIT_AUTHOR_NAME"],
    env: { CI: "1" },
  });
  const env = buildEnvironment(
    p,
    { EXTRA: "x" },
    (name) => (name === "GIT_AUTHOR_NAME" ? "Ann" : undefined),
  );
  assertEquals(env.filter((e) => /^(GIT_AUTHOR_NAME|CI|EXTRA)=/.test(e)).sort(), [
    "CI=1",
    "EXTRA=x",
    "GIT_AUTHOR_NAME=Ann",
  ]);
});

Deno.test("the synthesized /etc has no host accounts and no resolver without network", () => {
  const files = etcFiles(policy);
  assertMatch(files["/etc/passwd"], /^root:x:0:0:/);
  assert(!files["/etc/passwd"].includes(Deno.env.get("USER") ?? "nobody-else"));
  assertEquals(files["/etc/resolv.conf"].includes("nameserver"), false);
});

Deno.test("forcing a step without an injection point is refused, not silently ignored", () => {
  const error = assertThrows(
    () => buildSpec(policy, ["true"], { failAt: "no-new-privs" }),
    SandboxPolicyError,
  );
  assertMatch(error.message, /failAt: step "no-new-privs" has no injection point/);
});

Deno.test("the working directory is /work or below it; anything else is refused", () => {
  const cwdOf = (cwd?: string) =>
    decode(buildSpec(policy, ["pwd"], cwd === undefined ? {} : { cwd }))
      .filter((p) => p.startsWith("c/")).map((p) => p.slice(1));
  assertEquals(cwdOf(), ["/work"]);
  assertEquals(cwdOf("/work/a/b"), ["/work/a/b"]);
  for (const bad of ["/etc", "/work/../etc", "work/a", "/workspace", "/work/a/../../etc"]) {
    const error = assertThrows(() => buildSpec(policy, ["pwd"], { cwd: bad }), SandboxPolicyError);
    assertMatch(error.message, /cwd must be \/work or an absolute path below it/);
  }
});

Deno.test("PATH leads with the workspace's tool directories", () => {
  const env = buildEnvironment(policy, {}, () => undefined);
  assert(env.includes(
    "PATH=/work/tools:/work/bin:/work/.local/bin:/usr/local/bin:/usr/bin:/bin:" +
      "/usr/local/sbin:/usr/sbin:/sbin",
  ));
});
