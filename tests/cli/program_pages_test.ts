/**
 * `coop start` drops the runtime binary's start-up pages from its resident set: which mappings
 * qualify (never one holding a copied-on-write page, never a writable one), and the real release
 * on this process, which must go on running afterwards.
 */
import { assert, assertEquals } from "../assert.ts";
import { programMappings, releaseProgramPages } from "../../src/cli/process_memory.ts";

const PROGRAM = "/opt/deno/bin/deno";

function mapping(range: string, perms: string, path: string, rssKb: number, anonKb: number) {
  return [
    `${range} ${perms} 00000000 fd:00 1234    ${path}`,
    `Size:              40960 kB`,
    `Rss:               ${rssKb} kB`,
    `Anonymous:         ${anonKb} kB`,
    `VmFlags: rd ex mr mw me`,
  ].join("\n");
}

Deno.test("program mappings: the binary's read-only ones without copied-on-write pages", () => {
  const smaps = [
    mapping("55d000000000-55d000100000", "r--p", PROGRAM, 800, 0),
    mapping("55d000100000-55d002000000", "r-xp", PROGRAM, 30000, 0),
    // Relocated read-only data: dropping it would undo the dynamic loader's work.
    mapping("55d002000000-55d002400000", "r--p", PROGRAM, 4000, 4000),
    mapping("55d002400000-55d002500000", "rw-p", PROGRAM, 1000, 0), // writable data
    mapping("55d002500000-55d002600000", "r--p", PROGRAM, 0, 0), // nothing resident
    mapping("7f0000000000-7f0000100000", "r-xp", "/usr/lib/x86_64-linux-gnu/libc.so.6", 900, 0),
    mapping("7f0000100000-7f0000200000", "r-xp", `${PROGRAM} (deleted)`, 900, 0),
    mapping("7f0000200000-7f0000300000", "rw-p", "", 900, 900),
  ].join("\n");
  assertEquals(programMappings(smaps, PROGRAM), [
    { start: 0x55d000000000n, length: 0x100000n, residentKb: 800 },
    { start: 0x55d000100000n, length: 0x1f00000n, residentKb: 30000 },
  ]);
});

Deno.test("program mappings: a nameless mapping's fields are never read as the previous one's", () => {
  const smaps = [
    `55d000000000-55d000100000 r--p 00000000 fd:00 1 ${PROGRAM}`,
    "Rss:               800 kB",
    "Anonymous:         800 kB",
    "55d000100000-55d000200000 r--p 00000000 00:00 0",
    "Rss:               4 kB",
    "Anonymous:         0 kB",
  ].join("\n");
  assertEquals(programMappings(smaps, PROGRAM), []);
});

Deno.test("program mappings: a mapping without an Anonymous line is never taken", () => {
  const smaps = `55d000000000-55d000100000 r-xp 00000000 fd:00 1 ${PROGRAM}\nRss: 800 kB\n`;
  assertEquals(programMappings(smaps, PROGRAM), []);
});

function residentFileKb(): number {
  const status = Deno.readTextFileSync("/proc/self/status");
  return Number(/^RssFile:\s+(\d+) kB/m.exec(status)?.[1]);
}

Deno.test("releaseProgramPages: this process's binary pages leave its resident set; it runs on", async () => {
  const before = residentFileKb();
  const released = await releaseProgramPages();
  const after = residentFileKb();
  assert(released !== undefined && released > 1024, `released ${released} kB`);
  assert(after < before, `RssFile ${before} → ${after} kB`);
  // Code of the runtime that start-up ran is paged in again as it is used.
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode("coop"));
  assertEquals(new Uint8Array(digest).length, 32);
  assertEquals(JSON.parse(JSON.stringify({ a: [1, "b"] })), { a: [1, "b"] });
  assertEquals(new Intl.NumberFormat("en-US").format(1234.5), "1,234.5");
  assertEquals(/(\d+)-(\d+)/.exec("10-20")?.slice(1), ["10", "20"]);
  const child = await new Deno.Command(Deno.execPath(), { args: ["--version"] }).output();
  assert(child.success);
});
