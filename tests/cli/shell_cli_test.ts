// `coop shell` and `coop run` driven through a real pseudo-terminal: util-linux `script -qec
// CMD /dev/null` gives CMD a pty of its own as its controlling terminal (a new session), as an
// owner's terminal emulator would, and works the same as root and as an unprivileged user. The
// test types into script's stdin and reads the pty's output from script's stdout; it resizes
// that outer pty with `stty -F` (the kernel then sends SIGWINCH to coop, its foreground
// process) and compares its `stty -g` before and after coop ran.
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { existsSync } from "node:fs";
import { hostProcessesWith, markedSleep, sandboxTest, until } from "../sandbox/harness.ts";
import { pairPerson } from "../fixtures/paired_person.ts";
import { buildTestBase, writeBuiltManifest } from "../environments/environment_fixture.ts";
import { environmentPaths } from "../../src/environments/environment_layout.ts";
import { sessionUpper } from "../../src/environments/environment_mounts.ts";
import { resetUser } from "../../src/environments/environment_lifecycle.ts";
import { upperLocker } from "../../src/environments/layer_removal.ts";

const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
const HAS_SCRIPT = (() => {
  try {
    return Deno.statSync("/usr/bin/script").isFile;
  } catch {
    return false;
  }
})();
const SKIP = HAS_SCRIPT ? "" : " — skipped: needs util-linux script in /usr/bin";

const CONFIG = `
[agent]
workspace = "ws"
state_dir = "state"
[[users]]
name = "bob"
trust = "inner"
match = ["http:bob"]
`;

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
const COOP = [Deno.execPath(), "run", "--allow-all", "--quiet", MAIN].map(quote).join(" ");

/** One `script` session: a shell on a fresh pty that records the pty's settings around `coop`. */
interface Session {
  dir: string;
  child: Deno.ChildProcess;
  type(keys: string): Promise<void>;
  output(): string;
  waitFor(pattern: RegExp, ms?: number): Promise<void>;
  /** `stty -g` of the outer pty before coop started and after it ended. */
  settings(): Promise<{ before: string; after: string }>;
}

