// Issue 15, item 2: a delegated cgroup v2 subtree from the user's systemd. There is no systemd
// on the development machine, so busctl and /proc/self/cgroup are stand-ins: this proves the
// request (a transient scope holding the running gateway, Delegate=yes) and every outcome.
import { assertEquals, assertMatch } from "../assert.ts";
import {
  delegateUserScope,
  type RunCommand,
  startTransientScopeArgs,
} from "../../src/sandbox/cgroup_delegate.ts";

Deno.test("delegation asks the user's systemd for a scope holding this pid, with Delegate=yes", async () => {
  const calls: string[][] = [];
  const run: RunCommand = (program, args) => {
    calls.push([program, ...args]);
    return Promise.resolve({ code: 0, stderr: "" });
  };
  let reads = 0;
  // systemd moves the gateway a moment later: the first read still shows the login session.
  const proc = () =>
    ++reads < 3
      ? "0::/user.slice/user-1000.slice/session-2.scope\n"
      : `0::/user.slice/user-1000.slice/user@1000.service/app.slice/coop-${Deno.pid}.scope\n`;
  const outcome = await delegateUserScope(run, proc, 1000);
  assertEquals(calls, [["busctl", ...startTransientScopeArgs(`coop-${Deno.pid}.scope`, Deno.pid)]]);
  assertEquals(
    calls[0].slice(6).join(" "),
    `StartTransientUnit ssa(sv)a(sa(sv)) coop-${Deno.pid}.scope fail 2 PIDs au 1 ${Deno.pid} Delegate b true 0`,
  );
  assertMatch(outcome.scope ?? "", new RegExp(`/coop-${Deno.pid}\\.scope$`));
});

Deno.test("delegation without systemd, refused, or never applied says why and gives no scope", async () => {
  const missing: RunCommand = () => Promise.reject(new Deno.errors.NotFound("busctl"));
  const session = () => "0::/user.slice/user-1000.slice/session-2.scope\n";
  assertEquals(await delegateUserScope(missing, session, 50), {
    scope: null,
    detail: "no systemd user instance to delegate a cgroup (busctl is not installed)",
  });
  const refused: RunCommand = () =>
    Promise.resolve({ code: 1, stderr: "Failed to connect to bus: No medium found" });
  assertMatch(
    (await delegateUserScope(refused, session, 50)).detail,
    /refused a delegated scope: Failed to connect to bus/,
  );
  const ignored: RunCommand = () => Promise.resolve({ code: 0, stderr: "" });
  assertMatch((await delegateUserScope(ignored, session, 50)).detail, /did not move the gateway/);
});
