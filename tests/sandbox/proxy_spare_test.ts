// The forwarder's spare process (coop_accept_forever in ffi/init/forwarder.c): once the
// forwarder has served a connection, a spare waits in accept() for the next; one that dies
// without a client (here killed from the host, as the OOM killer could) is replaced, so the
// next connection is still served instead of waiting forever in the listen queue.
import { assertEquals, assertMatch } from "../assert.ts";
import { exec } from "../../src/sandbox/mod.ts";
import { sandboxTest, withWorkspace } from "./harness.ts";

/** pid → [parent pid, command name] of every process on the host. */
function processes(): Map<number, [number, string]> {
  const all = new Map<number, [number, string]>();
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      all.set(Number(entry.name), [ppid, comm]);
    } catch {
      // exited while we looked
    }
  }
  return all;
}

const childrenOf = (all: Map<number, [number, string]>, parent: number) =>
  [...all].filter(([, [ppid]]) => ppid === parent).map(([pid, [, comm]]) => ({ pid, comm }));

/** True while `pid` is a running (not zombie) child of `parent`. */
function runningChildOf(pid: number, parent: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return state !== "Z" && state !== "X" && Number(ppid) === parent;
  } catch {
    return false; // reaped
  }
}

const CLIENT = `
import os, socket, time
def hit():
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(b"GET http://spare.test/ HTTP/1.0\\r\\n\\r\\n")
    s.settimeout(10)
    head = s.recv(12)
    s.close()
    return head.decode()
print("first=" + hit(), flush=True)
open("/work/ready", "w").close()
while not os.path.exists("/work/killed"):
    time.sleep(0.01)
print("second=" + hit(), flush=True)
`;

sandboxTest(
  "proxy: a spare that dies without a client is replaced; the next connection is served",
  async () => {
    await withWorkspace(async (workspace) => {
      const killed: number[] = [];
      const watcher = (async () => {
        while (!(await Deno.stat(`${workspace}/ready`).then(() => true, () => false))) {
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        await new Promise((resolve) => setTimeout(resolve, 100)); // the first one's process ends
        // Our sandbox's init → its helpers → their children: the spares (nothing else is open).
        const all = processes();
        const parents = new Map<number, number>();
        for (const init of childrenOf(all, Deno.pid).filter((p) => p.comm === "coop-init")) {
          for (const helper of childrenOf(all, init.pid).filter((p) => p.comm === "coop-init")) {
            for (const spare of childrenOf(all, helper.pid)) {
              Deno.kill(spare.pid, "SIGKILL");
              killed.push(spare.pid);
              parents.set(spare.pid, helper.pid);
            }
          }
        }
        // kill() only queues SIGKILL: a spare that has not run since is still asleep in
        // accept(), and when it runs, accept() hands it a connection already queued before it
        // acts on the signal — it then dies holding the client's unread request (RST). That
        // spare would not have died without a client, so the client connects only once every
        // killed spare is gone (its fds closed: a zombie, reaped, or its pid reused).
        const deadline = Date.now() + 10_000;
        while (killed.some((pid) => runningChildOf(pid, parents.get(pid)!))) {
          if (Date.now() > deadline) throw new Error(`a killed spare is still running: ${killed}`);
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        Deno.writeTextFileSync(`${workspace}/killed`, "");
      })();
      const r = await exec({ workspace, network: "proxy" }, ["python3", "-c", CLIENT], {
        timeoutMs: 30_000,
      });
      await watcher;
      assertEquals(r.exitCode, 0, r.stderr);
      // No credentials: the proxy answers 407, which proves the connection reached it.
      assertMatch(r.stdout, /^first=HTTP\/1\.1 407/m);
      assertMatch(r.stdout, /^second=HTTP\/1\.1 407/m);
      assertEquals(killed.length >= 1, true, "no spare was found to kill");
    });
  },
);
