/**
 * `SpawnOptions`: what a caller may ask of one sandboxed command besides its policy and argv.
 * @module
 */
import type { CgroupHost } from "./cgroup_host.ts";
import type { StepName } from "./protocol.ts";
import type { Resolver } from "./proxy/proxy_decision.ts";
import type { TerminalSize } from "./terminal.ts";

/** Options for one sandboxed command. */
export interface SpawnOptions {
  /** Extra environment variables (added to the allowlisted base). */
  env?: Record<string, string>;
  /** Working directory inside the sandbox: `/work` or a path below it (default `/work`). */
  cwd?: string;
  /** Give the command a stdin pipe; otherwise it reads EOF. */
  stdin?: boolean;
  /**
   * Run the command on a pseudo-terminal of this size instead of pipes: it is the command's
   * stdin, stdout, stderr and controlling terminal (`SandboxProcess.terminal`); `stdin` is
   * then ignored, and `stdout`/`stderr` stay empty.
   */
  terminal?: TerminalSize;
  /** Fail this setup step on purpose (tests of the error path). */
  failAt?: StepName;
  /** Wall-clock limit: the whole sandbox is killed when it passes (`timedOut` in the status). */
  timeoutMs?: number;
  /**
   * With an environment root: how long to wait while another sandbox (of any process) has the
   * same upper layer mounted, before failing with `SandboxUpperInUseError` (default 10 s).
   */
  upperWaitMs?: number;
  /**
   * Aborted before the command starts — while the sandbox waits for another one's upper layer,
   * or its workspace is measured and checked — the setup ends at once and rejects with the
   * signal's reason: nothing ran, and nothing it took is kept. Once started, ending the sandbox
   * is the caller's (`SandboxProcess.kill`; `exec()` does it).
   */
  signal?: AbortSignal;
  /**
   * Test hooks of network "proxy": a resolver the test controls, and permission to dial
   * loopback and private addresses (test servers on the host's loopback). Production — the
   * gateway and the CLI — never sets them.
   */
  proxy?: ProxyTestHooks;
  /** Test hook: plan the limits against this stand-in host instead of this one's cgroups. */
  cgroupHost?: CgroupHost;
  /** Proxy denials are expected (a probe): logged at debug level, not as warnings. */
  expectViolations?: boolean;
}

/** See `SpawnOptions.proxy`: for tests only. */
export interface ProxyTestHooks {
  /** Resolves names instead of the host's DNS. */
  resolve?: Resolver;
  /** Lets the proxy dial loopback and private addresses (a loopback test server). */
  allowPrivateAddresses?: boolean;
  /** Addresses treated as public unicast (network "public" tests: loopback servers). */
  publicAddresses?: readonly string[];
}
