/**
 * `SandboxPolicy`: what one sandboxed command may see and use. Validated once, then trusted.
 * @module
 */
import { z } from "zod";
import { SandboxPolicyError } from "./errors.ts";
import { DEFAULT_SANDBOX_HOST_ID } from "./host_ids.ts";
import { parseSocketAddress } from "./proxy/address_policy.ts";
import { parseAllowEntry } from "./proxy/allowlist.ts";
import { DEFAULT_SCAN_LIMIT } from "./protected_paths.ts";
import {
  type PersistBind,
  persistSchema,
  type RootfsPolicy,
  rootfsSchema,
} from "./rootfs_policy.ts";
import { DEFAULT_PROXY_MAX_CONNECTIONS } from "./proxy/policy_proxy.ts";

/** Network modes the Linux sandbox implements. */
export const NETWORK_MODES = ["none", "host", "proxy", "public"] as const;
/**
 * `none`: an empty network namespace (only `lo`); `host`: the host's network (owner opt-in);
 * `proxy`: an empty network namespace whose only way out is Coop's policy proxy, which allows
 * the `allowDomains`; `public`: the same, but the proxy allows every public unicast address
 * and port — the internet, never the LAN, loopback or metadata (docs/network.md).
 */
export type NetworkMode = (typeof NETWORK_MODES)[number];

/**
 * Smallest memory limit accepted. Measured on this kernel (2026-11): `sh -c 'echo ok'` needs
 * 2.6 MiB of address space under RLIMIT_AS (the unprivileged path, per process), `bash` 4 MiB,
 * `ls` 3.4 MiB; under a cgroup v1 memory limit (root) 0.4-0.9 MiB. 16 MiB leaves a fourfold
 * margin over bash on the stricter path.
 */
export const MIN_MEMORY_BYTES = 16 * 2 ** 20;
/** Largest memory limit accepted (1 PiB: beyond any host, below 2^53). */
export const MAX_MEMORY_BYTES = 2 ** 50;
/**
 * Smallest `/tmp` (and `/dev/shm`) accepted. A shell starts with a single page of `/tmp`
 * (measured); 1 MiB is the floor below which tools that write a temporary file fail.
 * Zero is refused above all: tmpfs reads `size=0` as "no limit".
 */
export const MIN_TMP_SIZE_BYTES = 2 ** 20;
/** Largest `/tmp` accepted. */
export const MAX_TMP_SIZE_BYTES = 64 * 2 ** 30;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const HOSTNAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** A string that `parse` accepts; its error message becomes the issue's. */
function parsedBy(parse: (value: string) => unknown) {
  return z.string().superRefine((value, ctx) => {
    try {
      parse(value);
    } catch (error) {
      ctx.addIssue({ code: "custom", message: (error as Error).message });
    }
  });
}

