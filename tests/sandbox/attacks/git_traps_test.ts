/**
 * ATTACKS F27 (and F23): host git traps beyond `.git/config`. From inside a real sandbox, through
 * the executor, bob plants each trap in his workspace; then the owner runs real git there on
 * the host — `status`, `fetch`, `reset --hard`, `commit`, `diff` … — where every trap would run
 * a canary that leaves a marker, or write outside the workspace. Nothing may appear, and the
 * owner must have been told: the call's outcome, the `workspace.git_neutralised` log event
 * (names, never values) and `coop check`. Then each trap is put back as bob left it and the
 * same git commands run again: the marker (or the write outside) must now appear — the proof
 * that the trap was real and that Coop, not chance, stopped it.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { configure, type LogRecord, reset } from "@logtape/logtape";
import { runCheck } from "../../../src/cli/check_command.ts";
import { type CoopConfig, parseConfig } from "../../../src/config/config.ts";
import { type ToolCall, ToolExecutor } from "../../../src/tools/tool_executor.ts";
import type { GitNeutralised } from "../../../src/workspace/scan_context.ts";
import { usersToml } from "../../fixtures/users_toml.ts";
import { SANDBOX_TESTS } from "../harness.ts";

/** Where the owner's world is, for one run. */
interface Host {
  /** Bob's workspace on the host. */
  ws: string;
  /** Markers land here (outside the workspace). */
  canary: string;
  /** An empty directory outside the workspace that a trap would write into. */
  outside: string;
  /** An owner's repository outside the workspace, with a committed `secret.txt`. */
  ownerRepo: string;
  /** A local HTTP server that asks for a password (credential helpers). */
  httpPort: number;
}

interface Trap {
  name: string;
  /** bob's shell script, run in the sandbox at /work. */
  plant: (h: Host) => string;
  /** The owner's git commands on the host: [directory in the workspace, ...git arguments]. */
  owner: Array<[string, ...string[]]>;
  /** Markers that would appear in `canary` (any one, in the control run). */
  markers: string[];
  /** What the owner must be told of: paths relative to the workspace. */
  told: string[];
  /** A write outside the workspace, checked after the owner's commands (true: it happened). */
  wroteOutside?: (h: Host) => boolean;
  /** Needs a terminal: run under python3's pty. */
  tty?: boolean;
}

const GIT_ID = "-c user.name=bob -c user.email=bob@example.org";
const mark = (h: Host, name: string) => `touch ${h.canary}/${name}; :`;
/** A program git runs without a shell: a script in bob's workspace (whose host path he knows). */
const script = (name: string, h: Host, body = "") =>
  `printf '#!/bin/sh\\ntouch ${h.canary}/${name}\\n${body}' > /work/${name}.sh && ` +
  `chmod +x /work/${name}.sh`;
const repo = (dir: string) =>
  `git init -q ${dir} && cd ${dir} && echo a > a.txt && git add a.txt && ` +
  `git ${GIT_ID} commit -qm init`;

