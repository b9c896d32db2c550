/**
 * Numbers shared with the C side (`ffi/protocol.h`); `tests/unit/protocol_test.ts` checks
 * that both files agree.
 * @module
 */

/** Setup steps in the order the trampoline and init run them. */
export const STEPS = {
  1: "spec",
  2: "clone",
  3: "id-map",
  4: "exec-init",
  5: "wait-go",
  6: "signals",
  7: "mount-private",
  8: "mount-root",
  9: "pivot-root",
  10: "bind-readonly",
  11: "mount-workspace",
  12: "mount-tmp",
  13: "mount-dev",
  14: "mount-proc",
  15: "write-etc",
  16: "symlinks",
  17: "umount-oldroot",
  18: "remount-root-readonly",
  19: "hostname",
  20: "setsid",
  21: "chdir",
  22: "close-fds",
  23: "rlimits",
  24: "drop-capabilities",
  25: "no-new-privs",
  26: "landlock",
  27: "seccomp",
  28: "fork",
  29: "loopback",
  30: "cgroup",
  31: "proxy-forwarder",
  32: "protect-paths",
  33: "network-mode",
  34: "mask-proc",
  35: "ipc-limits",
  36: "capture",
  37: "root-layers",
  38: "session",
  41: "terminal",
  42: "controlling-terminal",
  43: "persist",
} as const;

/** The name of a setup step, e.g. `"mount-workspace"`. */
export type StepName = (typeof STEPS)[keyof typeof STEPS];

/**
 * Steps a test may force to fail (`failAt`): those with a `coop_step(spec, …)` injection
 * point in ffi/init (tests/unit/protocol_test.ts keeps this list equal to the C side). Forcing
 * any other step is refused — a forced failure that never happens would test nothing.
 */
export const INJECTABLE_STEPS: readonly StepName[] = [
  "ipc-limits",
  "mount-private",
  "mount-root",
  "pivot-root",
  "bind-readonly",
  "mount-workspace",
  "protect-paths",
  "mount-tmp",
  "mount-dev",
  "mount-proc",
  "mask-proc",
  "write-etc",
  "symlinks",
  "umount-oldroot",
  "remount-root-readonly",
  "hostname",
  "chdir",
  "capture",
  "root-layers",
  "persist",
  "drop-capabilities",
  "proxy-forwarder",
  "landlock",
  "seccomp",
  "rlimits",
  "fork",
];

/** Looks up a step number by name. */
export function stepNumber(name: StepName): number {
  for (const [number, stepName] of Object.entries(STEPS)) {
    if (stepName === name) return Number(number);
  }
  throw new Error(`unknown step ${name}`);
}

/** Names a step number from the C side, keeping unknown numbers visible. */
export function stepName(step: number): string {
  return (STEPS as Record<number, string>)[step] ?? `step-${step}`;
}

/** Network "proxy": the port the init's forwarder listens on inside (127.0.0.1). */
export const PROXY_PORT = 3128;
/** Networks "proxy" and "public": where transparent capture redirects TCP (127.0.0.1). */
export const CAPTURE_PORT = 3129;
/** Networks "proxy" and "public": where the spec binds the policy proxy's unix socket inside. */
export const PROXY_SOCKET = "/run/coop/proxy.sock";

/**
 * The signal that asks a sandbox's init to end it (`COOP_SIG_END`): it kills the command, then
 * every other process, and reaps them all — so their CPU time is counted — before it exits.
 */
export const END_SIGNAL = 64;

/** Record kinds on the report pipe: three native-endian int32 each. */
export const RECORD = {
  error: 1,
  exec: 2,
  exit: 3,
  ready: 4,
  started: 5,
  utime: 6,
  stime: 7,
  ended: 8,
  refused: 9,
} as const;
/** Bytes per report record. */
export const RECORD_SIZE = 12;

/** Spec tags (`COOP_TAG_*`). */
export const TAG = {
  arg: "a",
  env: "e",
  hostname: "h",
  workspace: "w",
  roBind: "r",
  symlink: "l",
  file: "f",
  dir: "d",
  tmpSize: "t",
  net: "n",
  cwd: "c",
  rlimit: "R",
  failAt: "x",
  protect: "p",
  proxyAuth: "A",
  overlay: "o",
  dirRoot: "D",
  persist: "b",
  session: "S",
  terminal: "T",
  hold: "K",
  end: "z",
} as const;

/** First string of every spec. */
export const SPEC_MAGIC = "COOP-SPEC-1";
