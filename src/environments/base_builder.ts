/**
 * `coop init` / `coop rebuild`: builds an environment's base layer into `base.next/`, writes its
 * manifest, then puts it in place of `base/` by rename (the old one removed after). A failure
 * names its step and cause, removes `base.next/` and leaves the previous base as it was.
 * @module
 */
import { chownSync, existsSync, mkdirSync, renameSync } from "node:fs";
import { join } from "node:path";
import type { Coopfile } from "../config/coopfile.ts";
import { CoopError, errorMessage } from "../errors/coop_error.ts";
import { DEFAULT_SANDBOX_HOST_ID } from "../sandbox/host_ids.ts";
import { coopfileHash } from "../config/coopfile_hash.ts";
import { imageText, writeBaseManifest } from "./base_manifest.ts";
import type { BuildProgress, BuildStep } from "./build_progress.ts";
import { sizeText } from "./size_text.ts";
import { buildDebianBase } from "./debian_base.ts";
import {
  type BaseManifest,
  type EnvironmentPaths,
  environmentPaths,
} from "./environment_layout.ts";
import type { UnpackSkipped } from "./layer_unpack.ts";
import { unpackOciImage } from "./oci_base.ts";
import { runBuildCommands } from "./build_sandbox.ts";
import { removeTree, treeSize } from "./sandbox_tree.ts";
import { EnvironmentError } from "./environment_errors.ts";
import { upperLocker } from "./layer_removal.ts";
import { holderOf } from "../sandbox/upper_lock.ts";
import { readManifest } from "./environment_state.ts";
import { ENVIRONMENT_DIR_MODE, reachableForSandbox } from "./sandbox_search.ts";

/** A build failed at `step`; the previous base (if any) is unchanged. */
export class BaseBuildError extends CoopError {
  /** The step that failed. */
  readonly step: BuildStep;
  /** `message` names the environment, the step and the cause. */
  constructor(step: BuildStep, message: string, options?: ErrorOptions) {
    super("environment.build", message, options);
    this.name = "BaseBuildError";
    this.step = step;
  }
}

/** What one `buildBase` call did. */
export interface BuildResult {
  /** The environment's id and its Coopfile. */
  environment: string;
  coopfile: string;
  /** `unchanged`: `coop init` found a base built from the same Coopfile hash. */
  status: "built" | "unchanged";
  manifest: BaseManifest;
  /** Milliseconds the build took (0 when unchanged). */
  elapsedMs: number;
  /** Entries of the image not created on purpose (devices, FIFOs, set-id bits). */
  skipped: UnpackSkipped;
}

/** Inputs of one build. */
export interface BuildOptions {
  /** Coop's state directory (`[agent] state_dir`). */
  stateDir: string;
  /** The Coopfile's absolute path (the environment's identity). */
  coopfilePath: string;
  coopfile: Coopfile;
  /** Rebuild even when the manifest's hash matches (`coop rebuild`). */
  force: boolean;
  progress: BuildProgress;
  /** Host uid/gid the base's files get; default: the invoker's own, or the sandbox host id for root. */
  owner?: { uid: number; gid: number };
  /** The gateway's own sockets (`gatewaySockets(config)`): never dialed by the build sandbox. */
  neverDial?: readonly string[];
}

/** The host ids a sandbox's root maps to for this invoker, or undefined: the invoker's own. */
export function baseOwner(): { uid: number; gid: number } | undefined {
  return Deno.uid() === 0
    ? { uid: DEFAULT_SANDBOX_HOST_ID, gid: DEFAULT_SANDBOX_HOST_ID }
    : undefined;
}

/**
 * Creates `<state_dir>/environments/<id>/` (0700) and, for root invokers, lets the sandbox's
 * gid search the way down to it (`sandbox_search.ts`): the build sandbox and every overlay
 * mount the base with the sandbox's identity.
 */
function prepareRoot(
  stateDir: string,
  paths: EnvironmentPaths,
  owner: { uid: number; gid: number } | undefined,
): void {
  mkdirSync(stateDir, { recursive: true, mode: ENVIRONMENT_DIR_MODE });
  if (owner) reachableForSandbox(stateDir, paths.root, owner.gid, true);
  else reachableForSandbox(stateDir, paths.root, undefined, false);
}

/** A crash between the two renames leaves `base.old`: put it back, or drop it when superseded. */
function recoverReplace(paths: EnvironmentPaths): void {
  const old = `${paths.base}.old`;
  if (!existsSync(old)) return;
  if (existsSync(paths.base)) removeTree(old);
  else renameSync(old, paths.base);
}

/** Rejects what cannot be done with a host base: nothing can be installed into the host. */
function checkHostRecipe(coopfile: Coopfile, source: string): void {
  const what: [BuildStep, string, readonly string[]][] = [
    ["packages", "[packages] install", coopfile.packages],
    ["setup", "[setup] run", coopfile.setup],
    ["agent", "[agent] install", coopfile.agent.install],
  ];
  for (const [step, key, list] of what) {
    if (list.length > 0) {
      throw new BaseBuildError(
        step,
        `${source}: ${key} needs a base to install into, but [base] image = "host" is the ` +
          'host\'s own read-only /usr; use image = "debian:<suite>" or "oci:<path>", or remove ' +
          key,
      );
    }
  }
}

