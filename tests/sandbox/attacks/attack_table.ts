/**
 * The attack suite's machinery: each ATTACKS.md row is one `Attack`, run from inside a real
 * sandbox under the default non-owner policy, asserting the exact outcome. A row that cannot
 * run yet says why and is reported as ignored — never as passed.
 * @module
 */
import {
  exec,
  type ExecOptions,
  type ExecResult,
  type SandboxPolicyInput,
} from "../../../src/sandbox/mod.ts";
import { SANDBOX_TESTS, withWorkspace } from "../harness.ts";

/** One row of ATTACKS.md. */
export interface Attack {
  /** The row id, e.g. `F1`. */
  id: string;
  /** What the attacker tries. */
  name: string;
  /** A shell script run inside (`sh -c`), or a full argv. */
  script?: string;
  argv?: string[];
  /** Host-side preparation; its result is passed to `script` as `$1`. */
  prepare?: (workspace: string) => Promise<string> | string;
  /** Host-side cleanup of what `prepare` started (listeners, processes); runs even on failure. */
  teardown?: (prepared: string) => Promise<void> | void;
  /** Asserts the sandbox's answer (and the host's state). */
  expect: (r: ExecResult, workspace: string, prepared: string) => void | Promise<void>;
  /** Extra exec options, e.g. the proxy's test hooks. */
  options?: ExecOptions;
  /** Wall-clock limit of the sandbox; default 20 s. */
  timeoutMs?: number;
  /** Policy settings beyond the default non-owner policy (limits for §4.5 rows, network
   * "proxy" for §4.2 rows); a function receives what `prepare` returned. */
  policy?:
    | Omit<SandboxPolicyInput, "workspace">
    | ((prepared: string) => Omit<SandboxPolicyInput, "workspace">);
  /** Set when the row cannot be tested yet: the reason is printed with the skip. */
  waitsFor?: string;
  /** Tools the attack needs inside; missing ones skip the row, naming them. */
  needs?: string[];
}

/** Where the sandbox's PATH finds tools (the host's, bound read-only). */
const TOOL_DIRS = ["/usr/bin", "/usr/sbin"];

function missingTools(tools: string[] = []): string[] {
  return tools.filter((tool) =>
    !TOOL_DIRS.some((dir) => {
      try {
        return Deno.statSync(`${dir}/${tool}`).isFile;
      } catch {
        return false;
      }
    })
  );
}

/**
 * A second run of the whole table under another root (tests/sandbox/attacks/overlay_root_test.ts):
 * each row gets fresh policy fields from `setUp` and, after it ran, `check` (what must hold
 * of the host whatever the row did).
 */
export interface AttackVariant {
  /** Appended to each test's name. */
  label: string;
  /** The variant's policy fields for one row, a check after it, and its cleanup. */
  setUp: () => Promise<{
    policy: Omit<SandboxPolicyInput, "workspace">;
    check: () => Promise<void>;
    dispose: () => Promise<void>;
  }>;
  /** Rows whose outcome legitimately differs under the variant: what must hold instead. */
  expect?: Record<string, Attack["expect"]>;
}

// Captured at load: while a variant loads the attack files, their other tests are silenced.
const registerTest = Deno.test;
let activeVariant: AttackVariant | undefined;

/**
 * Evaluates the attack files `load` imports with `variant` active: their `attackSuite` rows are
 * declared once more under the variant, and every other test they declare is left out.
 */
export async function withAttackVariant(
  variant: AttackVariant,
  load: () => Promise<unknown>,
): Promise<void> {
  const deno = Deno as unknown as { test: unknown };
  activeVariant = variant;
  deno.test = () => {};
  try {
    await load();
  } finally {
    deno.test = registerTest;
    activeVariant = undefined;
  }
}

/** Declares one Deno test per attack. */
export function attackSuite(section: string, attacks: Attack[]): void {
  const variant = activeVariant;
  for (const attack of attacks) {
    const missing = missingTools(attack.needs);
    const skip = attack.waitsFor ??
      (missing.length ? `needs ${missing.join(", ")} in ${TOOL_DIRS.join(" or ")}` : undefined);
    const label = variant ? ` [${variant.label}]` : "";
    registerTest({
      name: `${section} ${attack.id}: ${attack.name}${label}${skip ? ` — skipped: ${skip}` : ""}`,
      ignore: !SANDBOX_TESTS || skip !== undefined,
      sanitizeResources: false,
      sanitizeOps: false,
      fn: () =>
        withWorkspace(async (workspace) => {
          const prepared = attack.prepare ? await attack.prepare(workspace) : "";
          const root = variant ? await variant.setUp() : undefined;
          try {
            const argv = attack.argv ?? ["sh", "-c", attack.script!, "attack", prepared];
            const extra = typeof attack.policy === "function"
              ? attack.policy(prepared)
              : attack.policy;
            const r = await exec({ ...extra, ...root?.policy, workspace }, argv, {
              ...attack.options,
              timeoutMs: attack.timeoutMs ?? 20_000,
            });
            await (variant?.expect?.[attack.id] ?? attack.expect)(r, workspace, prepared);
            await root?.check();
          } finally {
            await attack.teardown?.(prepared);
            await root?.dispose();
          }
        }),
    });
  }
}

/** A python3 program that calls raw syscalls (x86_64 numbers) and prints each errno name. */
export function syscallProbe(calls: Record<string, string>): string[] {
  const lines = Object.entries(calls).map(([label, call]) =>
    `report(${JSON.stringify(label)}, ${call})`
  );
  return [
    "python3",
    "-c",
    [
      "import ctypes, errno",
      "libc = ctypes.CDLL(None, use_errno=True)",
      "def sc(nr, *args):",
      "    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])",
      "    return 'OK' if r >= 0 else errno.errorcode[ctypes.get_errno()]",
      "def report(label, result): print(label + '=' + result, flush=True)",
      ...lines,
    ].join("\n"),
  ];
}

/** Parses `key=value` lines. */
export function keyValues(text: string): Record<string, string> {
  return Object.fromEntries(
    text.split("\n").filter((l) => l.includes("=")).map((
      l,
    ) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
  );
}

/** True on x86_64, where `syscallProbe`'s numbers are valid. */
export const X86_64 = Deno.build.arch === "x86_64";

/**
 * A shell command that runs `program` with python3, the row's `$1` as `sys.argv[1]`. The
 * program may call `attempt(label, fn)`, which prints `label=OK` or `label=<errno name>`.
 */
export function python(program: string): string {
  const source = [
    "import errno, os, socket, sys",
    "def attempt(label, fn):",
    "    try:",
    "        fn()",
    "        print(label + '=OK', flush=True)",
    "    except OSError as e:",
    "        name = errno.errorcode.get(e.errno) if e.errno and e.errno > 0 else None",
    "        print(label + '=' + (name or type(e).__name__ + str(e.errno)), flush=True)",
    program,
  ].join("\n");
  return `python3 -c '${source.replaceAll("'", `'\\''`)}' "$1"`;
}
