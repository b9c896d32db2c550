import { assertEquals } from "../assert.ts";
import {
  END_SIGNAL,
  INJECTABLE_STEPS,
  PROXY_PORT,
  PROXY_SOCKET,
  RECORD,
  SPEC_MAGIC,
  STEPS,
  TAG,
} from "../../src/sandbox/protocol.ts";
import { OUT, PARAM } from "../../src/sandbox/ffi.ts";

const header = Deno.readTextFileSync(new URL("../../ffi/protocol.h", import.meta.url));
const spawnC = Deno.readTextFileSync(new URL("../../ffi/spawn.c", import.meta.url));

function defines(prefix: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const m of header.matchAll(new RegExp(`#define ${prefix}(\\w+) ([^\\s/]+)`, "g"))) {
    found.set(m[1], m[2]);
  }
  return found;
}

Deno.test("every C setup step has the same number and name in TypeScript", () => {
  const fromC = [...defines("COOP_STEP_")].map((
    [name, n],
  ) => [Number(n), name.toLowerCase().replaceAll("_", "-")]);
  assertEquals(fromC, Object.entries(STEPS).map(([n, name]) => [Number(n), name]));
});

Deno.test("the end signal agrees with protocol.h", () => {
  assertEquals(Number(defines("COOP_SIG_").get("END")), END_SIGNAL);
});

Deno.test("record kinds agree with protocol.h", () => {
  const fromC = Object.fromEntries(
    [...defines("COOP_REC_")].map(([k, v]) => [k.toLowerCase(), Number(v)]),
  );
  assertEquals(fromC, { ...RECORD });
});

Deno.test("spec tags and magic agree with protocol.h", () => {
  const fromC = defines("COOP_TAG_");
  const camel = (name: string) =>
    name.toLowerCase().replace(/_(\w)/g, (_, c: string) => c.toUpperCase());
  assertEquals(
    Object.fromEntries([...fromC].map(([k, v]) => [camel(k), v.replaceAll("'", "")])),
    { ...TAG },
  );
  assertEquals(/#define COOP_SPEC_MAGIC "([^"]+)"/.exec(header)?.[1], SPEC_MAGIC);
});

Deno.test("coop_prestart's and coop_start's parameter and result indexes agree with spawn.c", () => {
  const enumOf = (first: string) => {
    const body = new RegExp(`enum \\{ (${first}[^}]*)\\}`).exec(spawnC)![1];
    return body.split(",").map((s) => s.trim()).filter(Boolean);
  };
  const camel = (name: string) =>
    name.slice(2).toLowerCase().replace(/_(\w)/g, (_, c: string) => c.toUpperCase());
  assertEquals(enumOf("P_").map(camel), Object.keys(PARAM));
  assertEquals(enumOf("O_").map(camel), Object.keys(OUT));
});

Deno.test("the steps a test may force to fail are exactly the C side's injection points", () => {
  const dir = new URL("../../ffi/init/", import.meta.url);
  const found = new Set<string>();
  for (const entry of Deno.readDirSync(dir)) {
    const source = Deno.readTextFileSync(new URL(entry.name, dir));
    for (const m of source.matchAll(/coop_step\(&?spec, COOP_STEP_(\w+)\)/g)) {
      found.add(m[1].toLowerCase().replaceAll("_", "-"));
    }
  }
  assertEquals([...found].sort(), [...INJECTABLE_STEPS].sort());
});

Deno.test("the proxy forwarder's port and socket path agree with protocol.h", () => {
  assertEquals(Number(/#define COOP_PROXY_PORT (\d+)/.exec(header)?.[1]), PROXY_PORT);
  assertEquals(/#define COOP_PROXY_SOCKET "([^"]+)"/.exec(header)?.[1], PROXY_SOCKET);
});
