/**
 * Another process using an environment's upper layer, for tests/sandbox/upper_lock_test.ts:
 * `exec <policy JSON> <shell command>` runs one command and prints its exit code;
 * `session <policy JSON>` starts a live session sandbox, prints "ready" and keeps it until killed.
 * @module
 */
import { exec, type SandboxPolicyInput, startSession } from "../../src/sandbox/mod.ts";

const [mode, policyJson, command] = Deno.args;
const policy = JSON.parse(policyJson) as SandboxPolicyInput;
if (mode === "exec") {
  const result = await exec(policy, ["sh", "-c", command]);
  console.log(JSON.stringify({ exitCode: result.exitCode, stderr: result.stderr }));
} else if (mode === "session") {
  await startSession(policy);
  console.log("ready");
  setInterval(() => {}, 60_000); // held until the test kills this process
} else {
  console.error(`unknown mode ${mode}`);
  Deno.exit(2);
}
