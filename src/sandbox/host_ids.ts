/**
 * The host uid and gid a sandbox's root maps to when root invokes Coop, and the check that no
 * host account or subordinate id range already uses them (ATTACKS P15).
 *
 * A host account that shares the sandbox's uid could signal its processes, ptrace them where
 * the kernel allows it, and rename or remove files the sandbox owns on the host — the policy
 * proxy's socket directory among them. 65534 (`nobody`), the usual "unprivileged" choice, is
 * such an account: every daemon that drops to `nobody` runs as it.
 * @module
 */
import { readFileSync } from "node:fs";
import { SandboxError } from "./errors.ts";

/**
 * Default host uid and gid of sandbox root for a root invoker: two billion (0x77359400).
 *
 * It lies where no convention hands out ids (systemd's docs/UIDS-GIDS.md): above the system
 * (0–999) and regular (1000–60000) users, systemd-homed (60001–60513), the greeter range,
 * DynamicUser= (61184–65519), `nobody` (65534), the 16-bit -1 (65535) and the container
 * ranges systemd-nspawn picks from (524288–1879048191); below systemd's foreign-uid range
 * (2147352576–2147418111) and below 2^31, above which tools that keep ids in a signed int
 * misbehave. shadow's useradd hands out subordinate ids (/etc/subuid, /etc/subgid) from
 * 100000 up to 600100000 by default (SUB_UID_MIN/SUB_UID_MAX in login.defs). None of that is
 * a guarantee, so the first sandbox checks /etc/passwd, /etc/group, /etc/subuid and
 * /etc/subgid (`assertHostIdsFree`).
 */
export const DEFAULT_SANDBOX_HOST_ID = 2_000_000_000;

/** The account and subordinate-id files the check reads (injectable for tests). */
export interface HostIdFiles {
  passwd: string;
  group: string;
  subuid: string;
  subgid: string;
}

/** The host's files. */
export const HOST_ID_FILES: Readonly<HostIdFiles> = {
  passwd: "/etc/passwd",
  group: "/etc/group",
  subuid: "/etc/subuid",
  subgid: "/etc/subgid",
};

/** The sandbox's host uid or gid is already someone's; the sandbox is not started. */
export class SandboxHostIdError extends SandboxError {
  /** `message` names the clashing account, group or range and the policy key to change. */
  constructor(message: string) {
    super("sandbox.host_id", message);
    this.name = "SandboxHostIdError";
  }
}

/** Lines of a colon-separated account file, split into fields; a missing file has none. */
function records(path: string): string[][] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return [];
    // Fail closed: an account file we cannot read may list the id.
    throw new SandboxHostIdError(
      `cannot read ${path} to check that the sandbox's host ids belong to no account: ` +
        `${(error as Error).message}`,
    );
  }
  return text.split("\n")
    .filter((line) => line.trim() !== "" && !line.startsWith("#"))
    .map((line) => line.split(":"));
}

/** The numeric field `index` of a record, or NaN (NIS `+`/`-` lines and junk never match). */
function idField(fields: readonly string[], index: number): number {
  const value = fields[index] ?? "";
  return /^\d+$/.test(value) ? Number(value) : NaN;
}

function rangeClashes(path: string, kind: string, id: number): string[] {
  return records(path).flatMap((fields) => {
    const start = idField(fields, 1), count = idField(fields, 2);
    if (!(id >= start && id < start + count)) return [];
    return [
      `${kind} ${id} lies in the subordinate ${kind} range ${start}–${start + count - 1} of ` +
      `"${fields[0]}" (${path})`,
    ];
  });
}

/**
 * Names everything that already uses host uid `uid` or gid `gid`: accounts in `passwd` (by
 * uid or primary gid), groups in `group`, ranges in `subuid`/`subgid`. Empty when they are
 * free. Throws SandboxHostIdError when a file exists but cannot be read.
 *
 * @example
 * ```ts
 * hostIdClashes(65534, 65534); // ['uid 65534 belongs to account "nobody" (/etc/passwd)', …]
 * ```
 */
export function hostIdClashes(
  uid: number,
  gid: number,
  files: Readonly<HostIdFiles> = HOST_ID_FILES,
): string[] {
  const passwd = records(files.passwd);
  return [
    ...passwd.filter((f) => idField(f, 2) === uid)
      .map((f) => `uid ${uid} belongs to account "${f[0]}" (${files.passwd})`),
    ...rangeClashes(files.subuid, "uid", uid),
    ...records(files.group).filter((f) => idField(f, 2) === gid)
      .map((f) => `gid ${gid} belongs to group "${f[0]}" (${files.group})`),
    ...passwd.filter((f) => idField(f, 3) === gid)
      .map((f) => `gid ${gid} is the primary group of account "${f[0]}" (${files.passwd})`),
    ...rangeClashes(files.subgid, "gid", gid),
  ];
}

/** Id pairs (and files) already found free: the files are read once per process. */
const verified = new Set<string>();

/**
 * Throws SandboxHostIdError unless host uid `uid` and gid `gid` belong to no account, group
 * or subordinate range. A pair found free is remembered; a clash is checked again next time,
 * so fixing the host's files needs no restart.
 */
export function assertHostIdsFree(
  uid: number,
  gid: number,
  files: Readonly<HostIdFiles> = HOST_ID_FILES,
): void {
  const key = `${uid}:${gid}:${files.passwd}:${files.group}:${files.subuid}:${files.subgid}`;
  if (verified.has(key)) return;
  const clashes = hostIdClashes(uid, gid, files);
  if (clashes.length > 0) {
    throw new SandboxHostIdError(
      `sandbox root would run on the host as uid ${uid}, gid ${gid}, but ${clashes.join("; ")}` +
        ": whoever runs as those ids could signal the sandbox's processes and move its files. " +
        "Set the policy's sandboxUid/sandboxGid to ids that no account, group or " +
        '/etc/subuid, /etc/subgid range uses (docs/security.md, "The sandbox\'s host uid")',
    );
  }
  verified.add(key);
}