const TRAPS: Trap[] = [
  {
    name: "config.worktree sets core.fsmonitor (git config --worktree)",
    plant: (h) =>
      `${repo("wtcfg")} && git config extensions.worktreeConfig true && ` +
      `git config --worktree core.fsmonitor '${mark(h, "fsmonitor")}'`,
    owner: [["wtcfg", "status"]],
    markers: ["fsmonitor"],
    told: ["wtcfg/.git/config.worktree"],
  },
  {
    name: "remote.origin.uploadpack runs on git fetch",
    plant: (h) =>
      `${repo("upl")} && git config remote.origin.url . && ` +
      `git config remote.origin.uploadpack '${mark(h, "uploadpack")}'`,
    owner: [["upl", "fetch", "origin"]],
    markers: ["uploadpack"],
    told: ["upl/.git/config"],
  },
  {
    name: "core.worktree points outside: git reset --hard writes there",
    plant: (h) => `${repo("wtree")} && git config core.worktree '${h.outside}'`,
    owner: [["wtree", "reset", "-q", "--hard"]],
    markers: [],
    told: ["wtree/.git/config"],
    wroteOutside: (h) => [...Deno.readDirSync(h.outside)].length > 0,
  },
  {
    name: "credential.helper runs when a remote asks for a password",
    plant: (h) =>
      `${repo("cred")} && git config remote.origin.url http://127.0.0.1:${h.httpPort}/r.git && ` +
      `git config credential.helper '!${mark(h, "credential")}'`,
    owner: [["cred", "fetch", "origin"]],
    markers: ["credential"],
    told: ["cred/.git/config"],
  },
  {
    name: "diff.external runs on git diff",
    plant: (h) =>
      `${repo("dext")} && echo b >> a.txt && git config diff.external '${mark(h, "diffext")}'`,
    owner: [["dext", "diff"]],
    markers: ["diffext"],
    told: ["dext/.git/config"],
  },
  {
    name: "a filter chosen by .gitattributes runs on status and reset",
    plant: (h) =>
      `${repo("filt")} && echo '*.txt filter=evil' > .gitattributes && ` +
      `git config filter.evil.clean 'touch ${h.canary}/clean; cat' && ` +
      `git config filter.evil.smudge 'touch ${h.canary}/smudge; cat' && echo b >> a.txt`,
    owner: [["filt", "status"], ["filt", "reset", "-q", "--hard"]],
    markers: ["clean", "smudge"],
    told: ["filt/.git/config"],
  },
  {
    name: "an alias shadows what the owner types",
    plant: (h) => `git init -q al && git -C al config alias.st '!${mark(h, "alias")}'`,
    owner: [["al", "st"]],
    markers: ["alias"],
    told: ["al/.git/config"],
  },
  {
    name: "include.path pulls in another file that sets core.fsmonitor",
    plant: (h) =>
      `printf '[core]\\n\\tfsmonitor = "${mark(h, "include")}"\\n' > /work/evil.inc && ` +
      `${repo("inc")} && git config include.path ../../evil.inc`,
    owner: [["inc", "status"]],
    markers: ["include"],
    told: ["inc/.git/config"],
  },
  {
    name: "a .git file leads to the owner's repository outside the workspace",
    plant: (h) => `mkdir gf && printf 'gitdir: ${h.ownerRepo}/.git\\n' > gf/.git`,
    owner: [["gf", "status"], ["gf", "reset", "-q", "--hard"]],
    markers: [],
    told: ["gf/.git"],
    wroteOutside: (h) => {
      // The owner's secret checked out into bob's workspace, and the owner's index rewritten.
      return existsSync(`${h.ws}/gf/secret.txt`) ||
        Deno.statSync(`${h.ownerRepo}/.git/index`).mtime!.getTime() !== INDEX_MTIME.get(h);
    },
  },
  {
    name: "a hook in a repository bob made runs on commit",
    plant: (h) =>
      `git init -q hk && printf '#!/bin/sh\\ntouch ${h.canary}/hook\\n' > hk/.git/hooks/pre-commit` +
      ` && chmod +x hk/.git/hooks/pre-commit`,
    owner: [["hk", "commit", "-q", "--allow-empty", "-m", "x"]],
    markers: ["hook"],
    told: ["hk/.git/hooks/pre-commit"],
  },
  {
    name: "a repository three levels down (mkdir -p a/b/c && git init a/b/c)",
    plant: (h) =>
      `mkdir -p a/b/c && ${repo("a/b/c")} && git config core.fsmonitor '${mark(h, "deep")}'`,
    owner: [["a/b/c", "status"]],
    markers: ["deep"],
    told: ["a/b/c/.git/config"],
  },
  {
    name: "core.sshCommand runs on fetch from an ssh remote",
    plant: (h) =>
      `${repo("ssh")} && git config remote.origin.url ssh://example.invalid/r.git && ` +
      `git config core.sshCommand 'touch ${h.canary}/ssh; false'`,
    owner: [["ssh", "fetch", "origin"]],
    markers: ["ssh"],
    told: ["ssh/.git/config"],
  },
  {
    name: "core.hooksPath points at hooks in the working tree",
    plant: (h) =>
      `${repo("hp")} && mkdir myhooks && ` +
      `printf '#!/bin/sh\\ntouch ${h.canary}/hookspath\\n' > myhooks/pre-commit && ` +
      `chmod +x myhooks/pre-commit && git config core.hooksPath myhooks`,
    owner: [["hp", "commit", "-q", "--allow-empty", "-m", "x"]],
    markers: ["hookspath"],
    told: ["hp/.git/config"],
  },
  {
    name: "an ext:: remote, allowed by protocol.ext.allow",
    plant: (h) =>
      `${repo("ext")} && git config remote.origin.url 'ext::sh -c touch% ${h.canary}/ext' && ` +
      `git config protocol.ext.allow always`,
    owner: [["ext", "fetch", "origin"]],
    markers: ["ext"],
    told: ["ext/.git/config"],
  },
  {
    name: "core.pager runs when the owner reads the log in a terminal",
    plant: (h) => `${repo("pg")} && git config core.pager 'touch ${h.canary}/pager; cat'`,
    owner: [["pg", "log"]],
    markers: ["pager"],
    told: ["pg/.git/config"],
    tty: true,
  },
  {
    name: "a bare repository's alias",
    plant: (h) =>
      `git init -q --bare srv.git && git -C srv.git config alias.st '!${mark(h, "bare")}'`,
    owner: [["srv.git", "st"]],
    markers: ["bare"],
    told: ["srv.git/config"],
  },
  {
    name: "gpg.program runs on a commit commit.gpgSign asks to sign",
    plant: (h) =>
      `${script("gpg", h, "exit 1\\n")} && ${repo("gpg")} && ` +
      `git config gpg.program '${h.ws}/gpg.sh' && git config commit.gpgSign true`,
    owner: [["gpg", "commit", "-q", "--allow-empty", "-m", "x"]],
    markers: ["gpg"],
    told: ["gpg/.git/config"],
  },
  {
    name: "core.editor runs on a commit without -m",
    plant: (h) => `${repo("ed")} && git config core.editor '${mark(h, "editor")}'`,
    owner: [["ed", "commit", "-q", "--allow-empty"]],
    markers: ["editor"],
    told: ["ed/.git/config"],
  },
  {
    name: "a diff textconv chosen by .gitattributes",
    plant: (h) =>
      `${repo("tc")} && echo '*.txt diff=evil' > .gitattributes && ` +
      `git config diff.evil.textconv 'touch ${h.canary}/textconv; cat' && echo b >> a.txt`,
    owner: [["tc", "diff"]],
    markers: ["textconv"],
    told: ["tc/.git/config"],
  },
  {
    name: "core.gitProxy runs on fetch from a git:// remote",
    plant: (h) =>
      `${script("gitproxy", h)} && ${repo("gp")} && ` +
      `git config remote.origin.url git://example.invalid/r.git && ` +
      `git config core.gitProxy '${h.ws}/gitproxy.sh'`,
    owner: [["gp", "fetch", "origin"]],
    markers: ["gitproxy"],
    told: ["gp/.git/config"],
  },
];

