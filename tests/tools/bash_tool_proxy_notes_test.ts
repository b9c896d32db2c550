// What the model reads when the proxy refused something: curl drops a refused CONNECT's body,
// so the bash tool's output says it once per target, and once for connections past the cap.
import { assertEquals } from "../assert.ts";
import { formatCommandResult } from "../../src/tools/bash_tool.ts";
import { commandResult } from "../fixtures/command_result.ts";

Deno.test("bash output: proxy denials once per target, then the connection cap", () => {
  const text = formatCommandResult(
    commandResult({
      exitCode: 56,
      proxyDenials: [
        { host: "evil.example", port: 443, reason: "is not in the allowlist" },
        { host: "evil.example", port: 443, reason: "is not in the allowlist" },
      ],
      proxyRefusedConnections: 36,
    }),
    120_000,
  );
  assertEquals(text.split("\n"), [
    "[blocked by sandbox policy: evil.example:443 is not in the allowlist; do not retry via " +
    "--noproxy, another resolver or a raw IP: there is no other route out]",
    "[blocked by sandbox policy: the proxy refused 36 connection(s) because too many were open " +
    "at once; close connections you no longer need or open fewer in parallel]",
    "[exit code 56]",
  ]);
  assertEquals(
    formatCommandResult(commandResult({ proxyRefusedConnections: 0 }), 1),
    "[exit code 0]",
  );
});