async function session(coopArgs: string): Promise<Session> {
  const dir = await Deno.makeTempDir({ prefix: "coop-shell-cli-" });
  await Deno.writeTextFile(join(dir, "coop.toml"), CONFIG);
  const inner = `cd ${quote(dir)}; tty > tty; stty rows 30 cols 90; stty -g > before; ` +
    `${COOP} ${coopArgs}; echo "coop-exit=$?"; stty -g > after; stty size > size; sleep 0.2`;
  const child = new Deno.Command("script", {
    args: ["-qec", `sh -c ${quote(inner)}`, "/dev/null"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    env: { TERM: "xterm" },
  }).spawn();
  let text = "";
  const waiters = new Set<() => void>();
  void (async () => {
    for await (const chunk of child.stdout) {
      text += new TextDecoder().decode(chunk);
      for (const waiter of waiters) waiter();
    }
  })();
  void child.stderr.pipeTo(new WritableStream());
  const writer = child.stdin.getWriter();
  const s: Session = {
    dir,
    child,
    type: (keys) => writer.write(new TextEncoder().encode(keys)),
    output: () => text,
    waitFor(pattern, ms = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!pattern.test(text)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no ${pattern} in ${JSON.stringify(text)}`));
        }, ms);
        waiters.add(check);
        check();
      });
    },
    async settings() {
      // Written right after coop-exit= is shown.
      await s.child.status;
      const read = (name: string) => Deno.readTextFile(join(dir, name)).then((s) => s.trim());
      return { before: await read("before"), after: await read("after") };
    },
  };
  return s;
}

async function finish(s: Session): Promise<void> {
  // A failed test may leave coop running: script's end hangs up its pty, which ends it.
  try {
    s.child.kill("SIGKILL");
  } catch {
    // already gone
  }
  await s.child.status;
  await Deno.remove(s.dir, { recursive: true }).catch(() => {});
}

/** Host pids of the processes below `root` (children first found, recursively). */
function descendants(root: number): { pid: number; cmdline: string }[] {
  const parents = new Map<number, number>();
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      parents.set(Number(entry.name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // exited while we looked
    }
  }
  const found: { pid: number; cmdline: string }[] = [];
  const walk = (pid: number) => {
    for (const [child, parent] of parents) {
      if (parent !== pid) continue;
      try {
        const cmdline = Deno.readTextFileSync(`/proc/${child}/cmdline`).replaceAll("\0", " ");
        found.push({ pid: child, cmdline });
      } catch {
        // gone
      }
      walk(child);
    }
  };
  walk(root);
  return found;
}

const PROMPT = /bob@coop:[^\r\n]*[#$] $/;

sandboxTest({
  name:
    `coop shell --user bob: prompt, the sandbox, resize, Ctrl-Z, Ctrl-C, exit status, terminal restored${SKIP}`,
  ignore: !HAS_SCRIPT,
}, async () => {
  const s = await session("shell --user bob");
  try {
    await s.waitFor(PROMPT);
    await s.type("echo id=$(id -u) host=$(hostname) cwd=$(pwd)\n");
    await s.waitFor(/id=0 host=coop cwd=\/work/);
    await s.type("stty size\n");
    await s.waitFor(/[\r\n]30 90\r\n/);
    // The owner's terminal changes size: coop gets SIGWINCH and resizes the program's pty.
    const outer = (await Deno.readTextFile(join(s.dir, "tty"))).trim();
    const stty = await new Deno.Command("stty", {
      args: ["-F", outer, "rows", "40", "cols", "100"],
    })
      .output();
    assert(stty.success, new TextDecoder().decode(stty.stderr));
    await s.type("stty size\n");
    await s.waitFor(/[\r\n]40 100\r\n/);
    // Ctrl-Z stops the foreground job (bash has job control on its pty); it can be killed.
    await s.type("sleep 101\n");
    assert(
      await until(() => descendants(s.child.pid).some((p) => p.cmdline === "sleep 101 "), 10_000),
      "sleep did not start",
    );
    await s.type("\x1a");
    await s.waitFor(/Stopped\s+sleep 101/);
    await s.type("kill -9 %1\n");
    assert(
      await until(() => !descendants(s.child.pid).some((p) => p.cmdline === "sleep 101 "), 10_000),
      "the stopped job was not killed",
    );
    // Ctrl-C reaches sleep through the program's pty; the shell lives on.
    await s.type("sleep 100\n");
    assert(
      await until(() => descendants(s.child.pid).some((p) => p.cmdline === "sleep 100 "), 10_000),
      "sleep did not start",
    );
    const interrupted = s.output().length;
    await s.type("\x03");
    // What the shell prints, not the pty's echo of what was typed (which would match at once,
    // while sleep may still be dying): the shell runs it only once it has reaped sleep.
    await s.type("echo alive-after-$((6 * 7))\n");
    await s.waitFor(/alive-after-42\r\n/);
    assert(s.output().slice(interrupted).includes("^C"), s.output().slice(interrupted));
    assert(!descendants(s.child.pid).some((p) => p.cmdline === "sleep 100 "));
    await s.type("exit 3\n");
    await s.waitFor(/coop-exit=3/);
    const { before, after } = await s.settings();
    assertEquals(after, before, "the owner's terminal settings were not restored");
  } finally {
    await finish(s);
  }
});

sandboxTest({
  name: `coop shell: the program killed with SIGKILL from outside; terminal restored${SKIP}`,
  ignore: !HAS_SCRIPT,
}, async () => {
  const s = await session("shell --user bob");
  try {
    await s.waitFor(PROMPT);
    const shell = descendants(s.child.pid).find((p) => /^\/bin\/(ba)?sh -i $/.test(p.cmdline));
    assert(shell, JSON.stringify(descendants(s.child.pid)));
    Deno.kill(shell.pid, "SIGKILL");
    await s.waitFor(/coop-exit=137/);
    const { before, after } = await s.settings();
    assertEquals(after, before);
  } finally {
    await finish(s);
  }
});

sandboxTest({
  name: `coop run on a terminal: /dev/tty and kill -HUP 0 reach only the program's pty (T4)${SKIP}`,
  ignore: !HAS_SCRIPT,
}, async () => {
  const s = await session(
    `run --user bob -- sh -c ${
      quote("stty -F /dev/tty rows 3 cols 5 -echo; stty size; kill -HUP 0; echo survived")
    }`,
  );
  try {
    await s.waitFor(/coop-exit=\d+/);
    assertMatch(s.output(), /(^|\n)3 5\r\n/);
    assert(!s.output().includes("survived"));
    assertMatch(s.output(), /coop-exit=129/);
    const { before, after } = await s.settings();
    assertEquals(after, before, "the program reached the owner's terminal");
    // The outer pty keeps its size: stty -F /dev/tty inside changed the program's pty only.
    assertEquals((await Deno.readTextFile(join(s.dir, "size"))).trim(), "30 90");
  } finally {
    await finish(s);
  }
});

sandboxTest({
  name: `coop run: SIGTERM to coop ends the sandbox and restores the terminal${SKIP}`,
  ignore: !HAS_SCRIPT,
}, async () => {
  // A marked sleep, found by its command line on the whole host: once coop and script have
  // exited it is no one's descendant any more, and only a search by marker can still see it.
  const marker = markedSleep(100);
  const sleeping = () =>
    hostProcessesWith(marker).filter((pid) => {
      try {
        return Deno.readTextFileSync(`/proc/${pid}/cmdline`).startsWith("sleep\0");
      } catch {
        return false;
      }
    });
  const s = await session(`run --user bob -- sh -c ${quote(`echo ready; ${marker}`)}`);
  try {
    await s.waitFor(/ready/);
    assert(await until(() => sleeping().length > 0, 10_000), "the sandbox's sleep never ran");
    const coop = descendants(s.child.pid).find((p) => p.cmdline.includes(`${MAIN} run`));
    assert(coop);
    Deno.kill(coop.pid, "SIGTERM");
    await s.waitFor(/coop-exit=143/);
    const { before, after } = await s.settings();
    assertEquals(after, before);
    assert(await until(() => sleeping().length === 0, 10_000), "the sandbox's sleep outlived coop");
  } finally {
    await finish(s);
  }
});

/** Runs coop without a terminal (stdin a pipe). */
async function coopPiped(dir: string, args: string[], input: string) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--quiet", MAIN, ...args],
    cwd: dir,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(input));
  await writer.close();
  const out = await child.output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

sandboxTest("coop run without a terminal: pipes, stdin through, the command's status", async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-run-cli-" });
  try {
    await Deno.writeTextFile(join(dir, "coop.toml"), CONFIG);
    const r = await coopPiped(
      dir,
      ["run", "--user", "bob", "--", "sh", "-c", "cat; test -t 0 || echo no-tty; exit 7"],
      "piped-in\n",
    );
    assertEquals(r.code, 7, r.stderr);
    assertEquals(r.stdout, "piped-in\nno-tty\n");
    // The same sandbox the bash tool gets: bob's own directory of the workspace is /work.
    const file = await coopPiped(dir, ["run", "--user", "bob", "--", "sh", "-c", "echo x > f"], "");
    assertEquals(file.code, 0, file.stderr);
    assertEquals(await Deno.readTextFile(join(dir, "ws", "bob", "f")), "x\n");
    const timeout = await coopPiped(
      dir,
      ["run", "--user", "bob", "--timeout", "300ms", "--", "sleep", "30"],
      "",
    );
    assertEquals(timeout.code, 124);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("coop shell refuses the owner, and an unknown user, with 125 and the reason", async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-run-cli-" });
  try {
    await Deno.writeTextFile(join(dir, "coop.toml"), CONFIG);
    // The terminal's user is the owner unless [channels.terminal] user says otherwise.
    const owner = await coopPiped(dir, ["shell"], "");
    assertEquals(owner.code, 125);
    assertMatch(owner.stderr, /has trust owner: the owner's commands run on the host/);
    const unknown = await coopPiped(dir, ["run", "--user", "zed", "--", "true"], "");
    assertEquals(unknown.code, 125);
    assertMatch(unknown.stderr, /nor paired person is named "zed" \(known: bob\)/);
    const usage = await coopPiped(dir, ["run", "--user", "bob"], "");
    assertEquals(usage.code, 2);
    assertMatch(usage.stderr, /run needs a command after --/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

sandboxTest("coop run --user accepts a paired person: their sandbox, their workspace", async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-run-paired-" });
  try {
    await Deno.writeTextFile(join(dir, "coop.toml"), CONFIG);
    pairPerson(join(dir, "state"), {
      channel: "telegram",
      sender: "777",
      name: "erin",
      trust: "inner",
    });
    const r = await coopPiped(
      dir,
      ["run", "--user", "erin", "--", "sh", "-c", "echo x > f; id -u"],
      "",
    );
    assertEquals(r.code, 0, r.stderr);
    // Erin's own directory of the workspace is /work, as her bash tool's is.
    assertEquals(await Deno.readTextFile(join(dir, "ws", "erin", "f")), "x\n");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

sandboxTest(
  "coop run enters the person's environment; without a command it starts its [agent] command",
  async () => {
    const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-run-env-" }));
    // The sandbox's root (a dedicated uid when root runs the tests) must reach what it mounts.
    await Deno.chmod(dir, 0o755);
    try {
      await Deno.writeTextFile(
        join(dir, "coop.toml"),
        CONFIG.replace(
          'state_dir = "state"\n',
          'state_dir = "state"\n[sandbox]\nenvironment = "Coopfile"\n',
        ),
      );
      const coopfile = join(dir, "Coopfile");
      await Deno.writeTextFile(
        coopfile,
        '[base]\nimage = "debian:bookworm"\n[agent]\ncommand = ["sh", "-c", "echo agent-started"]\n',
      );
      const unbuilt = await coopPiped(dir, ["run", "--user", "bob", "--", "true"], "");
      assertEquals(unbuilt.code, 125, "an unbuilt base: nothing runs");
      assertMatch(unbuilt.stderr, /coop init/);
      assert(!unbuilt.stderr.includes("    at "), `no stack trace: ${unbuilt.stderr}`);

      buildTestBase(join(dir, "state"), coopfile);
      const write = await coopPiped(
        dir,
        [
          "run",
          "--user",
          "bob",
          "--",
          "sh",
          "-c",
          "mkdir -p /usr/local && echo mine > /usr/local/note",
        ],
        "",
      );
      assertEquals(write.code, 0, write.stderr);
      const read = await coopPiped(
        dir,
        ["run", "--user", "bob", "--", "cat", "/usr/local/note"],
        "",
      );
      assertEquals(read.stdout, "mine\n", "bob's environment kept what he installed");
      assert(
        !existsSync("/usr/local/note") || Deno.readTextFileSync("/usr/local/note") !== "mine\n",
        "the host's /usr is untouched",
      );
      const agent = await coopPiped(dir, ["run", "--user", "bob"], "");
      assertEquals(agent.code, 0, agent.stderr);
      assertEquals(agent.stdout, "agent-started\n");
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
);

sandboxTest(
  'coop run with upper = "session": a throwaway layer by default, a chat\'s with --session',
  async () => {
    const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-run-session-" }));
    // The sandbox's root (a dedicated uid when root runs the tests) must reach what it mounts.
    await Deno.chmod(dir, 0o755);
    const stateDir = join(dir, "state");
    try {
      await Deno.writeTextFile(
        join(dir, "coop.toml"),
        CONFIG.replace(
          'state_dir = "state"\n',
          'state_dir = "state"\n[sandbox]\nenvironment = "Coopfile"\n',
        ),
      );
      const coopfile = join(dir, "Coopfile");
      await Deno.writeTextFile(coopfile, '[base]\nimage = "host"\n[session]\nupper = "session"\n');
      writeBuiltManifest(stateDir, coopfile);
      const paths = environmentPaths(stateDir, coopfile);
      const write = "mkdir -p /usr/local && echo mine > /usr/local/note && echo $COOP_SESSION";
      const read = "cat /usr/local/note 2>&1; true";

      // Without --session: a fresh layer of its own, said so, and gone once it exits.
      const own = await coopPiped(dir, ["run", "--user", "bob", "--", "sh", "-c", write], "");
      assertEquals(own.code, 0, own.stderr);
      assertMatch(own.stdout, /^run-[\w-]+\n$/);
      assertMatch(own.stderr, /a fresh layer of its own, discarded when it exits/);
      assertEquals([...Deno.readDirSync(join(paths.root, "uppers/bob/sessions"))], []);

      // --session CHANNEL:ID: that chat session's layer, kept for the chat (as its turns get it).
      const chat = ["run", "--user", "bob", "--session", "telegram:tg4242", "--"];
      const inChat = await coopPiped(dir, [...chat, "sh", "-c", write], "");
      assertEquals(inChat.code, 0, inChat.stderr);
      assertEquals(inChat.stdout, "tg4242\n");
      const layer = sessionUpper(paths, "bob", { channel: "telegram", id: "tg4242" });
      assert(existsSync(join(layer.upper, "usr/local/note")), "written to the chat's layer");
      const again = await coopPiped(dir, [...chat, "sh", "-c", read], "");
      assertEquals(again.stdout, "mine\n", "the chat's layer is kept");
      const other = await coopPiped(dir, ["run", "--user", "bob", "--", "sh", "-c", read], "");
      assertMatch(other.stdout, /No such file or directory/, "another session does not see it");

      const bad = await coopPiped(dir, [
        "run",
        "--user",
        "bob",
        "--session",
        "tg4242",
        "--",
        "true",
      ], "");
      assertEquals(bad.code, 2);
      assertMatch(bad.stderr, /--session "tg4242": expected CHANNEL:ID/);
    } finally {
      resetUser(stateDir, "bob", true, await upperLocker());
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
);
