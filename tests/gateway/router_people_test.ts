/**
 * The router with paired people and group ceilings: a paired person's exact address beats a
 * wildcard user but never a configured one; aliases identify the same person; a group's ceiling
 * never lets anyone act as owner; pairing decisions are the owner's alone (`authorize()`).
 */
import { assertEquals } from "../assert.ts";
import { routeMessage, type RoutingConfig } from "../../src/gateway/router.ts";
import { decide, type Situation } from "../../src/trust/authorization.ts";
import type { UserConfig } from "../../src/config/config.ts";

const config: RoutingConfig = {
  sandbox: { enabled: true },
  users: [
    { name: "alice", trust: "owner", match: ["telegram:111"], sandbox: {} },
    { name: "fans", trust: "familiar", match: ["signal:*"], sandbox: {} },
  ],
  groups: [
    { name: "owners", match: ["telegram:-7"], ceiling: "owner", respond: "mention" },
  ],
};

const paired: UserConfig[] = [
  { name: "dave", trust: "inner", match: ["signal:+49", "signal:uuid-d"], sandbox: {} },
  { name: "mallory", trust: "inner", match: ["telegram:111"], sandbox: {} },
];

Deno.test("router: a paired person beats a wildcard user, by number or by uuid", () => {
  for (const sender of ["+49", "uuid-d"]) {
    const route = routeMessage(config, { channel: "signal", sender }, paired);
    assertEquals([route.principal.name, route.reason], ["dave", "paired"]);
  }
  const byAlias = routeMessage(
    config,
    { channel: "signal", sender: "+1", aliases: ["uuid-d"] },
    paired,
  );
  assertEquals(byAlias.principal.name, "dave");
  assertEquals(
    routeMessage(config, { channel: "signal", sender: "+2" }, paired).principal.name,
    "fans",
  );
});

Deno.test("router: a configured user's exact address is never shadowed by a paired one", () => {
  const route = routeMessage(config, { channel: "telegram", sender: "111" }, paired);
  assertEquals([route.principal.name, route.reason], ["alice", "matched"]);
});

Deno.test("router: even a group entry with ceiling owner leaves the owner at full at most", () => {
  const route = routeMessage(config, { channel: "telegram", sender: "111", group: "-7" }, paired);
  assertEquals(route.ceiling, "full");
  assertEquals(route.group?.name, "owners");
  const other = routeMessage(config, { channel: "telegram", sender: "111", group: "-8" }, paired);
  assertEquals([other.ceiling, other.group], ["familiar", undefined]);
});

Deno.test("authorize: pairing decisions and the list of people are the owner's alone", () => {
  const direct: Situation = {
    channel: "telegram",
    ceiling: null,
    contributors: [],
    sandboxEnabled: true,
  };
  for (const op of ["approve", "deny", "list"] as const) {
    const action = { kind: "pairing" as const, op };
    assertEquals(decide({ name: "alice", trust: "owner" }, direct, action).allowed, true);
    assertEquals(decide({ name: "bob", trust: "full" }, direct, action).allowed, false);
    const inGroup = { ...direct, ceiling: "full" as const };
    assertEquals(
      decide({ name: "alice", trust: "owner" }, inGroup, action).rule,
      "pairing.owner_only",
    );
    assertEquals(decide({ name: "alice", trust: "owner" }, inGroup, action).allowed, false);
  }
});
