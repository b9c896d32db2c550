/**
 * Serializes one sandboxed command for the init (`ffi/init/spec.c` parses it): tags and
 * NUL-terminated strings, nothing the C side has to interpret beyond that.
 * @module
 */
import { readFileSync } from "node:fs";
import { buildEnvironment, WORKSPACE_MOUNT } from "./environment.ts";
import { SandboxPolicyError } from "./errors.ts";
import { hostLayout } from "./host_layout.ts";
import { isInside } from "./path_containment.ts";
import { HOST_LOWER_DIR } from "./rootfs.ts";
import type { SandboxPolicy } from "./policy.ts";
import {
  INJECTABLE_STEPS,
  PROXY_PORT,
  PROXY_SOCKET,
  SPEC_MAGIC,
  type StepName,
  stepNumber,
  TAG,
} from "./protocol.ts";
import { proxyAuthorization, proxyUrl } from "./proxy/policy_proxy.ts";

/** Per-command inputs besides the policy. */
export interface SpecOptions {
  /** Extra environment variables for this command only. */
  env?: Record<string, string>;
  /** Working directory inside: `/work` or an absolute path below it, without `..`. */
  cwd?: string;
  /** Make the named setup step fail (tests of the error path). */
  failAt?: StepName;
  /** [resource, value] rlimits the init sets last (soft = hard); see limits.ts. */
  rlimits?: readonly (readonly [number, number])[];
  /** Networks "proxy"/"public": the policy proxy's socket (host path) and the sandbox's token. */
  proxy?: { socketPath: string; token: string };
  /** Paths relative to the workspace to re-mount read-only (see `protectedPathsIn`). */
  protectedPaths?: readonly string[];
  /** A session sandbox: the init serves commands (buildCommandSpec) instead of `argv`. */
  session?: boolean;
  /** The command runs on the pty that comes with the go byte (`SpawnOptions.terminal`). */
  terminal?: boolean;
  /** The init sends its fresh overlay back to be held (held_overlay.ts). */
  hold?: boolean;
}

/** The proxy variables of a sandbox with network "proxy", upper- and lowercase. */
export function proxyEnvironment(token: string): Record<string, string> {
  const url = proxyUrl(token, PROXY_PORT);
  const env: Record<string, string> = {};
  for (const name of ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"]) {
    env[name] = url;
    env[name.toLowerCase()] = url;
  }
  return env;
}

// Ids as the sandbox sees them: 0 is its root (outside, the invoker or, for a root invoker,
// the dedicated host uid of host_ids.ts); 65534 is the kernel's overflow id, which every host
// id the sandbox has no mapping for shows as — not the host's `nobody` account.
const PASSWD = "root:x:0:0:sandbox root:/work:/bin/sh\n" +
  "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
const GROUP = "root:x:0:\nnogroup:x:65534:\n";
const NSSWITCH = "passwd: files\ngroup: files\nhosts: files dns\n";

/** Where an image root's apt finds the sandbox's one-user setting. */
export const APT_SANDBOX_CONF = "/etc/apt/apt.conf.d/00coop-sandbox";

function hostsFile(hostname: string): string {
  return `127.0.0.1 localhost ${hostname}\n::1 localhost ip6-localhost ip6-loopback\n`;
}

function resolvConf(policy: SandboxPolicy): string {
  if (policy.network === "proxy" || policy.network === "public") {
    // The init's stub resolver (ffi/init/dns_stub.c): no query leaves the sandbox.
    return "# the sandbox's stub resolver: names go to Coop's policy proxy, never to DNS\n" +
      "nameserver 127.0.0.1\noptions attempts:1 timeout:5\n";
  }
  if (policy.network !== "host") return "# no network in this sandbox\n";
  try {
    return readFileSync("/etc/resolv.conf", "utf8");
  } catch {
    return "";
  }
}

/**
 * The synthesized /etc files: path → content. An image's root keeps its own passwd, group and
 * nsswitch.conf (its packages' users, e.g. apt's `_apt`); only the files that describe this
 * sandbox are bound over the image's.
 */
export function etcFiles(policy: SandboxPolicy): Record<string, string> {
  if (imageRoot(policy)) {
    return {
      "/etc/hostname": `${policy.hostname}\n`,
      "/etc/hosts": hostsFile(policy.hostname),
      "/etc/resolv.conf": resolvConf(policy),
      // apt drops to its `_apt` user to download, an id the sandbox does not map (setresuid
      // fails with EINVAL); the sandbox's root is an unprivileged host uid already. Left out
      // when the image has no /etc/apt/apt.conf.d (docs/environments_overlay.md).
      [APT_SANDBOX_CONF]: 'APT::Sandbox::User "root";\n',
    };
  }
  return {
    "/etc/passwd": PASSWD,
    "/etc/group": GROUP,
    "/etc/hostname": `${policy.hostname}\n`,
    "/etc/hosts": hostsFile(policy.hostname),
    "/etc/nsswitch.conf": NSSWITCH,
    "/etc/resolv.conf": resolvConf(policy),
  };
}

/**
 * The command's working directory: the workspace, or a directory below it. The init changes
 * into it inside the new root, where only the sandbox's own view exists, so a symlink there
 * leads nowhere the command could not reach anyway.
 */
function workingDirectory(cwd: string | undefined): string {
  if (cwd === undefined) return WORKSPACE_MOUNT;
  if (!cwd.startsWith("/") || !isInside(cwd, WORKSPACE_MOUNT) || cwd.split("/").includes("..")) {
    throw new SandboxPolicyError(
      `cwd must be ${WORKSPACE_MOUNT} or an absolute path below it without "..", got ${
        JSON.stringify(cwd)
      }`,
    );
  }
  return cwd;
}

