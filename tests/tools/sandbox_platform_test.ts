/**
 * Fail closed on a host without a sandbox backend: a non-owner's bash call is refused with a
 * message naming the platform and what is missing, and nothing runs — never a silent fallback
 * to the host. The platform is injected into the sandbox library's exec (an argument, not an
 * environment variable).
 */
import { ok, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { parseConfig } from "../../src/config/config.ts";
import { exec } from "../../src/sandbox/exec.ts";
import type { HostPlatform } from "../../src/sandbox/platform.ts";
import { type ToolCall, ToolExecutor } from "../../src/tools/tool_executor.ts";

function bash(name: string, trust: "owner" | "inner", command: string): ToolCall {
  return {
    principal: { name, trust },
    situation: { channel: "http", ceiling: null, contributors: [] },
    tool: "bash",
    args: { command },
  };
}

const HOSTS: [HostPlatform, RegExp][] = [
  [
    { os: "freebsd", arch: "amd64", toolDirs: ["/usr/bin"] },
    /no sandbox backend for freebsd \(amd64\): Coop sandboxes non-owner commands with Linux namespaces.*macOS with apple\/container or sandbox-exec; this host has none of them; the command was not run/,
  ],
  [
    { os: "darwin", arch: "arm64", toolDirs: ["/nonexistent/coop-tools"] },
    /no sandbox backend on macOS \(arm64\): apple\/container's `container` is not installed \(looked in \/nonexistent\/coop-tools\), and sandbox-exec was not found/,
  ],
];

for (const [platform, reason] of HOSTS) {
  Deno.test(`no backend on ${platform.os}: non-owner bash fails closed naming the platform and what is missing`, async () => {
    const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-platform-" }));
    try {
      const file = join(base, "coop.toml");
      const text = '[agent]\nworkspace = "ws"\nstate_dir = "state"\n' +
        '[[users]]\nname = "alice"\ntrust = "owner"\n[[users]]\nname = "bob"\ntrust = "inner"\n';
      await Deno.writeTextFile(file, text);
      await Deno.mkdir(join(base, "ws", "bob"), { recursive: true });
      const executor = new ToolExecutor(parseConfig(text, file, base), {
        sandbox: (policy, argv, options) => exec(policy, argv, { ...options, platform }),
        // The refusal must come from the backend choice itself, not from a gate.
        sandboxGate: () => Promise.resolve(null),
      });
      const marker = join(base, "ran-on-host");
      const refused = await executor.call(bash("bob", "inner", `touch '${marker}'`));
      strictEqual(refused.isError, true, refused.content);
      strictEqual(refused.decision?.placement, "sandbox");
      ok(reason.test(refused.content), refused.content);
      strictEqual(await Deno.stat(marker).then(() => true, () => false), false, "ran on the host");
    } finally {
      await Deno.remove(base, { recursive: true });
    }
  });
}