const policySchema = z.strictObject({
  workspace: z.string().min(1).refine((p) => p.startsWith("/"), "must be an absolute path"),
  network: z.enum(NETWORK_MODES).default("none"),
  hostname: z.string().regex(HOSTNAME, "must be a lowercase DNS label").default("coop"),
  tmpSizeBytes: z.number().int().min(MIN_TMP_SIZE_BYTES).max(MAX_TMP_SIZE_BYTES)
    .default(64 * 2 ** 20),
  readOnlyPaths: z.array(
    z.string().refine((p) => p.startsWith("/") && !p.split("/").includes(".."), {
      message: "must be an absolute path without ..",
    }),
  ).default([]),
  /**
   * Names that, at the top of the workspace or one directory below it, are re-mounted
   * read-only inside the sandbox: the owner's tools trust them on the host (a `.git`'s config
   * and hooks run as whoever uses git there; ATTACKS F5, F23). Default `[".git"]`.
   */
  protectedNames: z.array(
    z.string().min(1).refine((n) => !n.includes("/") && n !== "." && n !== "..", {
      message: "must be a file or directory name (no /, not . or ..)",
    }),
  ).default([".git"]),
  /**
   * Most entries the check of `protectedNames` reads at the workspace's top before giving up;
   * past it the sandbox is not built (a workspace too large to verify; ATTACKS R12).
   */
  scanLimit: z.number().int().min(1).max(100_000_000).default(DEFAULT_SCAN_LIMIT),
  env: z.record(
    z.string().regex(ENV_NAME, "must be an environment variable name"),
    z.string().refine((v) => !v.includes("\0"), "must not contain NUL"),
  ).default({}),
  envPassthrough: z.array(z.string().regex(ENV_NAME, "must be an environment variable name"))
    .default([]),
  /** Memory limit of the whole sandbox (cgroup) or of each process's address space (rlimit). */
  memoryBytes: z.number().int("must be a whole number of bytes")
    .min(MIN_MEMORY_BYTES, "must be at least 16 MiB: less cannot run a shell")
    .max(MAX_MEMORY_BYTES, "must be at most 1 PiB").optional(),
  /** Most processes (and threads) alive at once, the sandbox's init included. */
  pidsLimit: z.number().int("must be a whole number")
    .min(2, "must be at least 2: the init and the command count too")
    .max(4_194_304, "must be at most 4194304 (the kernel's pid_max ceiling)").optional(),
  /** CPU bandwidth in cores, e.g. 0.5 or 2 (cgroup paths only). */
  cpus: z.number().min(0.01, "must be at least 0.01").max(1024, "must be at most 1024")
    .optional(),
  /** CPU seconds each process may use (RLIMIT_CPU, SIGXCPU then SIGKILL). Default: none. */
  cpuTimeSeconds: z.number().int("must be a whole number of seconds").min(1).max(2 ** 31)
    .optional(),
  /** Largest file a process may write (RLIMIT_FSIZE; beyond it: SIGXFSZ / EFBIG). */
  fileSizeBytes: z.number().int("must be a whole number of bytes")
    .min(1 << 20, "must be at least 1 MiB").max(2 ** 50).default(4 * 2 ** 30),
  /** Disk space the workspace may use, in bytes (docs/limits.md "Disk and inode quotas"). */
  diskQuotaBytes: z.number().int("must be a whole number of bytes")
    .min(1 << 20, "must be at least 1 MiB").max(2 ** 50).optional(),
  /** Files and directories the workspace may hold. */
  inodeQuota: z.number().int("must be a whole number").min(16, "must be at least 16")
    .max(2 ** 32, "must be at most 4294967296").optional(),
  /** Open file descriptors per process (RLIMIT_NOFILE, soft = hard). */
  openFiles: z.number().int("must be a whole number").min(64, "must be at least 64")
    .max(1 << 20, "must be at most 1048576").default(1024),
  /** `HOST[:PORT]` entries the proxy allows (network "proxy" only); see docs/network.md. */
  allowDomains: z.array(parsedBy(parseAllowEntry)).default([]),
  /**
   * Most connections open at once through the proxy (networks "proxy" and "public"); each costs a relay
   * thread in the gateway, and more are refused with a 503 (ATTACKS R11). Default 64.
   */
  proxyMaxConnections: z.number().int("must be a whole number")
    .min(1, "must be at least 1").max(4096, "must be at most 4096")
    .default(DEFAULT_PROXY_MAX_CONNECTIONS),
  /**
   * `IP:PORT` sockets the proxy never dials, not even for an IP-literal entry: the gateway's
   * own listeners (port 0: every port; an address of this host stands for all of them).
   */
  proxyNeverDial: z.array(parsedBy(parseSocketAddress)).default([]),
  /**
   * Host uid and gid of sandbox root when the invoker is root (an unprivileged invoker's
   * sandbox root is the invoker: no other id is available to it). They must belong to no host
   * account, group or subordinate range; the first sandbox checks (host_ids.ts, ATTACKS P15).
   */
  sandboxUid: z.number().int().min(1).max(2 ** 32 - 2).default(DEFAULT_SANDBOX_HOST_ID),
  sandboxGid: z.number().int().min(1).max(2 ** 32 - 2).default(DEFAULT_SANDBOX_HOST_ID),
  /** An environment's root: an overlay over a base (or the host's /usr), or a directory. */
  rootfs: rootfsSchema.optional(),
  /** Host directories bound read-write at absolute sandbox paths. */
  persist: persistSchema.default([]),
}).refine(
  (p) =>
    !(p.rootfs && !("lower" in p.rootfs && p.rootfs.lower === "host")) ||
    p.readOnlyPaths.length === 0,
  {
    path: ["readOnlyPaths"],
    message: "cannot be combined with an image or directory rootfs (its root is the image's)",
  },
).refine((p) => p.allowDomains.length === 0 || p.network === "proxy", {
  path: ["allowDomains"],
  message: 'only applies with network "proxy"',
});

/**
 * What callers write: only `workspace` is required; `resolvePolicy()` fills in the rest.
 *
 * @example
 * ```ts
 * const input: SandboxPolicyInput = { workspace: "/srv/coop/bob", network: "none", pidsLimit: 64 };
 * ```
 */