/** Whether the sandbox's root is an image's (an overlay of a base directory, or a directory). */
export function imageRoot(policy: SandboxPolicy): boolean {
  return policy.rootfs !== undefined &&
    !("lower" in policy.rootfs && policy.rootfs.lower === "host");
}

/** What a sandbox with an environment learns about itself (the policy's `env` may add more). */
function environmentVariables(): Record<string, string> {
  return { COOP_WORKSPACE: WORKSPACE_MOUNT, COOP_CREATED: new Date().toISOString() };
}

/** Encodes the spec for `argv` under `policy`. */
export function buildSpec(
  policy: SandboxPolicy,
  argv: readonly string[],
  options: SpecOptions = {},
): Uint8Array {
  if (argv.length === 0) throw new SandboxPolicyError("no command given");
  const parts: string[] = [SPEC_MAGIC];
  const add = (tag: string, ...values: string[]) => {
    for (const value of values) {
      if (value.includes("\0")) {
        throw new SandboxPolicyError(
          `argument or setting contains a NUL byte: ${JSON.stringify(value)}`,
        );
      }
    }
    parts.push(tag + values.join("\0"));
  };
  add(TAG.workspace, policy.workspace);
  add(TAG.hostname, policy.hostname);
  add(TAG.net, policy.network);
  add(TAG.tmpSize, String(policy.tmpSizeBytes));
  add(TAG.cwd, workingDirectory(options.cwd));
  for (const path of options.protectedPaths ?? []) add(TAG.protect, path);
  const rootfs = policy.rootfs;
  if (!imageRoot(policy)) {
    for (const entry of hostLayout()) {
      const overlaid = rootfs && entry.kind === "bind" && entry.inside === HOST_LOWER_DIR;
      if (overlaid) continue;
      if (entry.kind === "bind") add(TAG.roBind, entry.host, entry.inside);
      else add(TAG.symlink, entry.target, entry.inside);
    }
  }
  if (rootfs && "directory" in rootfs) add(TAG.dirRoot, rootfs.directory);
  else if (rootfs?.lower === "host") {
    const upper = `${rootfs.upper.replace(/\/+$/, "")}${HOST_LOWER_DIR}`;
    add(TAG.overlay, HOST_LOWER_DIR, upper, rootfs.work, HOST_LOWER_DIR);
  } else if (rootfs) add(TAG.overlay, rootfs.lower, rootfs.upper, rootfs.work, "/");
  for (const bind of policy.persist) add(TAG.persist, bind.source, bind.target);
  for (const path of policy.readOnlyPaths) add(TAG.roBind, path, path);
  if (policy.network === "proxy" || policy.network === "public") {
    if (!options.proxy) {
      throw new SandboxPolicyError(`network "${policy.network}" needs a running proxy`);
    }
    // Read-only is enough: connect() needs write permission on the socket inode, not a
    // writable mount.
    add(TAG.roBind, options.proxy.socketPath, PROXY_SOCKET);
    // What the init's stub resolver and capture listener send (they are not HTTP clients).
    add(TAG.proxyAuth, proxyAuthorization(options.proxy.token));
  }
  for (const [path, content] of Object.entries(etcFiles(policy))) add(TAG.file, path, content);
  for (const arg of argv) add(TAG.arg, arg);
  // The proxy variables come last: nothing may point the sandbox at another proxy.
  const env = {
    ...(rootfs ? environmentVariables() : {}),
    ...options.env,
    ...(options.proxy ? proxyEnvironment(options.proxy.token) : {}),
  };
  for (const entry of buildEnvironment(policy, env)) add(TAG.env, entry);
  for (const [resource, value] of options.rlimits ?? []) {
    add(TAG.rlimit, String(resource), String(value));
  }
  if (options.failAt) {
    if (!INJECTABLE_STEPS.includes(options.failAt)) {
      throw new SandboxPolicyError(
        `failAt: step "${options.failAt}" has no injection point; use one of ${
          INJECTABLE_STEPS.join(", ")
        }`,
      );
    }
    add(TAG.failAt, String(stepNumber(options.failAt)));
  }
  if (options.session) add(TAG.session, "1");
  // No value: the tag's one string is empty (ffi/init/spec.c).
  if (options.terminal) add(TAG.terminal, "");
  if (options.hold) add(TAG.hold, "");
  parts.push(TAG.end);
  return new TextEncoder().encode(parts.join("\0"));
}

/**
 * Encodes one command of a session sandbox (ffi/init/session.c): argv, environment, working
 * directory and rlimits — the world itself was built from the session's spec.
 */
export function buildCommandSpec(
  policy: SandboxPolicy,
  argv: readonly string[],
  options: Pick<SpecOptions, "env" | "cwd" | "rlimits" | "proxy"> = {},
): Uint8Array {
  if (argv.length === 0) throw new SandboxPolicyError("no command given");
  const parts: string[] = [SPEC_MAGIC];
  const add = (tag: string, ...values: string[]) => {
    if (values.some((value) => value.includes("\0"))) {
      throw new SandboxPolicyError(`argument or setting contains a NUL byte: ${values}`);
    }
    parts.push(tag + values.join("\0"));
  };
  add(TAG.cwd, workingDirectory(options.cwd));
  for (const arg of argv) add(TAG.arg, arg);
  const env = options.proxy
    ? { ...options.env, ...proxyEnvironment(options.proxy.token) }
    : options.env;
  for (const entry of buildEnvironment(policy, env)) add(TAG.env, entry);
  for (const [resource, value] of options.rlimits ?? []) {
    add(TAG.rlimit, String(resource), String(value));
  }
  parts.push(TAG.end);
  return new TextEncoder().encode(parts.join("\0"));
}