/**
 * Builds (or, unless `force`, keeps) the base of the environment at `options.coopfilePath`. One
 * build of an environment at a time: a second `coop init` or `coop rebuild` of it (in any process)
 * is refused while the first runs, and `coop sandbox clean` leaves its `base.next` alone.
 */
export async function buildBase(options: BuildOptions): Promise<BuildResult> {
  const paths = environmentPaths(options.stateDir, options.coopfilePath);
  const owner = options.owner ?? baseOwner();
  prepareRoot(options.stateDir, paths, owner);
  // The upper layers' lock (upper_lock.ts), on the base: `base.lock` beside it.
  const held = (await upperLocker())(paths.base);
  if (!held) {
    const pid = holderOf(paths.base);
    throw new EnvironmentError(
      "environment.build_running",
      `${options.coopfilePath}: another coop init or coop rebuild${
        pid === null ? "" : ` (process ${pid})`
      } is building this environment now; wait for it to end`,
    );
  }
  try {
    return await buildUnlocked(options, paths, owner);
  } finally {
    held.release();
  }
}

async function buildUnlocked(
  options: BuildOptions,
  paths: EnvironmentPaths,
  owner: { uid: number; gid: number } | undefined,
): Promise<BuildResult> {
  const { coopfile, progress } = options;
  const hash = coopfileHash(coopfile);
  const noneSkipped = { devices: 0, fifos: 0, setIdBits: 0 };
  recoverReplace(paths);
  const read = readManifest(paths.manifest);
  const current = typeof read === "object" ? read : null;
  const present = coopfile.base.kind === "host" || existsSync(paths.rootfs);
  if (!options.force && current?.hash === hash && present) {
    return {
      environment: paths.id,
      coopfile: options.coopfilePath,
      status: "unchanged",
      manifest: current,
      elapsedMs: 0,
      skipped: noneSkipped,
    };
  }
  const started = performance.now();
  let step: BuildStep = "fetch";
  const rootfs = join(paths.next, "rootfs");
  const scratch = join(paths.next, "scratch");
  let skipped: UnpackSkipped = noneSkipped;
  try {
    if (coopfile.base.kind === "host") checkHostRecipe(coopfile, options.coopfilePath);
    removeTree(paths.next);
    mkdirSync(paths.next, { mode: 0o700 });
    if (owner) chownSync(paths.next, owner.uid, owner.gid);
    const base = coopfile.base;
    if (base.kind === "debian") {
      skipped = await buildDebianBase(
        { ...base, packages: coopfile.packages, rootfs, scratch, owner },
        progress,
        (s) => step = s,
      );
    } else if (base.kind === "oci") {
      step = "unpack";
      progress.step("unpack", `OCI image ${base.path}`);
      skipped = await unpackOciImage(base.path, rootfs, scratch, {
        owner,
        onBytes: (n) => progress.bytes(n),
        onLayer: (i, n) => progress.step("unpack", `layer ${i} of ${n}`),
      });
    }
    if (base.kind !== "host") {
      if (owner) chownSync(rootfs, owner.uid, owner.gid);
      removeTree(scratch);
      await runBuildCommands(rootfs, coopfile, {
        progress,
        phase: (s) => step = s,
        neverDial: options.neverDial,
      });
    }
    step = "manifest";
    const sizeBytes = treeSize(rootfs).bytes;
    const manifest: BaseManifest = {
      sources: [...coopfile.sources],
      image: imageText(base),
      packages: [...coopfile.packages],
      setup: [...coopfile.setup, ...coopfile.agent.install],
      hash,
      builtAt: new Date().toISOString(),
      sizeBytes,
    };
    writeBaseManifest(join(paths.next, "manifest.json"), manifest);
    const old = `${paths.base}.old`;
    if (existsSync(paths.base)) renameSync(paths.base, old);
    renameSync(paths.next, paths.base);
    removeTree(old);
    const elapsedMs = Math.round(performance.now() - started);
    progress.done(
      `built ${manifest.image} for ${paths.id}: ${sizeText(sizeBytes)} in ${
        (elapsedMs / 1000).toFixed(1)
      }s`,
    );
    return {
      environment: paths.id,
      coopfile: options.coopfilePath,
      status: "built",
      manifest,
      elapsedMs,
      skipped,
    };
  } catch (error) {
    removeTree(paths.next);
    if (error instanceof BaseBuildError) throw error;
    throw new BaseBuildError(
      step,
      `${options.coopfilePath}: building the base failed at step "${step}": ${
        errorMessage(error)
      }` +
        (existsSync(paths.base) ? " (the previous base is unchanged)" : ""),
      { cause: error },
    );
  }
}
