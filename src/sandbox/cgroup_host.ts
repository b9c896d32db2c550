/**
 * What this host offers for cgroup-based limits: a delegated cgroup v2 subtree, cgroup v1
 * hierarchies the gateway may write (root on a v1/v2 hybrid), or neither — each with the
 * reason. Read from /proc/self/mountinfo, /proc/self/cgroup and the gateway's own v2 cgroup
 * once per process.
 * @module
 */
import { readFileSync, statSync } from "node:fs";
import process from "node:process";
import { isInside } from "./path_containment.ts";

/** Controllers the limits use, by the policy field they enforce. */
export const V1_CONTROLLERS = ["memory", "pids", "cpu"] as const;
/** A cgroup v1 controller Coop writes. */
export type V1Controller = (typeof V1_CONTROLLERS)[number];

/** The gateway's own cgroup directory in each usable v1 hierarchy, or why there is none. */
export interface CgroupV1Host {
  /** Directory of the gateway's cgroup per controller (sandbox cgroups go below it). */
  dirs: Partial<Record<V1Controller, string>>;
  /** Why a controller is unusable (missing entries are usable). */
  unusable: Partial<Record<V1Controller, string>>;
}

/** Controllers the v2 path needs for the default limits (memory and processes). */
export const V2_REQUIRED = ["memory", "pids"] as const;

/** A cgroup v2 subtree the gateway may write: sandboxes' cgroups go directly below `dir`. */
export interface CgroupV2Host {
  /** The gateway's own v2 cgroup (delegated to it, or any cgroup when it runs as root). */
  dir: string;
  /** Controllers `dir` can give its children (`cgroup.controllers`): memory, pids, maybe cpu. */
  controllers: string[];
}

/** What the host offers; `v2Reason` says why the v2 path is not used. */
export interface CgroupHost {
  /** The usable delegated v2 subtree, or null (then `v2Reason` says why). */
  v2: CgroupV2Host | null;
  /** Why there is no usable v2 subtree ("" when there is one). */
  v2Reason: string;
  /** The v1 hierarchies (empty `dirs` when not root or not mounted). */
  v1: CgroupV1Host;
}

/** One cgroup or cgroup2 mount of /proc/self/mountinfo. */
export interface Mount {
  root: string;
  point: string;
  fstype: string;
  /** Per-mount options (`rw`/`ro`, …). */
  options: string[];
  superOptions: string[];
}

