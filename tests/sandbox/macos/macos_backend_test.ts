/**
 * The macOS backends, driven on Linux: generated SBPL profiles and argument lists against
 * golden files, and fake `sandbox-exec` / `container` tools (fake_tools.ts) for status, exec,
 * timeout and the failure paths. The platform is injected as an argument (never an env var).
 */
import { assert, assertEquals, assertMatch, assertRejects } from "../../assert.ts";
import { exec } from "../../../src/sandbox/exec.ts";
import { probe } from "../../../src/sandbox/probe.ts";
import { sandboxExecProfile } from "../../../src/sandbox/macos_profile.ts";
import { sandboxExecArgs } from "../../../src/sandbox/macos_sandbox_exec.ts";
import {
  containerExecArgs,
  containerName,
  containerRunArgs,
} from "../../../src/sandbox/macos_container.ts";
import { resolvePolicy } from "../../../src/sandbox/policy.ts";
import { SandboxLimitError, SandboxUnavailableError } from "../../../src/sandbox/errors.ts";
import { renderStatus } from "../../../src/cli/sandbox_command.ts";
import { fakeTools } from "./fake_tools.ts";
import { until } from "../harness.ts";

/** Asserts `fn` rejects with `type` and a message containing `text`. */
async function rejectsWith<E extends Error>(
  fn: () => Promise<unknown>,
  type: new (...args: never[]) => E,
  text: string,
): Promise<void> {
  const error = await assertRejects(fn, type);
  assert(error.message.includes(text), `"${text}" not in: ${error.message}`);
}

const GOLDEN = new URL("../../fixtures/macos/", import.meta.url);
const UPDATE = Deno.env.get("COOP_UPDATE_GOLDEN") === "1";

async function golden(name: string, actual: string): Promise<void> {
  const url = new URL(name, GOLDEN);
  if (UPDATE) await Deno.writeTextFile(url, actual);
  assertEquals(actual, await Deno.readTextFile(url), `golden file ${name}`);
}

const WS = "/Users/bob/coop/workspace/bob";
const TMP = "/private/var/folders/zz/T/coop-tmp-abc123";

Deno.test("SBPL profile: deny by default; workspace rw; system read-only; protected paths neither writable nor movable; no network", async () => {
  await golden(
    "profile_none.sb",
    sandboxExecProfile({
      workspace: WS,
      tmpDir: TMP,
      protectedPaths: [`${WS}/.git`, `${WS}/project/.git`],
      network: "none",
    }),
  );
});

Deno.test("SBPL profile (ATTACKS.md M3, F7): renaming a directory above a protected path, or the workspace, is denied", () => {
  const profile = sandboxExecProfile({
    workspace: WS,
    tmpDir: TMP,
    protectedPaths: [`${WS}/project/.git`, `${WS}/a/b/.git`],
    network: "none",
  });
  // rename(2) is a file-write-unlink of its source: `mv project p2` would carry project/.git out
  // of the path-based deny, `mv $WS $TMPDIR/x` the whole workspace.
  const pinned = profile.split("\n").find((line) =>
    line.startsWith("(deny file-write-unlink (literal")
  );
  assertEquals(
    pinned,
    `(deny file-write-unlink (literal "${WS}") (literal "${WS}/a") (literal "${WS}/a/b") ` +
      `(literal "${WS}/project"))`,
  );
  const bare = sandboxExecProfile({
    workspace: WS,
    tmpDir: TMP,
    protectedPaths: [],
    network: "none",
  });
  assert(bare.includes(`(deny file-write-unlink (literal "${WS}"))`), "the workspace is pinned");
});

