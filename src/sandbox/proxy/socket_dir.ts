/**
 * A policy proxy's socket directory, `<tmp>/coop-proxy-XXXXXX`: made for each proxy, removed when
 * it closes — and, when the process that made it was killed outright (SIGKILL, the OOM killer), by
 * the next `coop start`'s sweep, since nothing else would remove it before a reboot.
 *
 * Whether a directory is still in use is not told by a pid (another pid namespace sharing `/tmp`,
 * a reused pid) but by a lock: the proxy holds a `flock` on `owner.lock` inside for its whole life,
 * taken before its socket exists, and the kernel lets go of it with the process. A sweep removes a
 * directory only when it is this user's, its socket is there (so its lock was taken) and it can
 * take that lock itself: nothing a live proxy — of this process, another gateway, a test running
 * beside it — still uses.
 * @module
 */
import { lstatSync, readdirSync, rmSync, type Stats } from "node:fs";
import { chmod, chown, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import process from "node:process";
import { getLogger } from "@logtape/logtape";
import { SandboxSetupError } from "../errors.ts";
import { cString, loadTrampoline, type Trampoline } from "../ffi.ts";

const log = getLogger(["coop", "sandbox"]);

/** `mkdtemp`'s names: the prefix and six letters or digits. */
const SOCKET_DIR = /^coop-proxy-[A-Za-z0-9]{6}$/;
const SOCKET = "proxy.sock";
/** The lock file in each socket directory; its text is the holder's pid (for people and tests). */
export const PROXY_DIR_LOCK = "owner.lock";
const LOCK = PROXY_DIR_LOCK;

/** What a holder writes into its lock file: its pid, for a person looking (the lock decides). */
const HOLDER = new TextEncoder().encode(`${process.pid}\n`);

/** A proxy's socket directory, locked for as long as the proxy lives. */
export interface ProxySocketDir {
  /** Where the proxy listens. */
  readonly socketPath: string;
  /**
   * Once the socket exists: makes it `owner`'s (the sandbox's outer ids, when they differ from
   * this process's), mode 0600, and then lets them through the directory, which stays this
   * user's (so that a sweep knows it for one of this user's).
   */
  handOver(owner?: { uid: number; gid: number }): Promise<void>;
  /** Removes the directory, then lets go of its lock. */
  remove(): Promise<void>;
}

/** Takes the lock of a socket directory: its fd, or minus the errno. */
function lockDir(lib: Trampoline, dir: string): number {
  return lib.coop_lock_file(
    cString(`${dir}/${LOCK}`),
    HOLDER,
    BigInt(HOLDER.length),
    new Int32Array(1),
  );
}

/** Makes a fresh socket directory in the system's temporary directory and takes its lock. */
export async function makeSocketDir(lib: Trampoline): Promise<ProxySocketDir> {
  const dir = await mkdtemp(`${tmpdir()}/coop-proxy-`);
  const fd = lockDir(lib, dir);
  if (fd < 0) {
    await rm(dir, { recursive: true, force: true }).catch(() => {});
    throw new SandboxSetupError("proxy-lock", -fd, `the lock file in ${dir}`);
  }
  const socketPath = `${dir}/${SOCKET}`;
  let locked = true;
  return {
    socketPath,
    async handOver(owner) {
      if (owner) await chown(socketPath, owner.uid, owner.gid);
      await chmod(socketPath, 0o600);
      // Search only: the sandbox's init finds the socket to bind it; nobody else may connect.
      if (owner) await chmod(dir, 0o711);
    },
    async remove() {
      if (!locked) return;
      await rm(dir, { recursive: true, force: true }).catch(() => {});
      // Released last: while the directory exists, a sweep must see it in use.
      lib.coop_close(fd);
      locked = false;
    },
  };
}

/** What one sweep of socket directories did. */
export interface ProxyDirSweep {
  /** Directories removed: this user's, their proxy gone. */
  removed: string[];
}

/** Whether the entry at `path` (a link not followed) passes `check`; false when it is gone. */
function entryIs(path: string, check: (stat: Stats) => boolean): boolean {
  try {
    return check(lstatSync(path));
  } catch {
    return false;
  }
}

/**
 * Removes the proxy socket directories in `parent` (default: the system's temporary directory)
 * whose proxy is gone: those of this user whose lock it can take. One whose lock is held (a live
 * proxy, in this process or any other), another user's, and one still being made are left alone.
 *
 * @example
 * ```ts
 * import { sweepDeadProxyDirs } from "./mod.ts";
 * const { removed } = await sweepDeadProxyDirs();
 * console.error(`removed ${removed.length} socket directories of proxies that are gone`);
 * ```
 */
export async function sweepDeadProxyDirs(parent: string = tmpdir()): Promise<ProxyDirSweep> {
  const sweep: ProxyDirSweep = { removed: [] };
  const uid = process.getuid?.() ?? 0;
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return sweep; // gone, or not ours to read: nothing to sweep there
  }
  const candidates = names.filter((name) => SOCKET_DIR.test(name))
    .map((name) => `${parent}/${name}`)
    .filter((dir) =>
      entryIs(dir, (stat) => stat.isDirectory() && stat.uid === uid) &&
      entryIs(`${dir}/${LOCK}`, (stat) => stat.isFile() && stat.uid === uid) &&
      // Made after the lock was taken: without it, its maker may be between the two.
      entryIs(`${dir}/${SOCKET}`, (stat) => stat.isSocket())
    );
  if (candidates.length === 0) return sweep;
  const lib = await loadTrampoline().catch(() => null);
  if (!lib) return sweep; // no sandbox library on this host: it made no proxies either
  for (const dir of candidates) {
    const fd = lockDir(lib, dir);
    if (fd < 0) continue; // held: a live proxy's (EWOULDBLOCK), or not ours to open
    try {
      rmSync(dir, { recursive: true, force: true });
      sweep.removed.push(dir);
    } catch {
      // left for the next sweep
    } finally {
      lib.coop_close(fd);
    }
  }
  if (sweep.removed.length > 0) {
    log.info("sandbox.proxy_dir.swept {removed} socket directories of proxies that are gone", {
      event: "sandbox.proxy_dir.swept",
      removed: sweep.removed.length,
    });
  }
  return sweep;
}
