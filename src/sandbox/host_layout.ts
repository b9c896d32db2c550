/**
 * What of the host's filesystem a sandbox gets: read-only `/usr` and the top-level links or
 * directories into it, and a few `/etc` entries. Read once per process.
 * @module
 */
import { lstatSync, readlinkSync, type Stats } from "node:fs";

/** One piece of the sandbox's root, derived from the host. */
export type LayoutEntry =
  | { kind: "bind"; host: string; inside: string }
  | { kind: "symlink"; target: string; inside: string };

const TOP_LEVEL = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];
/** /etc entries programs need to run; everything else of the host's /etc stays out. */
const ETC_BINDS = [
  "/etc/ld.so.cache",
  "/etc/alternatives",
  "/etc/ssl/certs",
  "/etc/ssl/openssl.cnf",
  "/etc/ca-certificates",
  "/etc/mime.types",
];

function lstat(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

let cached: LayoutEntry[] | undefined;

/** The host-derived entries, in mount order. */
export function hostLayout(): LayoutEntry[] {
  if (cached) return cached;
  const entries: LayoutEntry[] = [{ kind: "bind", host: "/usr", inside: "/usr" }];
  for (const path of TOP_LEVEL) {
    const info = lstat(path);
    if (!info) continue;
    if (info.isSymbolicLink()) {
      entries.push({ kind: "symlink", target: readlinkSync(path), inside: path });
    } else if (info.isDirectory()) entries.push({ kind: "bind", host: path, inside: path });
  }
  for (const path of ETC_BINDS) {
    if (lstat(path)) entries.push({ kind: "bind", host: path, inside: path });
  }
  const localtime = lstat("/etc/localtime");
  if (localtime?.isSymbolicLink()) {
    const target = readlinkSync("/etc/localtime");
    // Only zone files under /usr resolve inside; anything else is left out.
    if (target.replace(/^(\.\.\/)+/, "/").startsWith("/usr/")) {
      entries.push({ kind: "symlink", target, inside: "/etc/localtime" });
    }
  }
  cached = entries;
  return entries;
}
