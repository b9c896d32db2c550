import { strictEqual } from "node:assert/strict";
import { routeMessage, type RoutingConfig } from "../../src/gateway/router.ts";

function config(sandboxEnabled: boolean): RoutingConfig {
  return {
    sandbox: { enabled: sandboxEnabled },
    users: [
      { name: "alice", trust: "owner", match: ["terminal:alice", "telegram:111"], sandbox: {} },
      { name: "bob", trust: "inner", match: ["http:bob"], sandbox: {} },
      { name: "fans", trust: "familiar", match: ["telegram:*"], sandbox: {} },
    ],
    groups: [{ name: "family", match: ["telegram:-100"], ceiling: "inner", respond: "mention" }],
  };
}

Deno.test("a matching pattern identifies the user", () => {
  const r = routeMessage(config(true), { channel: "http", sender: "bob" });
  strictEqual(r.principal.name, "bob");
  strictEqual(r.principal.trust, "inner");
  strictEqual(r.ceiling, null);
});

Deno.test("exact patterns beat wildcards", () => {
  strictEqual(
    routeMessage(config(true), { channel: "telegram", sender: "111" }).principal.name,
    "alice",
  );
  strictEqual(
    routeMessage(config(true), { channel: "telegram", sender: "222" }).principal.name,
    "fans",
  );
});

Deno.test("unmatched terminal sender is owner only when the sandbox is enabled", () => {
  const on = routeMessage(config(true), { channel: "terminal", sender: "default" });
  strictEqual(on.principal.trust, "owner");
  strictEqual(on.reason, "terminal_default_owner");
  const off = routeMessage(config(false), { channel: "terminal", sender: "default" });
  strictEqual(off.principal.trust, "public");
});

Deno.test("every other unmatched sender is public", () => {
  const r = routeMessage(config(true), { channel: "http", sender: "mallory" });
  strictEqual(r.principal.trust, "public");
  strictEqual(r.reason, "unmatched_public");
});

Deno.test("groups get their configured ceiling, unknown groups familiar", () => {
  strictEqual(
    routeMessage(config(true), { channel: "telegram", sender: "111", group: "-100" }).ceiling,
    "inner",
  );
  strictEqual(
    routeMessage(config(true), { channel: "telegram", sender: "111", group: "-200" }).ceiling,
    "familiar",
  );
});
