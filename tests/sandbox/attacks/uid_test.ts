// ATTACKS.md §4.3 P15 — the host uid a sandbox runs as belongs to no host account.
//
// As root, sandbox root maps to a dedicated host uid (DEFAULT_SANDBOX_HOST_ID) that no account
// has, so `nobody` and friends can neither signal the sandbox nor move the policy proxy's
// socket. An unprivileged invoker has no other uid to give: its sandbox runs as the invoker,
// who may signal it anyway — the root-only rows say so and are skipped, never passed.
import { existsSync } from "node:fs";
import { basename, dirname } from "node:path";
import { tmpdir } from "node:os";
import { assert, assertEquals, assertMatch, assertRejects } from "../../assert.ts";
import {
  exec,
  type SandboxPolicyInput,
  type SandboxProcess,
  spawnSandboxed,
} from "../../../src/sandbox/mod.ts";
import { DEFAULT_SANDBOX_HOST_ID, SandboxHostIdError } from "../../../src/sandbox/host_ids.ts";
import { hostProcessesWith, SANDBOX_TESTS, until, withWorkspace } from "../harness.ts";
import { keyValues } from "./attack_table.ts";

const ROOT = Deno.uid() === 0;
const NOBODY = 65534;
const NOT_ROOT = "root-only: an unprivileged invoker has no uid but its own to map sandbox root " +
  "to, so its sandbox runs as the invoker (who may signal it anyway); see docs/security.md";
const HOST_PYTHON = "/usr/bin/python3";
const SETPRIV = "/usr/bin/setpriv";
const HOST_TOOLS_MISSING = [HOST_PYTHON, SETPRIV].every((tool) => existsSync(tool))
  ? undefined
  : `needs ${SETPRIV} and ${HOST_PYTHON} on the host to act as nobody`;
/** Why a row that acts as `nobody` on the host cannot run here, if it cannot. */
const AS_NOBODY_SKIP = ROOT ? HOST_TOOLS_MISSING : NOT_ROOT;

/** A Deno test of this row, skipped with its reason printed when `skip` is set. */
function uidTest(name: string, skip: string | undefined, fn: () => Promise<void>): void {
  Deno.test({
    name: `§4.3 P15: ${name}${skip ? ` — skipped: ${skip}` : ""}`,
    ignore: !SANDBOX_TESTS || skip !== undefined,
    sanitizeResources: false,
    sanitizeOps: false,
    fn,
  });
}

/** Host ids of a process, from its /proc status (real, effective, saved, fs). */
function hostIds(pid: number): { uid: number[]; gid: number[] } {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const ids = (key: string) =>
    new RegExp(`^${key}:\\s+(.*)$`, "m").exec(status)![1].split(/\s+/).map(Number);
  return { uid: ids("Uid"), gid: ids("Gid") };
}

/** The process's uid_map, one line: sandbox uid, host uid, count. */
function uidMap(pid: number): string[] {
  return Deno.readTextFileSync(`/proc/${pid}/uid_map`).trim().split(/\s+/);
}

/**
 * Runs `sleep <marker>` in a sandbox and hands its host pid (the sleep, not the init) to
 * `fn`; the sandbox is killed afterwards.
 */
async function withSleepingSandbox(
  policy: Omit<SandboxPolicyInput, "workspace">,
  fn: (pid: number, child: SandboxProcess) => Promise<void>,
): Promise<void> {
  const marker = `995.${Math.floor(Math.random() * 1e9)}`;
  await withWorkspace(async (workspace) => {
    const child = await spawnSandboxed({ ...policy, workspace }, ["sleep", marker]);
    try {
      assert(await until(() => hostProcessesWith(marker).length === 1, 10_000), "sleep started");
      const [pid] = hostProcessesWith(marker);
      // Asleep, not still in ld.so and setlocale right after its exec (state R or D).
      const asleep = () => {
        try {
          return /\) S /.test(Deno.readTextFileSync(`/proc/${pid}/stat`));
        } catch {
          return false;
        }
      };
      assert(await until(asleep, 10_000), "sleep is sleeping");
      await fn(pid, child);
    } finally {
      child.kill("SIGKILL");
      await child.status;
    }
  });
}

