/**
 * The workspace quotas through the file tools: `write_file` and `edit_file` write from the
 * gateway, on the host, where no sandbox bounds them, so they must hold a non-owner to the same
 * `disk_quota` and `inode_quota` as their commands — refused before anything is written. As
 * root an empty workspace gets its quota image (the hard path), unprivileged the accounting
 * path; these run both ways (docs/limits.md "Disk and inode quotas").
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { type CoopConfig, parseConfig } from "../../src/config/config.ts";
import { quotaImagePath, releaseLoopQuota } from "../../src/sandbox/loop_quota.ts";
import { ToolExecutor } from "../../src/tools/tool_executor.ts";
import { userToolCall } from "../fixtures/user_tool_call.ts";
import { usersToml } from "../fixtures/users_toml.ts";

const KiB = 1024;
const CONFIG = usersToml([
  ["alice", "owner", '[users.sandbox]\ndisk_quota = "1M"\n'],
  ["bob", "inner"],
  ["dan", "full", '[users.sandbox]\ndisk_quota = "1M"\n'],
  ["erin", "inner", "[users.sandbox]\ninode_quota = 64\n"],
  ["frank", "inner", '[users.sandbox]\ndisk_quota = "1M"\ninode_quota = 64\n'],
]);
const QUOTA_USERS = ["dan", "erin", "frank"];
const ROOT_ONLY = Deno.uid() === 0 ? false : "a quota image needs root (a loop mount)";
let config: CoopConfig;
const call = (name: string, tool: string, args: unknown) =>
  userToolCall(config, name, { tool, args });

async function withExecutor(
  fn: (executor: ToolExecutor, ws: string) => Promise<void>,
  realSandbox = false,
) {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-quota-tools-" }));
  // The sandbox's uid (an unprivileged one for a root invoker) must reach the workspace.
  if (realSandbox) await Deno.chmod(dir, 0o755);
  const ws = join(dir, "ws");
  try {
    config = parseConfig(CONFIG, join(dir, "coop.toml"), dir);
    const sandbox = () => Promise.reject(new Error("no sandbox in this test"));
    await fn(new ToolExecutor(config, realSandbox ? {} : { sandbox }), ws);
  } finally {
    // As root a quota user's workspace is a mounted image: unmount it before removing.
    for (const name of QUOTA_USERS) await releaseLoopQuota(join(ws, name));
    await Deno.remove(dir, { recursive: true });
  }
}

const write = (executor: ToolExecutor, name: string, path: string, bytes: number) =>
  executor.call(call(name, "write_file", { path, content: "x".repeat(bytes) }));

const sizeOf = (path: string) => Deno.statSync(path).size;
const missing = (path: string) => {
  try {
    Deno.lstatSync(path);
    return false;
  } catch (error) {
    return error instanceof Deno.errors.NotFound;
  }
};

Deno.test("disk_quota: write_file fits under it, and is refused past it with nothing written", async () => {
  await withExecutor(async (executor, ws) => {
    const dan = join(ws, "dan");
    const first = await write(executor, "dan", "a.txt", 600 * KiB);
    strictEqual(first.isError, false, first.content);
    strictEqual(sizeOf(join(dan, "a.txt")), 600 * KiB);
    // As root the empty workspace became its own file system, as for dan's first command.
    strictEqual(!missing(quotaImagePath(dan)), Deno.uid() === 0);

    // 600 KiB more does not fit in 1 MiB: refused, and not even its directories are made.
    const past = await write(executor, "dan", "new/dir/b.txt", 600 * KiB);
    strictEqual(past.isError, true, past.content);
    ok(/needs .* more; your workspace \(\/work\) uses/.test(past.content), past.content);
    ok(/disk_quota of 1M bytes/.test(past.content), past.content);
    ok(/nothing was written/.test(past.content), past.content);
    ok(missing(join(dan, "new")), "no directory was created");

    // An overwrite counts the difference: 600 KiB → 700 KiB needs 100 KiB …
    const grown = await write(executor, "dan", "a.txt", 700 * KiB);
    strictEqual(grown.isError, false, grown.content);
    // … and one past the quota leaves the file as it was.
    const huge = await write(executor, "dan", "a.txt", 2048 * KiB);
    strictEqual(huge.isError, true, huge.content);
    ok(/disk_quota/.test(huge.content), huge.content);
    strictEqual(sizeOf(join(dan, "a.txt")), 700 * KiB);

    // Only dan is bound: bob has no quota, and the owner's tools run on the host, unbounded,
    // as the owner's commands do (her [users.sandbox] applies where she is sandboxed).
    for (const name of ["bob", "alice"]) {
      const free = await write(executor, name, "big.txt", 2048 * KiB);
      strictEqual(free.isError, false, `${name}: ${free.content}`);
    }
    strictEqual(sizeOf(join(ws, "bob", "big.txt")), 2048 * KiB);
  });
});

Deno.test("disk_quota: edit_file growing a file past it is refused, the file unchanged", async () => {
  await withExecutor(async (executor, ws) => {
    const text = `head MARK tail\n${"y".repeat(300 * KiB)}`;
    const made = await executor.call(
      call("dan", "write_file", { path: "grow.txt", content: text }),
    );
    strictEqual(made.isError, false, made.content);

    const grow = await executor.call(call("dan", "edit_file", {
      path: "grow.txt",
      old_string: "MARK",
      new_string: "z".repeat(900 * KiB),
    }));
    strictEqual(grow.isError, true, grow.content);
    ok(/"grow\.txt" needs .* more/.test(grow.content), grow.content);
    ok(/disk_quota of 1M bytes/.test(grow.content), grow.content);
    strictEqual(Deno.readTextFileSync(join(ws, "dan", "grow.txt")), text);

    // An edit that frees space is never refused.
    const shrink = await executor.call(call("dan", "edit_file", {
      path: "grow.txt",
      old_string: "MARK",
      new_string: "",
    }));
    strictEqual(shrink.isError, false, shrink.content);
  });
});

Deno.test("inode_quota: write_file into new nested directories is refused past it", async () => {
  await withExecutor(async (executor, ws) => {
    // erin: only an inode quota (accounting); frank: with a disk quota too (as root, an image
    // made with that inode count).
    for (const name of ["erin", "frank"]) {
      const small = await write(executor, name, "d1/d2/f.txt", 10);
      strictEqual(small.isError, false, `${name}: ${small.content}`);

      const deep = Array.from({ length: 70 }, (_, i) => `n${i}`).join("/");
      const past = await write(executor, name, `${deep}/f.txt`, 10);
      strictEqual(past.isError, true, `${name}: ${past.content}`);
      ok(/needs 71 new files and directories/.test(past.content), past.content);
      ok(/inode_quota of 64\b/.test(past.content), past.content);
      ok(missing(join(ws, name, "n0")), `${name}: no directory was created`);
      deepStrictEqual(
        [...Deno.readDirSync(join(ws, name))].map((e) => e.name).filter((n) => n !== "lost+found"),
        ["d1"],
      );
    }
  });
});

Deno.test({
  name: "quota image: the file tools write into it, as bash sees it, even before it is mounted",
  ignore: ROOT_ONLY !== false,
  fn: () =>
    withExecutor(async (executor, ws) => {
      const dan = join(ws, "dan");
      const first = await write(executor, "dan", "a.txt", 10);
      strictEqual(first.isError, false, first.content);
      ok(!missing(quotaImagePath(dan)), "the first write made the quota image");
      const mounted = () => Deno.statSync(dan).dev !== Deno.statSync(ws).dev;
      ok(mounted(), "the workspace is its own file system");

      // After a reboot nothing is mounted: a write must not land beside the image, hidden once
      // the next command mounts it.
      await releaseMount(dan);
      ok(!mounted());
      const second = await write(executor, "dan", "b.txt", 10);
      strictEqual(second.isError, false, second.content);
      ok(mounted(), "the write mounted the image first");
      await releaseMount(dan);
      deepStrictEqual([...Deno.readDirSync(dan)], [], "nothing was written beside the image");
      // Reading too sees what bash sees.
      const read = await executor.call(call("dan", "read_file", { path: "b.txt" }));
      strictEqual(read.isError, false, read.content);
      ok(mounted(), "the read mounted the image first");
      await releaseMount(dan);
      deepStrictEqual([...Deno.readDirSync(dan)], [], "nothing was written beside the image");
    }),
});

Deno.test({
  name:
    "real sandbox: what bash wrote counts against write_file, and what write_file wrote, bash sees",
  ignore: Deno.env.get("COOP_SANDBOX_TEST") !== "1",
  fn: () =>
    withExecutor(async (executor) => {
      const filled = await executor.call(call("dan", "bash", {
        command: "head -c 614400 /dev/zero > fill && echo filled",
      }));
      ok(/filled/.test(filled.content), filled.content);
      const past = await write(executor, "dan", "more.txt", 600 * KiB);
      strictEqual(past.isError, true, past.content);
      ok(/disk_quota of 1M bytes/.test(past.content), past.content);
      const fits = await write(executor, "dan", "note.txt", 100 * KiB);
      strictEqual(fits.isError, false, fits.content);
      const seen = await executor.call(call("dan", "bash", { command: "wc -c < note.txt; ls" }));
      ok(/^102400\n/.test(seen.content), seen.content);
      ok(!/more\.txt/.test(seen.content), seen.content);
    }, true),
});

/** Unmounts the image but keeps it, as a reboot does. */
async function releaseMount(workspace: string): Promise<void> {
  const out = await new Deno.Command("umount", { args: [workspace] }).output();
  strictEqual(out.code, 0, new TextDecoder().decode(out.stderr));
}