/** Parses /proc/self/mountinfo into the cgroup mounts. */
export function parseCgroupMounts(mountinfo: string): Mount[] {
  const mounts: Mount[] = [];
  for (const line of mountinfo.split("\n")) {
    const [left, right] = line.split(" - ");
    if (!right) continue;
    const fields = left.split(" ");
    const [fstype, , superOptions = ""] = right.split(" ");
    if (fstype !== "cgroup" && fstype !== "cgroup2") continue;
    const unescape = (s: string) =>
      s.replace(/\\(\d{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
    mounts.push({
      root: unescape(fields[3]),
      point: unescape(fields[4]),
      fstype,
      options: (fields[5] ?? "").split(","),
      superOptions: superOptions.split(","),
    });
  }
  return mounts;
}

/** Parses /proc/self/cgroup: controller list ("" for v2) → path. */
export function parseProcCgroup(text: string): Map<string, string> {
  const paths = new Map<string, string>();
  for (const line of text.split("\n")) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!match) continue;
    if (match[1] === "") paths.set("", match[2]);
    for (const controller of match[1].split(",")) if (controller) paths.set(controller, match[2]);
  }
  return paths;
}

function joinCgroup(mount: Mount, path: string): string {
  // In a container the mount's root may be a subtree; /proc/self/cgroup is then relative to it
  // or still absolute, depending on the cgroup namespace.
  // A sibling that merely shares the prefix (root /docker/abc, path /docker/abcdef) is not below it.
  const rel = mount.root !== "/" && isInside(path, mount.root)
    ? path.slice(mount.root.length)
    : path;
  return `${mount.point}${rel === "/" ? "" : rel}`.replace(/\/+$/, "");
}

function readText(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

function ownerOf(path: string): number | null {
  try {
    return statSync(path).uid;
  } catch {
    return null;
  }
}

/** The files systemd (Delegate=yes) and cgroups(7) hand to a delegatee, besides the directory. */
const DELEGATED_FILES = ["cgroup.procs", "cgroup.subtree_control"];

function describeV2(
  mounts: Mount[],
  paths: Map<string, string>,
  uid: number,
  read: (path: string) => string | null,
  owner: (path: string) => number | null,
  selfPid: number,
): { v2: CgroupV2Host | null; v2Reason: string } {
  const mount = mounts.find((m) => m.fstype === "cgroup2");
  if (!mount || !paths.has("")) return { v2: null, v2Reason: "no cgroup2 filesystem is mounted" };
  const dir = joinCgroup(mount, paths.get("")!);
  if (mount.options.includes("ro") || mount.superOptions.includes("ro")) {
    return {
      v2: null,
      v2Reason: `cgroup v2 at ${mount.point} is mounted read-only (a container?)`,
    };
  }
  const controllers = (read(`${dir}/cgroup.controllers`) ?? "").trim().split(/\s+/)
    .filter(Boolean);
  const missing = V2_REQUIRED.filter((c) => !controllers.includes(c));
  if (missing.length) {
    return {
      v2: null,
      v2Reason: `cgroup v2 at ${mount.point} offers [${controllers.join(" ")}] to ${dir}: no ` +
        `${missing.join("/")} controller (bound to v1 hierarchies, or not delegated)`,
    };
  }
  // Root may write any cgroup; anyone else only a delegated one, whose directory and
  // delegation files belong to them (systemd's Delegate=yes chowns exactly these).
  const notOwned = uid === 0
    ? []
    : [dir, ...DELEGATED_FILES.map((f) => `${dir}/${f}`)].filter((p) => owner(p) !== uid);
  if (notOwned.length) {
    return {
      v2: null,
      v2Reason: `cgroup v2 cgroup ${dir} is not delegated to uid ${uid} (${notOwned[0]} ` +
        `belongs to uid ${owner(notOwned[0]) ?? "?"}): run Coop as a systemd service with ` +
        "Delegate=yes, or start it with `systemd-run --user --scope -p Delegate=yes` " +
        "(docs/limits.md)",
    };
  }
  // Below the root, a cgroup whose processes are not all the gateway's cannot hand controllers
  // to children ("no internal processes"): making it do so would move strangers into a leaf.
  const isRoot = mount.root === "/" && paths.get("") === "/";
  const enabled = (read(`${dir}/cgroup.subtree_control`) ?? "").trim().split(/\s+/);
  if (!isRoot && V2_REQUIRED.some((c) => !enabled.includes(c))) {
    const others = (read(`${dir}/cgroup.procs`) ?? "").split("\n")
      .filter((p) => p && p !== String(selfPid));
    if (others.length) {
      return {
        v2: null,
        v2Reason: `cgroup v2 cgroup ${dir} also holds ${others.length} process(es) that are not ` +
          "the gateway's, so it cannot give controllers to children: give Coop a cgroup of its " +
          "own (a systemd service or scope with Delegate=yes)",
      };
    }
  }
  return { v2: { dir, controllers }, v2Reason: "" };
}

/**
 * Describes the host from the given /proc texts (pure: `read` reads cgroupfs files, `owner`
 * gives a file's owner uid, `selfPid` is the gateway's pid, so tests describe stand-in hosts).
 */
export function describeCgroupHost(
  mountinfo: string,
  procCgroup: string,
  uid: number,
  read: (path: string) => string | null = readText,
  owner: (path: string) => number | null = ownerOf,
  selfPid: number = process.pid,
): CgroupHost {
  const mounts = parseCgroupMounts(mountinfo);
  const paths = parseProcCgroup(procCgroup);
  const { v2, v2Reason } = describeV2(mounts, paths, uid, read, owner, selfPid);

  const v1: CgroupV1Host = { dirs: {}, unusable: {} };
  for (const controller of V1_CONTROLLERS) {
    const mount = mounts.find((m) => m.fstype === "cgroup" && m.superOptions.includes(controller));
    const path = paths.get(controller);
    if (!mount || path === undefined) {
      v1.unusable[controller] = `no cgroup v1 hierarchy with the ${controller} controller`;
    } else if (uid !== 0) {
      v1.unusable[controller] = `cgroup v1 ${controller} needs root (invoked as uid ${uid}; ` +
        "v1 has no safe delegation)";
    } else {
      v1.dirs[controller] = joinCgroup(mount, path);
    }
  }
  return { v2, v2Reason, v1 };
}

let cached: CgroupHost | undefined;

/** Forgets what `cgroupHost()` read (after the gateway moved to another cgroup). */
export function forgetCgroupHost(): void {
  cached = undefined;
}

/** This host's cgroup situation, read once. */
export function cgroupHost(): CgroupHost {
  cached ??= describeCgroupHost(
    readText("/proc/self/mountinfo") ?? "",
    readText("/proc/self/cgroup") ?? "",
    process.getuid?.() ?? -1,
  );
  return cached;
}
