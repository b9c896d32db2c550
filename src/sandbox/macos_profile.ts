/**
 * The SBPL profile `sandbox-exec` runs a command under on macOS: deny by default; the
 * workspace read-write; system paths read-only; no network unless the policy's proxy is
 * allowed (then only to its loopback port); protected paths (`.git`, …) neither writable nor
 * movable. SBPL rules match paths, not files, and `rename(2)` is a `file-write-unlink` of its
 * source: so unlinking is denied on the protected paths, on every directory between them and the
 * workspace, and on the workspace itself — or renaming `project` (or the whole workspace, into
 * the writable `$TMPDIR`) would carry `project/.git` out of the read-only rule's reach, to be
 * written and moved back (the move-to-readable class, ATTACKS.md F7/M3).
 * @module
 */
import { dirname } from "node:path";

/** What the profile is generated from. */
export interface ProfileInput {
  /** The workspace, an absolute real path (macOS resolves /tmp to /private/tmp first). */
  workspace: string;
  /** A private temporary directory for this command (`$TMPDIR`), read-write. */
  tmpDir: string;
  /** Absolute paths inside the workspace that stay read-only and cannot be moved. */
  protectedPaths: readonly string[];
  /** `none`: no network; `proxy`: only loopback `proxyPort`; `host`: the host's network. */
  network: "none" | "proxy" | "host";
  /** The policy proxy's loopback port, with `network: "proxy"`. */
  proxyPort?: number;
}

/** Read-only system locations a shell and common tools need. */
const SYSTEM_READ = [
  "/usr",
  "/bin",
  "/sbin",
  "/System",
  "/Library/Apple",
  "/Library/Frameworks",
  "/private/etc",
  "/private/var/db/dyld",
  "/private/var/db/timezone",
  "/opt/homebrew",
  "/usr/local",
  "/dev",
];
/** Device files a command may write (its output, and the bit buckets). */
const DEVICE_WRITE = [
  "/dev/null",
  "/dev/zero",
  "/dev/tty",
  "/dev/dtracehelper",
  "/dev/stdout",
  "/dev/stderr",
];

/** An SBPL string literal. */
function quote(text: string): string {
  if (/[\0\n]/.test(text)) {
    throw new RangeError(`a path for the profile holds a NUL or newline: ${JSON.stringify(text)}`);
  }
  return `"${text.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
}

/**
 * The directories a rename of which would move a protected path: the workspace, and each
 * directory between it and a protected path (`<ws>/project` for `<ws>/project/.git`).
 */
function pinnedDirectories(workspace: string, protectedPaths: readonly string[]): string[] {
  const pinned = new Set([workspace]);
  for (const path of protectedPaths) {
    for (let dir = dirname(path); dir.startsWith(`${workspace}/`); dir = dirname(dir)) {
      pinned.add(dir);
    }
  }
  return [...pinned].sort();
}

/** The profile for `input`, one rule per line; later rules take precedence in SBPL. */
export function sandboxExecProfile(input: ProfileInput): string {
  if (input.network === "proxy" && !Number.isInteger(input.proxyPort)) {
    throw new RangeError("network proxy needs the proxy's port");
  }
  const lines = [
    "(version 1)",
    "(deny default)",
    "; processes: run programs, fork, signal only inside this sandbox",
    "(allow process-exec process-fork)",
    "(allow signal (target same-sandbox))",
    "(allow sysctl-read)",
    '(allow mach-lookup (global-name "com.apple.system.opendirectoryd.libinfo"))',
    "; the root directory itself, for path lookups",
    '(allow file-read-metadata (literal "/") (literal "/private") (literal "/private/var") (literal "/tmp") (literal "/var"))',
    "; system paths: read-only",
    `(allow file-read* ${SYSTEM_READ.map((p) => `(subpath ${quote(p)})`).join(" ")})`,
    `(allow file-write* ${DEVICE_WRITE.map((p) => `(literal ${quote(p)})`).join(" ")})`,
    "; the workspace: read-write",
    `(allow file-read* file-write* (subpath ${quote(input.workspace)}))`,
    "; a private temporary directory: read-write",
    `(allow file-read* file-write* (subpath ${quote(input.tmpDir)}))`,
  ];
  if (input.protectedPaths.length) {
    const paths = input.protectedPaths.map((p) => `(subpath ${quote(p)})`).join(" ");
    lines.push(
      "; protected paths: read-only, and neither deletable nor movable",
      `(deny file-write* ${paths})`,
      `(deny file-write-unlink ${paths})`,
    );
  }
  const pinned = pinnedDirectories(input.workspace, input.protectedPaths);
  lines.push(
    "; the workspace and the directories above protected paths: not movable",
    `(deny file-write-unlink ${pinned.map((p) => `(literal ${quote(p)})`).join(" ")})`,
  );
  if (input.network === "host") {
    lines.push("; network: the host's", "(allow network*)");
  } else if (input.network === "proxy") {
    lines.push(
      "; network: only the policy proxy on loopback",
      `(allow network-outbound (remote tcp ${quote(`localhost:${input.proxyPort}`)}))`,
    );
  } else {
    lines.push("; network: none (denied by default)");
  }
  return lines.join("\n") + "\n";
}