Deno.test("SBPL profile (ATTACKS.md M1, M2): no Apple Events, no LaunchServices, one Mach service", () => {
  for (const network of ["none", "host"] as const) {
    const profile = sandboxExecProfile({ workspace: WS, tmpDir: TMP, protectedPaths: [], network });
    assert(profile.startsWith("(version 1)\n(deny default)\n"), "deny by default comes first");
    for (const operation of ["appleevent-send", "lsopen", "mach-register", "(allow default"]) {
      assert(!profile.includes(operation), `${operation} is never allowed`);
    }
    assertEquals(
      profile.match(/\(global-name "[^"]+"\)/g),
      ['(global-name "com.apple.system.opendirectoryd.libinfo")'],
      "the only Mach service: user and group lookups (not the keychain, pasteboard or trustd)",
    );
  }
});

Deno.test("SBPL profile: network proxy allows only the proxy's loopback port; host allows the host's", async () => {
  const base = { workspace: WS, tmpDir: TMP, protectedPaths: [] };
  await golden(
    "profile_proxy.sb",
    sandboxExecProfile({ ...base, network: "proxy", proxyPort: 41823 }),
  );
  await golden("profile_host.sb", sandboxExecProfile({ ...base, network: "host" }));
});

Deno.test("SBPL profile: quotes and backslashes in a path are escaped; a newline is refused", () => {
  const profile = sandboxExecProfile({
    workspace: '/Users/o"brien\\ws',
    tmpDir: TMP,
    protectedPaths: [],
    network: "none",
  });
  assertMatch(profile, /\(subpath "\/Users\/o\\"brien\\\\ws"\)/);
  let error: unknown;
  try {
    sandboxExecProfile({
      workspace: "/Users/x\n(allow default)",
      tmpDir: TMP,
      protectedPaths: [],
      network: "none",
    });
  } catch (e) {
    error = e;
  }
  assert(error instanceof RangeError);
});

Deno.test("argument lists: sandbox-exec, container run and container exec match their golden files", async () => {
  const policy = resolvePolicy({ workspace: WS, memoryBytes: 2 * 1024 ** 3, cpus: 2 });
  const name = containerName(WS);
  assertEquals(name, containerName(WS), "one VM per workspace, found again by name");
  const lists = {
    sandboxExec: sandboxExecArgs(
      "(version 1)\n(deny default)\n",
      resolvePolicy({ workspace: WS }),
      ["sh", "-c", "echo hi"],
    ),
    containerRun: containerRunArgs(policy, WS, name),
    containerExec: containerExecArgs(name, ["PATH=/usr/bin:/bin", "HOME=/work"], [
      "sh",
      "-c",
      "echo hi",
    ], true),
  };
  await golden("arguments.json", JSON.stringify(lists, null, 2) + "\n");
});

async function withWorkspace<T>(fn: (workspace: string) => Promise<T>): Promise<T> {
  const workspace = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-macos-ws-" }));
  try {
    return await fn(workspace);
  } finally {
    await Deno.remove(workspace, { recursive: true });
  }
}

Deno.test("sandbox-exec: exec runs the command under the generated profile with only the allowlisted environment", async () => {
  const fakes = await fakeTools(["sandbox-exec"]);
  Deno.env.set("COOP_MACOS_TEST_SECRET", "s3cret");
  try {
    await withWorkspace(async (workspace) => {
      await Deno.mkdir(`${workspace}/.git`);
      const r = await exec({ workspace }, ["sh", "-c", 'echo "home=$HOME"; pwd'], {
        platform: fakes.platform,
      });
      assertEquals(r.exitCode, 0, r.stderr);
      assertEquals(r.stdout, `home=${workspace}\n${workspace}\n`);
      assertEquals(r.limits.path, "rlimit");
      const [args] = await fakes.calls("sandbox-exec");
      assertEquals(args[0], "-p");
      assertMatch(args[1], /^\(version 1\)\n\(deny default\)\n/);
      assert(args[1].includes(`(allow file-read* file-write* (subpath "${workspace}"))`));
      assert(args[1].includes(`(deny file-write-unlink (subpath "${workspace}/.git"))`));
      assertEquals(args.slice(2, 4), ["--", "/bin/sh"]);
      assertEquals(args.slice(-3), ["sh", "-c", 'echo "home=$HOME"; pwd']);
      const env = await fakes.lastEnv();
      assert(!env.some((line) => line.includes("s3cret")), "a host secret reached the sandbox");
      assert(env.includes(`HOME=${workspace}`));
    });
  } finally {
    Deno.env.delete("COOP_MACOS_TEST_SECRET");
    await fakes.remove();
  }
});

Deno.test("sandbox-exec: a timeout kills the whole process group and reports SIGKILL", async () => {
  const fakes = await fakeTools(["sandbox-exec"]);
  try {
    await withWorkspace(async (workspace) => {
      const started = performance.now();
      const r = await exec(
        { workspace },
        ["sh", "-c", "sleep 30 & echo $! > child.pid; sleep 30"],
        {
          platform: fakes.platform,
          // Long enough for the fake's shell to start and write child.pid on a loaded machine.
          timeoutMs: 3000,
        },
      );
      assertEquals(r.timedOut, true);
      assertEquals(r.signal, "SIGKILL");
      assert(performance.now() - started < 15_000);
      const child = Number((await Deno.readTextFile(`${workspace}/child.pid`)).trim());
      // Gone, or a zombie its new parent has yet to reap: either way it runs no more. The output
      // pipes close while a killed process is still exiting, so give it a moment.
      const stateOf = () => {
        try {
          const stat = Deno.readTextFileSync(`/proc/${child}/stat`);
          return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
        } catch {
          return "gone";
        }
      };
      const dead = () => ["gone", "Z", "X"].includes(stateOf());
      assert(await until(dead, 5_000), `the background child outlived the timeout: ${stateOf()}`);
    });
  } finally {
    await fakes.remove();
  }
});

Deno.test("sandbox-exec: a profile that cannot be applied, and limits it cannot enforce, refuse the command", async () => {
  const fakes = await fakeTools(["sandbox-exec"]);
  try {
    await withWorkspace(async (workspace) => {
      await rejectsWith(
        () => exec({ workspace, memoryBytes: 256 << 20 }, ["true"], { platform: fakes.platform }),
        SandboxLimitError,
        "sandbox-exec cannot enforce",
      );
      await rejectsWith(
        () =>
          exec({ workspace, network: "proxy", allowDomains: ["example.com"] }, ["true"], {
            platform: fakes.platform,
          }),
        SandboxUnavailableError,
        'network "proxy" is not available with sandbox-exec',
      );
      await fakes.fail("apply-fails");
      await rejectsWith(
        () => exec({ workspace }, ["touch", "ran"], { platform: fakes.platform }),
        SandboxUnavailableError,
        "sandbox_apply: Operation not permitted",
      );
      assertEquals(await Deno.stat(`${workspace}/ran`).then(() => true, () => false), false);
    });
  } finally {
    await fakes.remove();
  }
});

Deno.test("status on macOS with sandbox-exec: the backend and what the probe measured", async () => {
  const fakes = await fakeTools(["sandbox-exec"]);
  try {
    const report = await probe({ platform: fakes.platform });
    assertEquals(report.error, undefined);
    assertEquals(report.available, true);
    assertEquals(report.backend, "sandbox-exec");
    assertEquals(report.checks.filter((c) => !c.ok), []);
    assertEquals(report.checks.map((c) => c.id), [
      "backend",
      "workspace",
      "host-home",
      "system-read-only",
      "network",
    ]);
    const text = renderStatus(report);
    assertMatch(
      text,
      /^Coop sandbox: darwin arm64, kernel unknown, invoked as uid \d+, backend sandbox-exec\n/,
    );
    assertMatch(text, /✓ no network\s+a host listener on 127\.0\.0\.1: blocked, 0 connections/);
  } finally {
    await fakes.remove();
  }
});

Deno.test("apple/container: one long-lived VM per user, started once; container exec per command", async () => {
  const fakes = await fakeTools(["container", "sandbox-exec"]);
  try {
    await withWorkspace(async (workspace) => {
      const policy = { workspace, memoryBytes: 2 * 1024 ** 3, cpus: 2 };
      const first = await exec(policy, ["sh", "-c", "echo one"], { platform: fakes.platform });
      const second = await exec(policy, ["sh", "-c", "echo two"], {
        platform: fakes.platform,
        stdin: "x",
      });
      assertEquals([first.stdout, second.stdout], ["one\n", "two\n"]);
      assertMatch(first.limits.reason, /VM bounds memory \(2048 MiB\) and CPUs \(2\)/);
      const name = containerName(workspace);
      const verbs = (await fakes.calls("container")).map((args) => args.slice(0, 3).join(" "));
      assertEquals(verbs, [
        "system status",
        "--version",
        `inspect ${name}`,
        `run --detach --name`,
        `exec --user 0:0`,
        "exec --user 1000:1000",
        `inspect ${name}`,
        "exec --interactive --user",
      ]);
      const run = (await fakes.calls("container"))[3];
      assertEquals(run.slice(run.indexOf("--memory"), run.indexOf("--memory") + 6), [
        "--memory",
        "2048M",
        "--cpus",
        "2",
        "--volume",
        `${workspace}:/work`,
      ]);
      assertEquals(await fakes.calls("sandbox-exec"), [], "container was preferred when running");
    });
  } finally {
    await fakes.remove();
  }
});

Deno.test("apple/container (ATTACKS.md M4, F5): only the workspace is shared, its protected paths read-only; a new one replaces the VM first", async () => {
  const fakes = await fakeTools(["container"]);
  try {
    await withWorkspace(async (workspace) => {
      await Deno.mkdir(`${workspace}/.git`);
      await Deno.mkdir(`${workspace}/project/.git`, { recursive: true });
      const options = { platform: fakes.platform };
      // The fake runs the command on this host (elsewhere than /work): it clones a repository.
      await exec({ workspace }, ["mkdir", "-p", `${workspace}/cloned/.git`], options);
      await exec({ workspace }, ["true"], options);
      const name = containerName(workspace);
      const calls = await fakes.calls("container");
      const runs = calls.filter((args) => args[0] === "run");
      assertEquals(runs.length, 2, "a VM per protected set");
      const mounts = (args: string[]) =>
        args.flatMap((arg, i) => args[i - 1] === "--mount" ? [arg] : []);
      assertEquals(mounts(runs[0]), [
        `type=bind,source=${workspace}/.git,target=/work/.git,readonly`,
        `type=bind,source=${workspace}/project/.git,target=/work/project/.git,readonly`,
      ]);
      assertEquals(mounts(runs[1]), [
        `type=bind,source=${workspace}/.git,target=/work/.git,readonly`,
        `type=bind,source=${workspace}/cloned/.git,target=/work/cloned/.git,readonly`,
        `type=bind,source=${workspace}/project/.git,target=/work/project/.git,readonly`,
      ]);
      const second = calls.indexOf(runs[1]);
      assertEquals(calls[second - 1], ["delete", "--force", name], "the old VM goes first");
      assertEquals(calls.at(-1)?.slice(0, 1), ["exec"], "then the command runs");
      for (const run of runs) {
        assertEquals(run.filter((arg) => arg === "--volume").length, 1, "one share");
        assertEquals(run[run.indexOf("--volume") + 1], `${workspace}:/work`);
        for (const flag of ["--ssh", "--publish", "--publish-socket", "--virtualization"]) {
          assert(!run.includes(flag), `${flag} is never passed`);
        }
      }
    });
  } finally {
    await fakes.remove();
  }
});

Deno.test("apple/container: a VM whose memory or CPUs differ from the policy's is replaced before the command runs", async () => {
  const fakes = await fakeTools(["container"]);
  try {
    await withWorkspace(async (workspace) => {
      const options = { platform: fakes.platform };
      const GiB = 1024 ** 3;
      await exec({ workspace, memoryBytes: GiB, cpus: 2 }, ["true"], options);
      await exec({ workspace, memoryBytes: GiB, cpus: 2 }, ["true"], options);
      // A reload, or a cron job's [cron.sandbox], gives the same workspace other limits.
      const more = await exec(
        { workspace, memoryBytes: 2 * GiB, cpus: 2 },
        ["echo", "more"],
        options,
      );
      await exec({ workspace, memoryBytes: 2 * GiB, cpus: 4 }, ["true"], options);
      assertEquals(more.stdout, "more\n");
      assertMatch(more.limits.reason, /VM bounds memory \(2048 MiB\) and CPUs \(2\)/);
      const name = containerName(workspace);
      const calls = await fakes.calls("container");
      const runs = calls.filter((args) => args[0] === "run");
      const flag = (args: string[], name: string) => args[args.indexOf(name) + 1];
      assertEquals(runs.map((run) => [flag(run, "--memory"), flag(run, "--cpus")]), [
        ["1024M", "2"],
        ["2048M", "2"],
        ["2048M", "4"],
      ]);
      for (const run of runs.slice(1)) {
        assertEquals(calls[calls.indexOf(run) - 1], ["delete", "--force", name], "old VM first");
      }
      assertEquals(
        calls.filter((args) => args[0] === "delete").length,
        2,
        "the same limits reuse the VM",
      );
      assertEquals(calls.at(-1)?.[0], "exec", "then the command runs");
    });
  } finally {
    await fakes.remove();
  }
});

Deno.test("apple/container: a protected path --mount cannot express is refused, and nothing runs", async () => {
  const fakes = await fakeTools(["container"]);
  try {
    await withWorkspace(async (workspace) => {
      await Deno.mkdir(`${workspace}/a,b/.git`, { recursive: true });
      await rejectsWith(
        () => exec({ workspace }, ["touch", "ran"], { platform: fakes.platform }),
        SandboxUnavailableError,
        "cannot mount a path holding a comma",
      );
      assertEquals(await Deno.stat(`${workspace}/ran`).then(() => true, () => false), false);
      const verbs = (await fakes.calls("container")).map((args) => args[0]);
      assert(!verbs.includes("run") && !verbs.includes("exec"), verbs.join(" "));
    });
  } finally {
    await fakes.remove();
  }
});

Deno.test("apple/container: a timeout kills the VM; a VM that fails to start refuses the command", async () => {
  const fakes = await fakeTools(["container"]);
  try {
    await withWorkspace(async (workspace) => {
      const r = await exec({ workspace }, ["sleep", "30"], {
        platform: fakes.platform,
        timeoutMs: 300,
      });
      assertEquals(r.timedOut, true);
      assertEquals(r.exitCode, 137);
      const calls = await fakes.calls("container");
      assertEquals(calls.at(-1), ["kill", containerName(workspace)]);
      await fakes.fail("vm-fails");
      await rejectsWith(
        () => exec({ workspace }, ["touch", "ran"], { platform: fakes.platform }),
        SandboxUnavailableError,
        "did not start (`container run` exit 1: Error: internalError",
      );
      assertEquals(await Deno.stat(`${workspace}/ran`).then(() => true, () => false), false);
    });
  } finally {
    await fakes.remove();
  }
});

Deno.test("apple/container: status names the backend, its version and the measured checks", async () => {
  const fakes = await fakeTools(["container"]);
  try {
    const report = await probe({ platform: fakes.platform });
    assertEquals(report.backend, "apple-container");
    assertEquals(report.available, true, report.error);
    assertEquals(report.checks.filter((c) => !c.ok), []);
    assertMatch(renderStatus(report), /✓ apple-container\s+.*container CLI version 0\.6\.0/);
    assertMatch(renderStatus(report), /✓ commands not root in the VM\s+uid 1000/);
  } finally {
    await fakes.remove();
  }
});

Deno.test("missing CLIs: a stopped container service falls back to sandbox-exec with a note; with neither, fail closed naming what is missing", async () => {
  const both = await fakeTools(["container", "sandbox-exec"]);
  const none = await fakeTools([]);
  try {
    await both.fail("service-down");
    const fallback = await probe({ platform: both.platform });
    assertEquals(fallback.backend, "sandbox-exec");
    assertMatch(
      fallback.note ?? "",
      /service is not running .*apiserver is not running.*container system start/,
    );
    assertMatch(renderStatus(fallback), /note: apple\/container is installed/);

    const missing = await probe({ platform: none.platform });
    assertEquals(missing.available, false);
    assertEquals(missing.backend, "none");
    assertMatch(
      missing.error ?? "",
      /^no sandbox backend on macOS \(arm64\): .*`container` is not installed.*sandbox-exec was not found/,
    );
    assertMatch(
      renderStatus(missing),
      /✗ unavailable: .*\n {2}Non-owner commands will be refused \(fail closed\)/,
    );
    await withWorkspace(async (workspace) => {
      await rejectsWith(
        () => exec({ workspace }, ["touch", `${workspace}/ran`], { platform: none.platform }),
        SandboxUnavailableError,
        "the command was not run",
      );
      assertEquals(await Deno.stat(`${workspace}/ran`).then(() => true, () => false), false);
    });
  } finally {
    await both.remove();
    await none.remove();
  }
});

/**
 * Asserts that both macOS backends refuse each policy of `cases` (fields over a workspace) with
 * `type`, its message starting with the named fields and matching `reason(backend)`, before any
 * tool ran the command; and that the same workspace with `plain` runs (the refusal is the
 * fields', nothing else).
 */
async function assertRefusedOnBothBackends(
  cases: ReadonlyArray<[Record<string, unknown>, string]>,
  type: typeof SandboxLimitError | typeof SandboxUnavailableError,
  reason: (backend: string) => RegExp,
  plain: Record<string, unknown> = {},
): Promise<void> {
  for (
    const [backend, tools] of [
      ["sandbox-exec", ["sandbox-exec"]],
      ["apple/container", ["container", "sandbox-exec"]],
    ] as const
  ) {
    const fakes = await fakeTools([...tools]);
    try {
      await withWorkspace(async (workspace) => {
        for (const [fields, named] of cases) {
          const policy = { workspace, ...fields };
          const error = await assertRejects(
            () => exec(policy, ["touch", `${workspace}/ran`], { platform: fakes.platform }),
            type,
          );
          assert(error.message.startsWith(named), error.message);
          assertMatch(error.message, reason(backend));
          assertEquals(await Deno.stat(`${workspace}/ran`).then(() => true, () => false), false);
        }
        // Refused before the command reached the tool: no sandbox-exec run, no VM, no exec.
        assertEquals(await fakes.calls("sandbox-exec"), []);
        if (backend === "apple/container") {
          const verbs = (await fakes.calls("container")).map((args) => args[0]);
          assertEquals(verbs.filter((verb) => verb === "run" || verb === "exec"), []);
          assert(verbs.includes("system"), "the container backend was the one chosen");
        }
        const r = await exec({ workspace, ...plain }, ["sh", "-c", "echo ok"], {
          platform: fakes.platform,
        });
        assertEquals(r.stdout, "ok\n");
      });
    } finally {
      await fakes.remove();
    }
  }
}

Deno.test("workspace quotas on macOS: a disk or inode quota is refused by both backends before anything runs", async () => {
  const MiB = 1 << 20;
  await assertRefusedOnBothBackends(
    [
      [{ diskQuotaBytes: 100 * MiB }, "diskQuotaBytes: "],
      [{ inodeQuota: 1000 }, "inodeQuota: "],
      [{ diskQuotaBytes: 100 * MiB, inodeQuota: 1000 }, "diskQuotaBytes, inodeQuota: "],
    ],
    SandboxLimitError,
    (backend) => new RegExp(`the ${backend} backend cannot enforce workspace quotas`),
  );
});

Deno.test("environments on macOS: a policy with rootfs or persist is refused by both backends, naming the field, before anything runs", async () => {
  const rootfs = { lower: "host", upper: "/var/coop/upper/bob", work: "/var/coop/work/bob" };
  const persist = [{ source: "/var/coop/cache/bob", target: "/root/.cache" }];
  await assertRefusedOnBothBackends(
    [
      [{ rootfs }, "rootfs: "],
      [{ persist }, "persist: "],
      [{ rootfs, persist }, "rootfs, persist: "],
    ],
    SandboxUnavailableError,
    (backend) =>
      new RegExp(
        `the ${backend} backend cannot give a command an environment \\(environments need Linux`,
      ),
    // An empty persist list is the policy's default: no environment, the command runs.
    { persist: [] },
  );
});
