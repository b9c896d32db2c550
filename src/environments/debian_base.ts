/**
 * The base from `debian:<suite>`: mmdebstrap (variant `apt`: Essential plus apt, so users can
 * `apt-get install` later) writes a tarball, with `[packages]` passed as `--include` so apt in
 * mmdebstrap's own namespace resolves, downloads and configures them with every system id it
 * needs; the tarball is then unpacked by `layer_unpack.ts` — as files of the invoker (or, for
 * root, of the sandbox's host id), which a sandbox sees as root's.
 *
 * Modes (docs/environments.md "Building the base"): root uses `--mode=root`; anyone else
 * `--mode=unshare`, which needs `newuidmap` (package uidmap) and a subordinate id range in
 * /etc/subuid and /etc/subgid, or — without those — `--mode=fakechroot` when fakechroot and
 * fakeroot are installed. `chrootless` is not used: it runs maintainer scripts on the host.
 * @module
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import { delimiter, join } from "node:path";
import { CoopError } from "../errors/coop_error.ts";
import type { BuildProgress } from "./build_progress.ts";
import { LayerUnpacker, type UnpackOptions, type UnpackSkipped } from "./layer_unpack.ts";
import { unpackTarFile } from "./oci_base.ts";

/** mmdebstrap cannot run here (missing, no id range) or failed; the message says what to do. */
export class DebianBuildError extends CoopError {
  /** `message` names the missing piece and the command that provides it. */
  constructor(message: string) {
    super("environment.debian", message);
    this.name = "DebianBuildError";
  }
}

/** The command that installs mmdebstrap, as the error shows it. */
export const INSTALL_MMDEBSTRAP = "apt-get update && apt-get install -y mmdebstrap";

/** Where `program` is on PATH, or null. */
export function findProgram(program: string): string | null {
  return findProgramOn(program, Deno.env.get("PATH") ?? "");
}

/** Where `program` is in the directories of `path` (a PATH value), or null. */
export function findProgramOn(program: string, path: string): string | null {
  for (const dir of path.split(delimiter)) {
    if (dir && existsSync(join(dir, program))) return join(dir, program);
  }
  return null;
}

/** Whether /etc/subuid-style `file` gives `user` (name or uid) a range. */
function hasRange(file: string, user: string, uid: number): boolean {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return false;
  }
  return text.split("\n").some((line) => {
    const [who, , count] = line.split(":");
    return (who === user || who === String(uid)) && Number(count) > 0;
  });
}

/** How mmdebstrap builds: as root, in a user namespace, or under fakechroot+fakeroot. */
export type MmdebstrapMode = "root" | "unshare" | "fakechroot";

/**
 * The mmdebstrap mode for this invoker: root for root; otherwise unshare when the user has a
 * subordinate id range and newuidmap, else fakechroot when fakechroot and fakeroot are
 * installed; else a DebianBuildError saying what to add.
 */
export function mmdebstrapMode(
  uid = Deno.uid() ?? 0,
  files = { subuid: "/etc/subuid", subgid: "/etc/subgid" },
  path = Deno.env.get("PATH") ?? "",
): MmdebstrapMode {
  const findProgram = (program: string) => findProgramOn(program, path);
  if (findProgram("mmdebstrap") === null) {
    throw new DebianBuildError(
      `mmdebstrap is not installed; as root run: ${INSTALL_MMDEBSTRAP}`,
    );
  }
  if (uid === 0) return "root";
  const user = userInfo().username;
  const idmap = findProgram("newuidmap") !== null && findProgram("newgidmap") !== null;
  const ranges = hasRange(files.subuid, user, uid) && hasRange(files.subgid, user, uid);
  if (idmap && ranges) return "unshare";
  if (findProgram("fakechroot") !== null && findProgram("fakeroot") !== null) return "fakechroot";
  const missing = [
    idmap ? "" : "newuidmap and newgidmap (as root: apt-get install -y uidmap)",
    ranges ? "" : `a subordinate id range for ${user} in ${files.subuid} and ${files.subgid} ` +
      `(as root: usermod --add-subuids 100000-165535 --add-subgids 100000-165535 ${user}; ` +
      "pick a range no other user has)",
  ].filter(Boolean).join(" and ");
  throw new DebianBuildError(
    `mmdebstrap --mode=unshare needs ${missing}; or install fakechroot and fakeroot for ` +
      "--mode=fakechroot (slower, and some maintainer scripts fail under it), or run coop " +
      "init as root",
  );
}