/** Runs a python program on the host as `nobody`; its `attempt` lines become key/values. */
async function asNobody(program: string, args: string[]): Promise<Record<string, string>> {
  const source = [
    "import errno, os, signal, socket, sys",
    "def attempt(label, fn):",
    "    try:",
    "        fn()",
    "        print(label + '=OK', flush=True)",
    "    except OSError as e:",
    "        print(label + '=' + errno.errorcode.get(e.errno, str(e.errno)), flush=True)",
    program,
  ].join("\n");
  const out = await new Deno.Command(SETPRIV, {
    args: [
      `--reuid=${NOBODY}`,
      `--regid=${NOBODY}`,
      "--clear-groups",
      "--",
      HOST_PYTHON,
      "-c",
      source,
      ...args,
    ],
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert(out.success, `setpriv/python3 as nobody failed: ${new TextDecoder().decode(out.stderr)}`);
  return keyValues(text);
}

function getent(database: string, key: number): Deno.CommandOutput {
  return new Deno.Command("getent", { args: [database, String(key)] }).outputSync();
}

uidTest(
  "as root, sandbox processes run as the dedicated host uid and gid, which no account has",
  ROOT ? undefined : NOT_ROOT,
  () =>
    withSleepingSandbox({}, (pid) => {
      const { uid, gid } = hostIds(pid);
      assertEquals(uidMap(pid), ["0", String(DEFAULT_SANDBOX_HOST_ID), "1"]);
      assertEquals(uid, Array(4).fill(DEFAULT_SANDBOX_HOST_ID));
      assertEquals(gid, Array(4).fill(DEFAULT_SANDBOX_HOST_ID));
      // getent exits 2 when the key is not in the database (any NSS source, not just files).
      assertEquals(getent("passwd", DEFAULT_SANDBOX_HOST_ID).code, 2, "no account has the uid");
      assertEquals(getent("group", DEFAULT_SANDBOX_HOST_ID).code, 2, "no group has the gid");
      return Promise.resolve();
    }),
);

uidTest(
  "as root, a host process running as nobody cannot signal a sandboxed process",
  AS_NOBODY_SKIP,
  () =>
    withSleepingSandbox({}, async (pid) => {
      const out = await asNobody(
        `pid = int(sys.argv[1])
attempt("probe", lambda: os.kill(pid, 0))
attempt("stop", lambda: os.kill(pid, signal.SIGSTOP))
attempt("kill", lambda: os.kill(pid, signal.SIGKILL))`,
        [String(pid)],
      );
      assertEquals(out, { probe: "EPERM", stop: "EPERM", kill: "EPERM" });
      assert(Deno.statSync(`/proc/${pid}`).isDirectory, "the sandboxed process is still alive");
      assertMatch(Deno.readTextFileSync(`/proc/${pid}/stat`), /\) S /, "and still sleeping");
    }),
);

uidTest(
  "as root, nobody cannot move, enter or chmod the policy proxy's socket directory",
  AS_NOBODY_SKIP,
  () =>
    withSleepingSandbox({ network: "proxy" }, async (pid) => {
      // The sandbox's own mount table names the host file bound at /run/coop/proxy.sock.
      const line = Deno.readTextFileSync(`/proc/${pid}/mountinfo`).split("\n")
        .find((l) => l.split(" ")[4] === "/run/coop/proxy.sock");
      assert(line, "the proxy socket is mounted in the sandbox");
      const root = line.split(" ")[3];
      const dir = [dirname(root), `${tmpdir()}/${basename(dirname(root))}`]
        .find((d) => {
          try {
            return Deno.statSync(`${d}/proxy.sock`).isSocket;
          } catch {
            return false;
          }
        });
      assert(dir, `found the proxy's directory of ${root} on the host`);
      // The directory is the gateway's (which sweeps it once it is gone: socket_dir.ts), the
      // socket the sandbox's.
      assertEquals(Deno.statSync(dir).uid, 0);
      assertEquals(Deno.statSync(`${dir}/proxy.sock`).uid, DEFAULT_SANDBOX_HOST_ID);
      const out = await asNobody(
        `d = sys.argv[1]
attempt("rename_dir", lambda: os.rename(d, d + ".moved"))
attempt("chmod_dir", lambda: os.chmod(d, 0o777))
attempt("list_dir", lambda: os.listdir(d))
attempt("unlink_socket", lambda: os.unlink(d + "/proxy.sock"))
attempt("plant_file", lambda: open(d + "/planted", "w"))
s = socket.socket(socket.AF_UNIX)
attempt("connect", lambda: s.connect(d + "/proxy.sock"))`,
        [dir],
      );
      assertEquals(out, {
        rename_dir: "EPERM", // sticky tmp dir, and nobody owns neither it nor the directory
        chmod_dir: "EPERM",
        list_dir: "EACCES",
        unlink_socket: "EACCES",
        plant_file: "EACCES",
        connect: "EACCES",
      });
      assert(Deno.statSync(`${dir}/proxy.sock`).isSocket, "the socket is where it was");
    }),
);

uidTest(
  "as root, a policy whose host uid is an account's (nobody) is refused before anything runs",
  ROOT ? undefined : NOT_ROOT,
  async () => {
    const error = await assertRejects(
      () =>
        withWorkspace((workspace) =>
          exec({ workspace, sandboxUid: NOBODY, sandboxGid: NOBODY }, ["true"])
        ),
      SandboxHostIdError,
    );
    assertEquals(error.code, "sandbox.host_id");
    assertMatch(error.message, /uid 65534 belongs to account "nobody" \(\/etc\/passwd\)/);
    assertMatch(error.message, /sandboxUid\/sandboxGid/);
  },
);

uidTest(
  "unprivileged, sandbox root is the invoker on the host (the documented mapping)",
  ROOT ? "the unprivileged mapping applies to non-root invokers only" : undefined,
  () =>
    withSleepingSandbox({}, (pid) => {
      const { uid, gid } = hostIds(pid);
      assertEquals(uidMap(pid), ["0", String(Deno.uid()), "1"]);
      assertEquals(uid, Array(4).fill(Deno.uid()));
      assertEquals(gid, Array(4).fill(Deno.gid()));
      return Promise.resolve();
    }),
);
