/**
 * Prestarted sandboxes (src/sandbox/prestart.ts): an init cloned ahead of time serves exactly
 * one command, enforces the same policy as a cold one, is replaced when it dies while idle,
 * stays bounded, and never outlives the gateway.
 */
import { assert, assertEquals, assertMatch, assertNotEquals } from "../assert.ts";
import { exec, spawnSandboxed } from "../../src/sandbox/mod.ts";
import { loadTrampoline, OUT, PARAM } from "../../src/sandbox/ffi.ts";
import { resolvePolicy } from "../../src/sandbox/policy.ts";
import {
  discardPrestarted,
  prestart,
  prestartedCount,
  prestartedPids,
} from "../../src/sandbox/prestart.ts";
import { RECORD, STEPS } from "../../src/sandbox/protocol.ts";
import { buildSpec } from "../../src/sandbox/spec.ts";
import { ERRNO } from "../../src/sandbox/errno.ts";
import { sandboxTest, withWorkspace } from "./harness.ts";

/** True once `pid` is gone or only a zombie (its parent has not reaped it yet). */
function ended(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return true;
  }
}

/**
 * Whether every init in `pids` is (soon) alive and waiting for its spec. A prestart returns as
 * soon as the clone's vfork is released, which the kernel does during the init's execve, a few
 * instructions before it renames the task: the new name can trail the return by microseconds
 * (longer on a loaded machine), so it is polled for, briefly.
 */
function settled(pids: readonly number[]): Promise<boolean> {
  return waitFor(() => pids.every(waitingForSpec), 2000);
}

