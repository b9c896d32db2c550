/**
 * `selfTest()`: plants canaries on the host — a file in the invoking user's home, a file in
 * Coop's state directory, a secret environment variable, a listener on 127.0.0.1, a host
 * process — and attacks them from inside a real sandbox. Any canary reached is an escape.
 * `coop sandbox test` prints it; the gateway refuses to sandbox-execute when it fails.
 * @module
 */
import { spawn as spawnHost } from "node:child_process";
import { randomUUID } from "node:crypto";
import { lstatSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { exec } from "./exec.ts";
import { SandboxError } from "./errors.ts";
import { libraryDigest } from "./ffi.ts";

/** One attack of the self-test. */
export interface SelfTestCheck {
  /** A stable id, e.g. `setid`. */
  id: string;
  /** What must hold, e.g. "the home canary is unreadable". */
  name: string;
  /** True when the attack did not reach its canary. */
  ok: boolean;
  /** What was observed. */
  detail: string;
}

/** The self-test's verdict. */
export interface SelfTestResult {
  /** True when no attack reached its canary (and the sandbox could start at all). */
  passed: boolean;
  /** When it ran (ISO 8601). */
  at: string;
  /** One entry per attack. */
  checks: SelfTestCheck[];
  /** Set when the sandbox could not start; the test then fails closed. */
  error?: string;
  /** SHA-256 of the sandbox library it ran against (absent when the library is unreadable). */
  library?: string;
}

/** Coop's per-user state directory: `$XDG_STATE_HOME/coop`, default `~/.local/state/coop`. */
export function coopStateDir(): string {
  const base = process.env.XDG_STATE_HOME ||
    `${process.env.HOME ?? "/tmp"}/.local/state`;
  return `${base}/coop`;
}

/**
 * Where the result for the library with SHA-256 `library` is stored. One record per library
 * build: every checkout shares the state directory, and a result measured with another build
 * (other sources, a debug build) says nothing about this one.
 */
function resultFile(library: string): string {
  return `${coopStateDir()}/sandbox-selftest-${library}.json`;
}

/**
 * The last stored self-test result of the library this process loads, if any.
 *
 * @example
 * ```ts
 * const last = await lastSelfTest();
 * if (!last?.passed) console.error("run `coop sandbox test`");
 * ```
 */
export async function lastSelfTest(): Promise<SelfTestResult | undefined> {
  try {
    const library = await libraryDigest();
    const result: SelfTestResult = JSON.parse(await readFile(resultFile(library), "utf8"));
    return result.library === library ? result : undefined;
  } catch {
    return undefined;
  }
}

/** The workspace file the set-id canary tries to make set-uid (ATTACKS F26). */
const SETID_FILE = "coop-selftest-setid";

// $1 home canary, $2 state canary, $3 host port, $4 host pid.
const ATTACK = `
for f in "$1" "$2"; do cat "$f" 2>/dev/null; done
env; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'
if bash -c "exec 3<>/dev/tcp/127.0.0.1/$3" 2>/dev/null; then echo "ESCAPE-LISTENER"; fi
if kill -9 "$4" 2>/dev/null; then echo "ESCAPE-KILL"; fi
[ -e "/proc/$4" ] && echo "ESCAPE-PROC"
if touch "$(dirname "$1")/coop-selftest-write" 2>/dev/null; then echo "ESCAPE-WRITE"; fi
printf '#!/bin/sh\n' > /work/${SETID_FILE}
if chmod 4755 /work/${SETID_FILE} 2>/dev/null; then echo "ESCAPE-SETID"; fi
if unshare -U true 2>/dev/null; then echo "ESCAPE-USERNS"; fi
grep -E '^(CapEff|CapPrm|NoNewPrivs|Seccomp):' /proc/self/status
# The fds of a command the shell starts (ls), less the one ls opens to list them. Listing a
# child's fds from outside raced with the dynamic loader, which holds a library open as fd 3
# for a moment after exec (seen 2 in 300 under load).
echo "FDS=$(ls -l /proc/self/fd | grep -v ' -> /proc/[0-9]*/fd$' | sed -n 's/.* \\([0-9][0-9]*\\) -> .*/\\1/p' | paste -sd, -)"
`;

/** The set-id bits of a host file (0 when none), or undefined when it does not exist. */
function setIdBits(path: string): number | undefined {
  try {
    return lstatSync(path).mode & 0o6000;
  } catch {
    return undefined;
  }
}

function token(): string {
  return `coop-canary-${randomUUID()}`;
}

/**
 * Runs the self-test and stores its result in Coop's state directory.
 *
 * @example
 * ```ts
 * const result = await selfTest();
 * if (!result.passed) throw new Error("sandbox escape");
 * ```
 */
export async function selfTest(): Promise<SelfTestResult> {
  const homeToken = token(), stateToken = token(), envToken = token();
  const home = process.env.HOME ?? "/tmp";
  const stateDir = coopStateDir();
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  const homeCanary = `${home}/.coop-selftest-${randomUUID()}`;
  const stateCanary = `${stateDir}/selftest-canary-${randomUUID()}`;
  const workspace = await mkdtemp(join(tmpdir(), "coop-selftest-"));
  let connections = 0;
  const listener = createServer((conn) => {
    connections++;
    conn.destroy();
  });
  await new Promise<void>((listening) => listener.listen(0, "127.0.0.1", listening));
  const child = spawnHost("sleep", ["300"], { stdio: "ignore" });
  const hostProcess = {
    pid: child.pid,
    status: new Promise<void>((exited) => child.once("exit", () => exited())),
    kill: (signal: "SIGKILL") => child.kill(signal),
  };
  const envName = "COOP_SELFTEST_SECRET";
  const previous = process.env[envName];
  const checks: SelfTestCheck[] = [];
  let error: string | undefined;
  try {
    await writeFile(homeCanary, homeToken, { mode: 0o600 });
    await writeFile(stateCanary, stateToken, { mode: 0o600 });
    process.env[envName] = envToken;
    const port = (listener.address() as AddressInfo).port;
    const r = await exec(
      { workspace },
      [
        "sh",
        "-c",
        ATTACK,
        "selftest",
        homeCanary,
        stateCanary,
        String(port),
        String(hostProcess.pid),
      ],
      { timeoutMs: 15_000 },
    );
    const out = r.stdout + r.stderr;
    const hostAlive = await Promise.race([
      hostProcess.status.then(() => false),
      new Promise<boolean>((done) => setTimeout(() => done(true), 50)),
    ]);
    const add = (id: string, name: string, ok: boolean, detail: string) =>
      checks.push({ id, name, ok, detail });
    add(
      "home-canary",
      "a file in your home is unreadable",
      !out.includes(homeToken),
      `cat ${homeCanary}`,
    );
    add(
      "state-canary",
      "Coop's state directory is unreadable",
      !out.includes(stateToken),
      `cat ${stateCanary}`,
    );
    add(
      "environment",
      "a secret in Coop's environment is invisible",
      !out.includes(envToken),
      "env and /proc/*/environ",
    );
    add(
      "listener",
      "a host listener on 127.0.0.1 is unreachable",
      !out.includes("ESCAPE-LISTENER") && connections === 0,
      `${connections} connection(s) reached the host`,
    );
    add(
      "host-process",
      "a host process can be neither seen nor killed",
      hostAlive && !out.includes("ESCAPE-KILL") && !out.includes("ESCAPE-PROC"),
      hostAlive ? "still running" : "KILLED",
    );
    add(
      "host-write",
      "nothing can be written outside the workspace",
      !out.includes("ESCAPE-WRITE"),
      "touch next to the home canary",
    );
    const setIdMode = setIdBits(`${workspace}/${SETID_FILE}`);
    add(
      "setid",
      "no set-id file can be planted on the host",
      !out.includes("ESCAPE-SETID") && setIdMode === 0,
      setIdMode === undefined
        ? "chmod 4755 in the workspace: the file was not made"
        : `chmod 4755 in the workspace: host mode ${setIdMode ? "has" : "has no"} set-id bit`,
    );
    add("userns", "no new user namespace (seccomp)", !out.includes("ESCAPE-USERNS"), "unshare -U");
    const fds = /^FDS=(.*)$/m.exec(out)?.[1] ?? "?";
    add(
      "fds",
      "no file descriptor of Coop's is inherited",
      fds === "0,1,2",
      `a command's fds: ${fds}`,
    );
    const caps = /CapEff:\s+0{16}/.test(out) && /CapPrm:\s+0{16}/.test(out);
    add(
      "privileges",
      "no capabilities, no_new_privs, seccomp on",
      caps && /NoNewPrivs:\s+1/.test(out) && /Seccomp:\s+2/.test(out),
      out.split("\n").filter((l) => /^(Cap|NoNew|Seccomp)/.test(l)).join("; "),
    );
  } catch (cause) {
    error = cause instanceof SandboxError ? cause.message : String(cause);
  } finally {
    if (previous === undefined) delete process.env[envName];
    else process.env[envName] = previous;
    await new Promise((closed) => listener.close(closed));
    try {
      hostProcess.kill("SIGKILL");
    } catch {
      // already gone (which the check above reports)
    }
    await hostProcess.status;
    for (const path of [homeCanary, stateCanary, `${home}/coop-selftest-write`]) {
      await rm(path, { force: true }).catch(() => {});
    }
    await rm(workspace, { recursive: true, force: true }).catch(() => {});
  }
  const library = await libraryDigest().catch(() => undefined);
  const result: SelfTestResult = {
    passed: error === undefined && checks.every((c) => c.ok),
    at: new Date().toISOString(),
    checks,
    ...(error ? { error } : {}),
    ...(library ? { library } : {}),
  };
  if (library) {
    await writeFile(resultFile(library), JSON.stringify(result, null, 2) + "\n")
      .catch(() => {});
  }
  return result;
}