const INDEX_MTIME = new Map<Host, number>();

/**
 * The owner's git on the host: no global or system config, no editor or pager from the env.
 * Asynchronous: the password-asking server runs on this event loop.
 */
async function ownerGit(h: Host, cwd: string, args: string[], tty = false): Promise<string> {
  const argv = tty
    ? ["python3", "-c", "import pty, sys; pty.spawn(sys.argv[1:])", "git", ...args]
    : ["git", ...args];
  const r = await new Deno.Command(argv[0], {
    args: argv.slice(1),
    cwd: join(h.ws, cwd),
    clearEnv: true,
    env: {
      PATH: "/usr/local/bin:/usr/bin:/bin",
      HOME: join(h.canary, "..", "home"),
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_TERMINAL_PROMPT: "0",
      GIT_AUTHOR_NAME: "owner",
      GIT_AUTHOR_EMAIL: "owner@example.org",
      GIT_COMMITTER_NAME: "owner",
      GIT_COMMITTER_EMAIL: "owner@example.org",
      TERM: "dumb",
      // What the owner's own settings would be; a trap's core.pager or core.editor beats them.
      PAGER: "cat",
      EDITOR: "false",
    },
    stdin: "null",
    signal: AbortSignal.timeout(30_000),
  }).output();
  return new TextDecoder().decode(r.stdout) + new TextDecoder().decode(r.stderr);
}

