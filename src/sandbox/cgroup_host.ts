/**
 * What this host offers for cgroup-based limits: a delegated cgroup v2 subtree, cgroup v1
 * hierarchies the gateway may write (root on a v1/v2 hybrid), or neither — each with the
 * reason. Read from /proc/self/mountinfo and /proc/self/cgroup once per process.
 * @module
 */
import { readFileSync } from "node:fs";
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

/** What the host offers; `v2Reason` says why the v2 path is not used. */
export interface CgroupHost {
  /** Always set: the v2 path is not implemented, and this says what was found. */
  v2Reason: string;
  /** The v1 hierarchies (empty `dirs` when not root or not mounted). */
  v1: CgroupV1Host;
}

interface Mount {
  root: string;
  point: string;
  fstype: string;
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

/** Describes the host from the given /proc texts (pure; `read` reads cgroupfs files). */
export function describeCgroupHost(
  mountinfo: string,
  procCgroup: string,
  uid: number,
  read: (path: string) => string | null = readText,
): CgroupHost {
  const mounts = parseCgroupMounts(mountinfo);
  const paths = parseProcCgroup(procCgroup);

  let v2Reason = "no cgroup2 filesystem is mounted";
  const v2 = mounts.find((m) => m.fstype === "cgroup2");
  if (v2 && paths.has("")) {
    const dir = joinCgroup(v2, paths.get("")!);
    const controllers = (read(`${dir}/cgroup.controllers`) ?? "").trim().split(/\s+/)
      .filter(Boolean);
    const missing = ["memory", "pids"].filter((c) => !controllers.includes(c));
    v2Reason = missing.length
      ? `cgroup v2 at ${v2.point} offers [${controllers.join(" ")}] to ${dir}: no ` +
        `${missing.join("/")} controller (bound to v1 hierarchies on this host)`
      : `cgroup v2 at ${dir} has memory and pids, but Coop's v2 path is not implemented yet ` +
        "(it could not be tested here)";
  }

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
  return { v2Reason, v1 };
}

let cached: CgroupHost | undefined;

/** This host's cgroup situation, read once. */
export function cgroupHost(): CgroupHost {
  cached ??= describeCgroupHost(
    readText("/proc/self/mountinfo") ?? "",
    readText("/proc/self/cgroup") ?? "",
    process.getuid?.() ?? -1,
  );
  return cached;
}
