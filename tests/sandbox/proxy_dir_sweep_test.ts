/**
 * Socket directories of policy proxies (src/sandbox/proxy/socket_dir.ts): a gateway killed
 * outright leaves its proxies' `coop-proxy-*` directories, and the next `coop start` removes those
 * whose proxy is gone — never one a live proxy holds (in this process or another), another user's,
 * one still being made, or anything else. Each test sweeps a directory of its own (`$TMPDIR` of
 * the processes it starts), so that what other tests and gateways have in /tmp is not touched.
 * @module
 */
import { existsSync } from "node:fs";
import { basename, dirname } from "node:path";
import { assert, assertEquals } from "../assert.ts";
import {
  type PolicyProxy,
  type PolicyProxyOptions,
  startPolicyProxy,
  sweepDeadProxyDirs,
} from "../../src/sandbox/mod.ts";
import { cString, loadTrampoline } from "../../src/sandbox/ffi.ts";
import { ownProxyDirs, sandboxTest, startScript, withWorkspace } from "./harness.ts";
import { makeCoopHome, startGateway, stopGateway } from "../e2e/gateway_process.ts";

const CHILD = new URL("./proxy_holder_child.ts", import.meta.url).pathname;

/** A proxy in another process, its socket directory in `parent`: the process and the socket. */
async function proxyInChild(parent: string) {
  const { process, first } = await startScript(CHILD, [], { TMPDIR: parent });
  assert(first.startsWith(`${parent}/coop-proxy-`), `the child's proxy: ${first}`);
  return { process, socketPath: first };
}

/** A proxy of this process, its socket directory in `parent` (`$TMPDIR` while it starts). */
async function proxyIn(parent: string, options: PolicyProxyOptions): Promise<PolicyProxy> {
  const previous = Deno.env.get("TMPDIR");
  Deno.env.set("TMPDIR", parent);
  try {
    return await startPolicyProxy(options);
  } finally {
    if (previous === undefined) Deno.env.delete("TMPDIR");
    else Deno.env.set("TMPDIR", previous);
  }
}

/** Kills `process` with SIGKILL unless it has ended; resolves once it has. */
async function killed(process: Deno.ChildProcess): Promise<void> {
  try {
    process.kill("SIGKILL");
  } catch {
    // ended already
  }
  await process.status;
}

/** The socket directory of a proxy whose process was killed with SIGKILL, in `parent`. */
async function killedProxyDir(parent: string): Promise<string> {
  const child = await proxyInChild(parent);
  await killed(child.process);
  return dirname(child.socketPath);
}

/** A unix socket file at `path` that outlives its listener (Deno unlinks a closed one's). */
function socketFile(path: string): void {
  const listener = Deno.listen({ transport: "unix", path: `${path}.listening` });
  Deno.linkSync(`${path}.listening`, path);
  listener.close();
}

sandboxTest("proxy sweep: a killed process's directory goes; live proxies' stay", async () => {
  await withWorkspace(async (parent) => {
    const child = await proxyInChild(parent);
    const own = await proxyIn(parent, { allowDomains: [] });
    try {
      assert(own.socketPath.startsWith(`${parent}/coop-proxy-`), own.socketPath);
      // What the leak checks of other tests count by (the harness's ownProxyDirs()).
      assertEquals(ownProxyDirs(parent), [basename(dirname(own.socketPath))]);
      assertEquals((await sweepDeadProxyDirs(parent)).removed, [], "both proxies are alive");
      await killed(child.process);
      const left = dirname(child.socketPath);
      assert(existsSync(left), "a process killed outright removes nothing");
      assertEquals((await sweepDeadProxyDirs(parent)).removed, [left]);
      assert(!existsSync(left));
      assert(existsSync(own.socketPath), "this process's live proxy kept its socket");
    } finally {
      await own.close();
      await killed(child.process);
    }
    assertEquals([...Deno.readDirSync(parent)], [], "close() removed its own");
  });
});