/** Runs mmdebstrap into `tarball`, forwarding its progress lines; throws with its last lines. */
async function runMmdebstrap(args: string[], progress: BuildProgress): Promise<void> {
  const child = spawn("mmdebstrap", args, { stdio: ["ignore", "ignore", "pipe"] });
  const tail: string[] = [];
  let partial = "";
  let lastLine = performance.now();
  const alive = setInterval(() => {
    if (performance.now() - lastLine > 5000) progress.step("fetch", "mmdebstrap still running");
  }, 5000);
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (text: string) => {
    const lines = (partial + text).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      tail.push(line);
      if (tail.length > 15) tail.shift();
      if (/^[IWE]: /.test(line)) {
        lastLine = performance.now();
        progress.step("fetch", `mmdebstrap ${line}`);
      }
    }
  });
  try {
    const status = await new Promise<number | string>((resolve, reject) => {
      child.on("error", reject);
      child.on("close", (code, signal) => resolve(code ?? signal ?? "unknown"));
    });
    if (status !== 0) {
      if (partial) tail.push(partial);
      throw new DebianBuildError(
        `mmdebstrap ${args.join(" ")} exited with ${status}:\n  ${tail.join("\n  ")}`,
      );
    }
  } finally {
    clearInterval(alive);
  }
}

/** What the apt configuration in a debian base says, so apt works in a one-id sandbox. */
export const APT_SANDBOX_CONF = 'APT::Sandbox::User "root";\n';

/**
 * Builds a Debian `suite` from `mirror` with `packages` into `rootfs`, using `scratch` for the
 * tarball; `owner` as in `UnpackOptions`.
 */
export async function buildDebianBase(
  options: {
    suite: string;
    mirror: string;
    packages: readonly string[];
    rootfs: string;
    scratch: string;
    owner?: UnpackOptions["owner"];
    /** Default: `mmdebstrapMode()` for this invoker. */
    mode?: MmdebstrapMode;
  },
  progress: BuildProgress,
  phase: (step: "fetch" | "unpack") => void,
): Promise<UnpackSkipped> {
  phase("fetch");
  const mode = options.mode ?? mmdebstrapMode();
  const tarball = join(options.scratch, "debian.tar");
  mkdirSync(options.scratch, { recursive: true });
  const args = [`--mode=${mode}`, "--variant=apt", "--format=tar"];
  if (options.packages.length > 0) args.push(`--include=${options.packages.join(",")}`);
  args.push(options.suite, tarball, options.mirror);
  progress.step("fetch", `mmdebstrap --mode=${mode} ${options.suite} from ${options.mirror}`);
  await runMmdebstrap(args, progress);
  phase("unpack");
  progress.step("unpack", `${tarball} (${statSync(tarball).size} bytes)`);
  mkdirSync(options.rootfs, { recursive: true });
  const unpacker = new LayerUnpacker(options.rootfs, {
    owner: options.owner,
    onBytes: (n) => progress.bytes(n),
  });
  await unpackTarFile(tarball, unpacker, "none");
  unpacker.finishDirectories();
  rmSync(tarball, { force: true });
  // The sandbox maps one id, so apt's privilege drop to _apt cannot work inside it.
  const conf = join(options.rootfs, "etc/apt/apt.conf.d/99coop-sandbox");
  writeFileSync(conf, APT_SANDBOX_CONF, { mode: 0o644, flag: "wx" });
  if (options.owner) Deno.chownSync(conf, options.owner.uid, options.owner.gid);
  return unpacker.skipped;
}
