import { join } from "node:path";
import {
  DEFAULT_SYSTEM_PROMPT,
  loadSystemPrompt,
  withTurnContext,
} from "../../src/agent/system_prompt.ts";
import { assertEquals } from "../assert.ts";

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "coop-prompt-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("no prompt files (or no workspace yet): the built-in default", async () => {
  await withDir(async (dir) => {
    assertEquals(await loadSystemPrompt(dir), DEFAULT_SYSTEM_PROMPT);
    assertEquals(await loadSystemPrompt(join(dir, "missing")), DEFAULT_SYSTEM_PROMPT);
  });
});

Deno.test("SOUL.md then AGENTS.md follow the default; SYSTEM.md replaces it", async () => {
  await withDir(async (dir) => {
    await Deno.writeTextFile(join(dir, "AGENTS.md"), "Always answer in French.\n");
    await Deno.writeTextFile(join(dir, "SOUL.md"), "You are cheerful.\n");
    assertEquals(
      await loadSystemPrompt(dir),
      `${DEFAULT_SYSTEM_PROMPT}\n\nYou are cheerful.\n\nAlways answer in French.`,
    );
    await Deno.writeTextFile(join(dir, "SYSTEM.md"), "You are Max.");
    assertEquals(
      await loadSystemPrompt(dir),
      "You are Max.\n\nYou are cheerful.\n\nAlways answer in French.",
    );
  });
});

Deno.test("the turn context names the user, trust and where tools run", () => {
  assertEquals(
    withTurnContext("S", { user: "bob", trust: "full", channel: "http", workspace: "/work" }),
    "S\n\nYou are talking with bob (trust: full) via http. Their tools work in /work.",
  );
});

Deno.test("the owner's edits reach the next turn: same size, replaced, removed", async () => {
  await withDir(async (dir) => {
    const path = join(dir, "SYSTEM.md");
    await Deno.writeTextFile(path, "Answer in English.");
    assertEquals(await loadSystemPrompt(dir), "Answer in English.");
    // Same length, rewritten in place: the change time moves even when the size does not.
    await Deno.writeTextFile(path, "Answer in Spanish.");
    assertEquals(await loadSystemPrompt(dir), "Answer in Spanish.");
    // Replaced by rename (how editors save): another inode.
    await Deno.writeTextFile(join(dir, "next"), "Answer in German.");
    await Deno.rename(join(dir, "next"), path);
    assertEquals(await loadSystemPrompt(dir), "Answer in German.");
    await Deno.remove(path);
    assertEquals(await loadSystemPrompt(dir), DEFAULT_SYSTEM_PROMPT);
  });
});