sandboxTest("proxy sweep: only this user's directories whose lock it can take", async () => {
  await withWorkspace(async (parent) => {
    const lib = await loadTrampoline();
    const dir = (name: string, entries: ("lock" | "socket")[]) => {
      const path = `${parent}/${name}`;
      Deno.mkdirSync(path, { mode: 0o700 });
      if (entries.includes("lock")) Deno.writeTextFileSync(`${path}/owner.lock`, "1\n");
      if (entries.includes("socket")) socketFile(`${path}/proxy.sock`);
      return path;
    };
    const stale = dir("coop-proxy-stale1", ["lock", "socket"]);
    const kept = {
      // Its maker is between taking the lock and listening, or died there.
      noSocket: dir("coop-proxy-nosock", ["lock"]),
      // An older Coop's, which took no lock: whether it is alive cannot be told.
      noLock: dir("coop-proxy-nolock", ["socket"]),
      held: dir("coop-proxy-held01", ["lock", "socket"]),
      otherName: dir("coop-proxy-longer1", ["lock", "socket"]),
      target: dir("target", ["lock", "socket"]),
      link: `${parent}/coop-proxy-link01`,
      other: Deno.uid() === 0 ? dir("coop-proxy-other1", ["lock", "socket"]) : null,
    };
    Deno.symlinkSync(kept.target, kept.link);
    if (kept.other) {
      // Another user's (nobody's), stale by its lock: root could remove it, and must not.
      for (const path of [kept.other, `${kept.other}/owner.lock`]) {
        Deno.chownSync(path, 65534, 65534);
      }
    }
    const holder = new TextEncoder().encode("held\n");
    const fd = lib.coop_lock_file(
      cString(`${kept.held}/owner.lock`),
      holder,
      BigInt(holder.length),
      new Int32Array(1),
    );
    assert(fd >= 0, `lock: ${fd}`);
    try {
      assertEquals((await sweepDeadProxyDirs(parent)).removed, [stale]);
    } finally {
      lib.coop_close(fd);
    }
    assert(!existsSync(stale));
    for (const [what, path] of Object.entries(kept)) {
      if (path) assert(existsSync(path), `${what}: ${path} was removed`);
    }
    assert(existsSync(`${kept.target}/owner.lock`), "the link's target was touched");
    // Its lock released, the held one is a dead proxy's like the first.
    assertEquals((await sweepDeadProxyDirs(parent)).removed, [kept.held]);
  });
});

sandboxTest(
  {
    name: "proxy socket directory, as root: root's, searchable; the socket is the sandbox's",
    ignore: Deno.uid() !== 0,
  },
  async () => {
    await withWorkspace(async (parent) => {
      const proxy = await proxyIn(parent, {
        allowDomains: [],
        socketOwner: { uid: 65534, gid: 65534 },
      });
      try {
        const dir = Deno.lstatSync(dirname(proxy.socketPath));
        const socket = Deno.lstatSync(proxy.socketPath);
        const lock = Deno.lstatSync(`${dirname(proxy.socketPath)}/owner.lock`);
        assertEquals([dir.uid, dir.mode! & 0o777], [0, 0o711], "the sandbox may only search it");
        assertEquals([socket.uid, socket.gid, socket.mode! & 0o777], [65534, 65534, 0o600]);
        assertEquals([lock.uid, lock.mode! & 0o777], [0, 0o600]);
      } finally {
        await proxy.close();
      }
    });
  },
);

sandboxTest("proxy sweep: coop start removes what a gateway killed with SIGKILL left", async () => {
  await withWorkspace(async (parent) => {
    const left = await killedProxyDir(parent);
    const home = await makeCoopHome(
      `[agent]\nstate_dir = "{{dir}}/state"\n[channels.http]\nenabled = true\nlisten = "127.0.0.1:0"\n`,
    );
    try {
      // The sweep is done before the gateway listens.
      const gateway = await startGateway(home, { TMPDIR: parent });
      try {
        assert(!existsSync(left), `${left} is still there`);
      } finally {
        await stopGateway(gateway);
      }
    } finally {
      await Deno.remove(home.dir, { recursive: true });
    }
  });
});