/** Runs a trap's owner commands. */
async function runOwner(h: Host, trap: Trap): Promise<void> {
  for (const [cwd, ...args] of trap.owner) await ownerGit(h, cwd, args, trap.tty);
}

function markersIn(h: Host): string[] {
  return [...Deno.readDirSync(h.canary)].map((e) => e.name).sort();
}

/** Puts back what Coop set aside, as bob left it. */
function restore(records: GitNeutralised[]): void {
  for (const n of records) {
    if (existsSync(n.path)) Deno.removeSync(n.path);
    Deno.renameSync(n.keptAs, n.path);
    if (n.kind === "hook") Deno.chmodSync(n.path, 0o755);
  }
}

function call(config: CoopConfig, command: string): ToolCall {
  const user = config.users.find((u) => u.name === "bob")!;
  return {
    principal: { name: "bob", trust: "inner" },
    situation: { channel: "http", ceiling: null, contributors: [] },
    user,
    tool: "bash",
    args: { command },
  };
}

const HAVE_PYTHON = existsSync("/usr/bin/python3");

Deno.test({
  name: "§4.1 F27: host git traps a sandboxed user plants are neutralised, and the owner is told",
  ignore: !SANDBOX_TESTS,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-f27-" }));
    await Deno.chmod(base, 0o755); // the sandbox's uid must reach the workspace, as in use
    const records: LogRecord[] = [];
    await configure({
      reset: true,
      sinks: { memory: (record) => records.push(record) },
      loggers: [
        { category: ["coop"], lowestLevel: "info", sinks: ["memory"] },
        { category: ["logtape", "meta"], lowestLevel: "error", sinks: [] },
      ],
    });
    // A server that asks for a password: what makes git call a credential helper.
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      () =>
        new Response("auth", { status: 401, headers: { "WWW-Authenticate": 'Basic realm="x"' } }),
    );
    try {
      const file = join(base, "coop.toml");
      const text = usersToml([["alice", "owner"], ["bob", "inner"]]);
      await Deno.writeTextFile(file, text);
      const config = parseConfig(text, file, base);
      const executor = new ToolExecutor(config);
      const h: Host = {
        ws: join(base, "ws", "bob"),
        canary: join(base, "canary"),
        outside: join(base, "outside"),
        ownerRepo: join(base, "owner-repo"),
        httpPort: server.addr.port,
      };
      for (const dir of [h.canary, h.outside, h.ownerRepo, join(base, "home")]) {
        await Deno.mkdir(dir);
      }
      await Deno.writeTextFile(join(h.ownerRepo, "secret.txt"), "the owner's secret\n");
      const made = new Deno.Command("sh", {
        args: ["-c", `git init -q && git add secret.txt && git ${GIT_ID} commit -qm s`],
        cwd: h.ownerRepo,
        env: { GIT_CONFIG_NOSYSTEM: "1", HOME: join(base, "home") },
      }).outputSync();
      ok(made.success, new TextDecoder().decode(made.stderr));
      INDEX_MTIME.set(h, Deno.statSync(`${h.ownerRepo}/.git/index`).mtime!.getTime());

      const planted = new Map<Trap, GitNeutralised[]>();
      for (const trap of TRAPS) {
        await t.step({
          name: `F27 ${trap.name}`,
          ignore: trap.tty && !HAVE_PYTHON,
          sanitizeOps: false,
          sanitizeResources: false,
          fn: async () => {
            const r = await executor.call(call(config, `${trap.plant(h)} && echo planted`));
            ok(r.content.includes("planted"), `bob could plant it: ${r.content}`);
            // The owner, the user and the model are told.
            const told = (r.gitNeutralised ?? []).map((n) => n.path.slice(h.ws.length + 1));
            ok(trap.told.every((p) => told.includes(p)), `told ${told} ⊇ ${trap.told}`);
            ok(r.content.includes("[coop] Disabled git settings"), r.content);
            planted.set(trap, r.gitNeutralised!);
            await runOwner(h, trap);
            deepStrictEqual(markersIn(h), [], "no canary ran as the owner");
            strictEqual(trap.wroteOutside?.(h) ?? false, false, "nothing written outside");
          },
        });
      }

      await t.step(
        "F27: every neutralisation was logged as workspace.git_neutralised, no values",
        () => {
          const logged = records.filter((r) => r.properties.event === "workspace.git_neutralised");
          const all = [...planted.values()].flat();
          strictEqual(logged.length, all.length);
          for (const record of logged) {
            strictEqual(record.properties.principal, "bob");
            strictEqual(record.level, "warning");
            ok(!JSON.stringify(record.properties).includes(h.canary), "no config value in the log");
          }
        },
      );

      await t.step("F27: coop check lists what was set aside", async () => {
        let output = "";
        const code = await runCheck(["--config", file, "--json"], {
          probe: () => Promise.resolve({ available: true, detail: "test" }),
          write: (chunk) => (output += chunk),
          env: () => undefined,
        });
        const report = JSON.parse(output) as { autoexec: { path: string; what: string }[] };
        ok(code === 0 || code === 1, output);
        const listed = report.autoexec.filter((f) => f.what.includes("set aside by Coop"));
        for (const n of [...planted.values()].flat()) {
          ok(listed.some((f) => f.path === n.keptAs), `coop check lists ${n.keptAs}`);
        }
      });

      // Control: as bob left it, each trap fires — the protection above is real.
      for (const [trap, records] of planted) {
        await t.step({
          name: `control, without Coop: ${trap.name}`,
          sanitizeOps: false,
          sanitizeResources: false,
          fn: async () => {
            restore(records);
            await runOwner(h, trap);
            const fired = trap.markers.some((m) => markersIn(h).includes(m)) ||
              (trap.wroteOutside?.(h) ?? false);
            ok(fired, `the trap fires without Coop (markers ${markersIn(h)})`);
          },
        });
      }
    } finally {
      await server.shutdown();
      await reset();
      await Deno.remove(base, { recursive: true });
    }
  },
});

