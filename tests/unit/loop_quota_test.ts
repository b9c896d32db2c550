// Issue 15, item 3: the hard quota's set-up, with stand-ins for mkfs.ext4 and mount (the real
// ones run in tests/sandbox/attacks/quota_test.ts as root).
import { assertEquals, assertMatch } from "../assert.ts";
import { ensureLoopQuota, quotaImagePath } from "../../src/sandbox/loop_quota.ts";

const MiB = 2 ** 20;

Deno.test("loop quota: an empty workspace gets a sparse image, mkfs -N, mount nodev,nosuid", async () => {
  const parent = await Deno.makeTempDir({ prefix: "coop-loop-" });
  const ws = `${parent}/bob`;
  Deno.mkdirSync(ws);
  try {
    const calls: string[] = [];
    const run = (program: string, args: string[]) => {
      calls.push([program, ...args].join(" "));
      return Promise.resolve({ code: 0, stderr: "" });
    };
    const outcome = await ensureLoopQuota(ws, 100 * MiB, 1000, run);
    if (Deno.uid() !== 0) {
      assertEquals(outcome, { reason: "hard quotas need root (a loop-mounted image)" });
      assertEquals(calls, []);
      return;
    }
    const image = quotaImagePath(ws);
    assertEquals(image, `${parent}/.bob.coop-quota.img`);
    assertEquals(outcome, { image });
    const stat = Deno.statSync(image);
    assertEquals(stat.size, 100 * MiB);
    assertEquals((stat.blocks ?? 0) < 16, true, "sparse: it holds no data yet");
    const owner = Deno.statSync(ws);
    assertEquals(calls, [
      `mkfs.ext4 -q -F -m 0 -E root_owner=${owner.uid}:${owner.gid} -N 1000 ${image}`,
      `mount -t ext4 -o loop,nodev,nosuid ${image} ${ws}`,
    ]);
    // A workspace that already holds files keeps the accounting path: nothing is migrated.
    Deno.writeTextFileSync(`${parent}/alice-file`, "x");
    Deno.mkdirSync(`${parent}/alice`);
    Deno.writeTextFileSync(`${parent}/alice/notes`, "x");
    const alice = await ensureLoopQuota(`${parent}/alice`, 100 * MiB, undefined, run);
    assertMatch((alice as { reason: string }).reason, /already holds files/);
    assertEquals(calls.length, 2);
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});

Deno.test({
  name: "loop quota: a failing mkfs removes the image and says why (root: others never get here)",
  ignore: Deno.uid() !== 0,
}, async () => {
  const parent = await Deno.makeTempDir({ prefix: "coop-loop-" });
  const ws = `${parent}/bob`;
  Deno.mkdirSync(ws);
  try {
    const missing = () => Promise.reject(new Deno.errors.NotFound("mkfs.ext4"));
    const outcome = await ensureLoopQuota(ws, 100 * MiB, undefined, missing);
    assertEquals(outcome, { reason: "mkfs.ext4: mkfs.ext4 is not installed" });
    assertEquals([...Deno.readDirSync(parent)].map((e) => e.name), ["bob"]);
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});