export interface SandboxPolicyInput {
  /** Host directory bound read-write at `/work` (also `$HOME` and the working directory). */
  workspace: string;
  /** Network mode; default `"none"`. */
  network?: NetworkMode;
  /** Hostname inside; default `"coop"`. */
  hostname?: string;
  /** Size of the private `/tmp` (and `/dev/shm`); default 64 MiB. */
  tmpSizeBytes?: number;
  /** Extra host paths bound read-only at the same place inside. */
  readOnlyPaths?: string[];
  /**
   * Names that, at the top of the workspace or one directory below it, are re-mounted
   * read-only inside: the owner's tools trust them on the host (`.git`; ATTACKS F5, F23).
   * Default `[".git"]`.
   */
  protectedNames?: string[];
  /**
   * Most entries the check of `protectedNames` reads at the workspace's top; past it the
   * sandbox is not built (a workspace too large to verify; ATTACKS R12). Default 100,000.
   */
  scanLimit?: number;
  /** Environment variables set inside (on top of `PATH HOME USER TMPDIR`). */
  env?: Record<string, string>;
  /** Names of the caller's environment variables passed through unchanged. */
  envPassthrough?: string[];
  /** Memory limit of the whole sandbox (cgroup) or of each process's address space (rlimit). */
  memoryBytes?: number;
  /** Most processes (and threads) alive at once, the sandbox's init included. */
  pidsLimit?: number;
  /** CPU bandwidth in cores, e.g. 0.5 or 2 (cgroup paths only). */
  cpus?: number;
  /** CPU seconds each process may use (RLIMIT_CPU). */
  cpuTimeSeconds?: number;
  /** Largest file a process may write (RLIMIT_FSIZE); default 4 GiB. */
  fileSizeBytes?: number;
  /** Disk space the workspace may use (bytes): refused at or over it, bounded per file. */
  diskQuotaBytes?: number;
  /** Files and directories the workspace may hold: refused at or over it. */
  inodeQuota?: number;
  /** Open file descriptors per process (RLIMIT_NOFILE); default 1024. */
  openFiles?: number;
  /** `HOST[:PORT]` entries the proxy allows (network "proxy" only; docs/network.md). */
  allowDomains?: string[];
  /** Most proxy connections open at once; more are refused with a 503 (default 64). */
  proxyMaxConnections?: number;
  /** `IP:PORT` sockets the proxy never dials, not even for an IP-literal entry. */
  proxyNeverDial?: string[];
  /**
   * Host uid of sandbox root when the invoker is root; it must belong to no host account,
   * group or subordinate range (checked before the first sandbox; ATTACKS P15).
   */
  sandboxUid?: number;
  /** Host gid of sandbox root when the invoker is root (as `sandboxUid`). */
  sandboxGid?: number;
  /**
   * An environment's root (docs/environments_overlay.md): an overlay of `lower` (a base
   * directory, or `"host"` for the host's `/usr`) under the user's `upper`, or a host
   * `directory` read-write as `/` (build sandboxes). Absent: today's read-only host root.
   */
  rootfs?: RootfsPolicy;
  /** Host directories bound read-write at absolute sandbox paths (created when missing). */
  persist?: PersistBind[];
}

/**
 * A validated sandbox policy: every field with a default is present.
 *
 * @example
 * ```ts
 * const policy: SandboxPolicy = resolvePolicy({ workspace: "/srv/coop/bob" });
 * policy.network; // "none"
 * ```
 */
export type SandboxPolicy =
  & Required<
    Omit<
      SandboxPolicyInput,
      | "memoryBytes"
      | "pidsLimit"
      | "cpus"
      | "cpuTimeSeconds"
      | "diskQuotaBytes"
      | "inodeQuota"
      | "rootfs"
    >
  >
  // Absent when unset: absent means unlimited (or, for rootfs, the host root).
  & Pick<
    SandboxPolicyInput,
    | "memoryBytes"
    | "pidsLimit"
    | "cpus"
    | "cpuTimeSeconds"
    | "diskQuotaBytes"
    | "inodeQuota"
    | "rootfs"
  >;

// The interfaces above are what users read; the schema is what runs. Both directions must hold.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _inputMatchesSchema: Same<SandboxPolicyInput, z.input<typeof policySchema>> = true;
const _outputMatchesSchema: Same<SandboxPolicy, z.output<typeof policySchema>> = true;
void _inputMatchesSchema, _outputMatchesSchema;

/**
 * Validates a policy and fills in defaults.
 *
 * @example
 * ```ts
 * const policy = resolvePolicy({ workspace: "/home/me/agent/bob" });
 * ```
 */
export function resolvePolicy(input: SandboxPolicyInput): SandboxPolicy {
  const result = policySchema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = issue.path.length ? issue.path.join(".") : "(policy)";
  throw new SandboxPolicyError(`invalid sandbox policy: ${path}: ${issue.message}`);
}