Deno.test({
  name: "§4.1 F27: bob's safe git settings survive the rewrite, on the host and in his sandbox",
  ignore: !SANDBOX_TESTS,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-f27-safe-" }));
    await Deno.chmod(base, 0o755);
    try {
      const file = join(base, "coop.toml");
      const text = usersToml([["alice", "owner"], ["bob", "inner"]]);
      const config = parseConfig(text, file, base);
      const executor = new ToolExecutor(config);
      const r = await executor.call(call(
        config,
        `${
          repo("app")
        } && git config user.name 'Bob B' && git config user.email b@example.org && ` +
          "git remote add origin https://example.org/bob/app.git && " +
          "git config branch.master.remote origin && " +
          "git config branch.master.merge refs/heads/master && git config pull.rebase true && " +
          "git config core.fsmonitor 'touch /tmp/x' && echo planted",
      ));
      ok(r.content.includes("planted"), r.content);
      deepStrictEqual(r.gitNeutralised?.map((n) => n.keys), [["core.fsmonitor"]]);
      // bob's next command sees his settings as he set them.
      const again = await executor.call(call(
        config,
        "cd app && git config user.name && git remote get-url origin && " +
          "git config branch.master.merge && git config pull.rebase && " +
          "(git config core.fsmonitor || echo no-fsmonitor)",
      ));
      strictEqual(
        again.content,
        "Bob B\nhttps://example.org/bob/app.git\nrefs/heads/master\ntrue\nno-fsmonitor\n" +
          "[exit code 0]",
      );
      strictEqual(again.gitNeutralised, undefined, "nothing new to disable");
    } finally {
      await Deno.remove(base, { recursive: true });
    }
  },
});