/** Each pid's name and state, for a failure message. */
function describe(pids: readonly number[]): string {
  return pids.map((pid) => {
    try {
      const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
      return `${pid} ${stat.slice(stat.indexOf("("), stat.lastIndexOf(")") + 3)}`;
    } catch {
      return `${pid} gone`;
    }
  }).join(", ");
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

/** ppid, pgrp and session of `pid`, from /proc/<pid>/stat. */
function statFields(pid: number): number[] {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ").slice(1, 4).map(Number);
}

/** What the kernel names an init until its go byte (it renames itself "coop-init" then). */
function waitingForSpec(pid: number): boolean {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/comm`).trim() === "memfd:coop-init" && !ended(pid);
  } catch {
    return false;
  }
}

sandboxTest("each command runs in the init prestarted by the one before", async () => {
  await withWorkspace(async (workspace) => {
    discardPrestarted();
    await exec({ workspace }, ["true"]);
    const idle = prestartedPids();
    assertEquals(idle.length, 1, `one idle init after a command: ${idle}`);
    assert(await settled(idle), "a live init, waiting for its spec");
    // Not in the gateway's process group or session, where a signal meant for the gateway would
    // stay pending and reach the next command.
    const ownSession = statFields(Deno.pid)[2];
    // It gets there right after it starts, concurrently with the command that prestarted it.
    await waitFor(() => statFields(idle[0])[2] === idle[0], 2000);
    const [, pgrp, session] = statFields(idle[0]);
    assertNotEquals(session, ownSession);
    assertEquals([pgrp, session], [idle[0], idle[0]], "its own session, led by itself");
    const child = await spawnSandboxed({ workspace }, [
      "sh",
      "-c",
      "cat /etc/shadow 2>&1; hostname",
    ]);
    assertEquals(child.pid, idle[0], "the command got the prestarted init");
    let out = "";
    child.stdout.on("data", (chunk: Uint8Array) => out += new TextDecoder().decode(chunk));
    const closed = new Promise((done) => child.stdout.on("close", done));
    const status = await child.status;
    await closed;
    assertEquals(status.exitCode, 0);
    assertMatch(out, /\/etc\/shadow: No such file or directory\n/);
    assertEquals(out.split("\n").at(-2), "coop", "the sandbox's hostname");
    assertEquals(status.hardening.seccomp, true, "seccomp applied as on a cold start");
    assert(status.hardening.landlockAbi > 0, "Landlock applied as on a cold start");
    const next = prestartedPids();
    assertEquals(next.length, 1);
    assert(await settled(next), `a live init, waiting for its spec: ${describe(next)}`);
    assertNotEquals(next[0], idle[0], "an init serves one command only");
  });
});

sandboxTest("an idle init killed while waiting is replaced; the command still runs", async () => {
  await withWorkspace(async (workspace) => {
    discardPrestarted();
    await exec({ workspace }, ["true"]);
    const [idle] = prestartedPids();
    assert(idle && await settled([idle]), "an idle init exists");
    Deno.kill(idle, "SIGKILL");
    assert(await waitFor(() => ended(idle), 2000), "the idle init died");
    const result = await exec({ workspace }, ["sh", "-c", "id -u; ls /root 2>&1 || true"]);
    assertEquals(result.exitCode, 0, result.stderr);
    assertEquals(result.stdout.split("\n")[0], "0", "root inside, as always");
    assert(/No such file/.test(result.stdout), `no /root inside: ${result.stdout}`);
    const [next] = prestartedPids();
    assert(next !== idle && await settled([next]), "a new idle init took its place");
  });
});

sandboxTest("idle inits stay bounded: one per shape after 50 concurrent commands", async () => {
  await withWorkspace(async (workspace) => {
    discardPrestarted();
    await Promise.all(Array.from({ length: 50 }, () => exec({ workspace }, ["true"])));
    await exec({ workspace, network: "host" }, ["true"]);
    assertEquals(prestartedCount(), 2, "one for network none, one for host");
    const idle = prestartedPids();
    assert(await settled(idle), `idle inits not waiting for a spec: ${describe(idle)}`);
    discardPrestarted();
    assertEquals(prestartedCount(), 0);
    assert(idle.every(ended), "discarded inits are killed and reaped");
  });
});

sandboxTest("alternating network shapes never hand a command the other shape's init", async () => {
  await withWorkspace(async (workspace) => {
    const hostInterfaces = Deno.readTextFileSync("/proc/net/dev").split("\n").length;
    for (let round = 0; round < 3; round++) {
      const none = await exec({ workspace }, ["cat", "/proc/net/dev"]);
      const interfaces = none.stdout.trim().split("\n").slice(2).map((l) => l.split(":")[0].trim());
      assertEquals(interfaces, ["lo"], `network none sees only lo (round ${round})`);
      const host = await exec({ workspace, network: "host" }, ["cat", "/proc/net/dev"]);
      assertEquals(host.stdout.split("\n").length, hostInterfaces, "network host sees the host's");
    }
  });
});

sandboxTest(
  "an init without its own network namespace refuses a spec that wants none",
  async () => {
    // The pool keys inits by shape; this is the init's own check that a mix-up fails closed.
    await withWorkspace(async (workspace) => {
      const lib = await loadTrampoline();
      const root = (Deno.uid() ?? 0) === 0;
      const policy = resolvePolicy({ workspace, network: "none" });
      const out = prestart(lib, {
        newNet: false,
        uid: root ? policy.sandboxUid : Deno.uid()!,
        gid: root ? policy.sandboxGid : Deno.gid()!,
      });
      const spec = buildSpec(policy, ["sh", "-c", "echo ran"]);
      const params = new Int32Array(PARAM.count);
      const idmap = root ? new TextEncoder().encode(`${workspace}\0`) : null;
      assertEquals(lib.coop_start(spec, BigInt(spec.length), params, idmap, null, out), 0);
      const status = new Int32Array(1);
      assert(
        await waitFor(() => lib.coop_wait(out[OUT.pid], status, null) === out[OUT.pid], 5000),
        "the init exited",
      );
      const report = new Uint8Array(1024);
      const n = Number(lib.coop_read_report(out[OUT.report], report, BigInt(report.length)));
      const view = new DataView(report.buffer, 0, n);
      const records = [];
      for (let at = 0; at + 12 <= n; at += 12) {
        records.push([
          view.getInt32(at, true),
          view.getInt32(at + 4, true),
          view.getInt32(at + 8, true),
        ]);
      }
      const stepNumber = Number(
        Object.entries(STEPS).find(([, name]) => name === "network-mode")![0],
      );
      assertEquals(records, [[RECORD.error, stepNumber, ERRNO.EINVAL]]);
      for (const fd of [OUT.pidfd, OUT.stdout, OUT.stderr, OUT.report, OUT.go]) {
        lib.coop_close(out[fd]);
      }
    });
  },
);

sandboxTest("no idle init outlives the gateway that started it", async () => {
  await withWorkspace(async (workspace) => {
    // A gateway process runs one command, reports its idle init and exits without cleanup.
    const script = `
      import { exec } from ${
      JSON.stringify(new URL("../../src/sandbox/mod.ts", import.meta.url).href)
    };
      await exec({ workspace: ${JSON.stringify(workspace)} }, ["true"]);
      // The next init may still be starting, and its name follows its exec: look until it shows.
      let idle = [];
      for (const deadline = Date.now() + 5000; idle.length === 0 && Date.now() < deadline;) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        for (const e of Deno.readDirSync("/proc")) {
          if (!/^\\d+$/.test(e.name)) continue;
          try {
            const stat = Deno.readTextFileSync("/proc/" + e.name + "/stat");
            const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
            if (stat.includes("(memfd:coop-init)") && ppid === Deno.pid) idle.push(Number(e.name));
          } catch { /* exited */ }
        }
      }
      console.log(JSON.stringify(idle));
    `;
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "--quiet", script],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert(output.success, new TextDecoder().decode(output.stderr));
    const idle: number[] = JSON.parse(new TextDecoder().decode(output.stdout));
    assertEquals(idle.length, 1, "the gateway had one idle init");
    assert(
      await waitFor(() => idle.every(ended), 2000),
      `idle init left running after its gateway exited: ${idle}`,
    );
  });
});
