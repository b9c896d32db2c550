/**
 * Loads a Coopfile: the global file (`~/.config/coop/Coopfile`) then the project's, merged key
 * by key (later wins), validated as precisely as `coop.toml` (file, key path, expectation);
 * `applyCoopfileFlags` then applies command-line overrides.
 * @module
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseTomlDocument } from "./toml_document.ts";
import { errorMessage } from "../errors/coop_error.ts";
import type { BaseImage, Coopfile } from "./coopfile.ts";
import {
  coopfileSchema,
  DEFAULT_DEBIAN_MIRROR,
  IMAGE_RULE,
  normalPersistPath,
  parseBaseImage,
  type RawCoopfile,
} from "./coopfile_schema.ts";
import { type ConfigDiagnostic, ConfigError, diagnosticsFromIssues } from "./config_diagnostic.ts";
import { showValue } from "./config_units.ts";

/** What `loadCoopfile` reads. */
export interface CoopfileSources {
  /** The project's Coopfile (relative paths resolve against the current directory). */
  project: string;
  /** The global Coopfile; unset: `~/.config/coop/Coopfile` when it exists; `null`: none. */
  global?: string | null;
}

/** Command-line overrides of a Coopfile (`coop init --image … --package … --network …`). */
export interface CoopfileFlags {
  /** `--image`: replaces `[base] image` (an OCI path resolves against the current directory). */
  image?: string;
  /** `--package` (repeatable): added to `[packages] install`. */
  packages?: readonly string[];
  /** `--network`: replaces `[network] mode`. */
  network?: string;
}

/** The label flag errors carry in place of a file name. */
export const FLAGS_SOURCE = "(command line)";

/** The global Coopfile's path for `home`: `<home>/.config/coop/Coopfile`. */
export function globalCoopfilePath(home: string | undefined = Deno.env.get("HOME")): string | null {
  return home ? join(home, ".config", "coop", "Coopfile") : null;
}

/** A file's text, or a `ConfigError` naming it and why it cannot be read. */
function readCoopfile(file: string): string {
  try {
    if (statSync(file).isDirectory()) throw new Error("is a directory, not a Coopfile");
    return readFileSync(file, "utf8");
  } catch (error) {
    const reason = (error as { code?: string }).code === "ENOENT"
      ? "file not found"
      : errorMessage(error);
    throw new ConfigError(file, [{
      severity: "error",
      code: "config.unreadable",
      path: "(file)",
      message: `cannot read Coopfile: ${reason}`,
    }], { cause: error });
  }
}

/** Parses and validates one Coopfile's text; relative OCI paths stay as written here. */
export function parseCoopfileText(text: string, file: string): RawCoopfile {
  return parseTomlDocument(text, file, coopfileSchema);
}

/** One file's contribution with its OCI path made absolute against the file's directory. */
interface Layer {
  file: string;
  raw: RawCoopfile;
}

/** Merges the layers, later wins per key (`[env]`: per variable). */
function mergeLayers(layers: readonly Layer[]): Coopfile {
  let image: { value: string; file: string } | undefined;
  let mirror: string | undefined;
  const pick = <T>(get: (raw: RawCoopfile) => T | undefined): T | undefined => {
    let out: T | undefined;
    for (const { raw } of layers) out = get(raw) ?? out;
    return out;
  };
  const env: Record<string, string> = {};
  for (const { file, raw } of layers) {
    if (raw.base?.image !== undefined) image = { value: raw.base.image, file };
    if (raw.base?.mirror !== undefined) mirror = raw.base.mirror;
    Object.assign(env, raw.env as Record<string, string> | undefined);
  }
  const last = layers[layers.length - 1].file;
  if (!image) {
    const also = layers.length > 1 ? ` (nor in ${layers.slice(0, -1).map((l) => l.file)})` : "";
    throw new ConfigError(last, [{
      severity: "error",
      code: "config.invalid_value",
      path: "base.image",
      message: `is required${also}: ${IMAGE_RULE}`,
    }]);
  }
  const base = parseBaseImage(image.value, dirname(image.file), mirror ?? DEFAULT_DEBIAN_MIRROR);
  if (typeof base === "string") throw new Error(`validated image rejected: ${base}`);
  const command = pick((r) => r.agent?.command);
  return {
    sources: layers.map((l) => l.file),
    base,
    packages: pick((r) => r.packages?.install) ?? [],
    setup: pick((r) => r.setup?.run) ?? [],
    agent: { install: pick((r) => r.agent?.install) ?? [], ...(command ? { command } : {}) },
    session: {
      persist: (pick((r) => r.session?.persist) ?? []).map(normalPersistPath),
      upper: pick((r) => r.session?.upper) ?? "persistent",
    },
    network: {
      mode: pick((r) => r.network?.mode) ?? "none",
      allowDomains: pick((r) => r.network?.allow_domains) ?? [],
    },
    env,
  };
}

/**
 * Loads and merges the global Coopfile and the project's into the resolved `Coopfile`.
 * Throws `ConfigError` naming the file, the key path and what was expected.
 *
 * @example
 * ```ts
 * const coopfile = loadCoopfile({ project: "/srv/coop/Coopfile", global: null });
 * ```
 */
export function loadCoopfile(options: CoopfileSources): Coopfile {
  const project = resolve(options.project);
  const global = options.global === undefined
    ? (() => {
      const path = globalCoopfilePath();
      return path && existsSync(path) ? path : null;
    })()
    : options.global === null
    ? null
    : resolve(options.global);
  const files = global && global !== project ? [global, project] : [project];
  const layers = files.map((file) => ({ file, raw: parseCoopfileText(readCoopfile(file), file) }));
  return mergeLayers(layers);
}

/**
 * Applies command-line overrides: `--image` and `--network` replace, `--package` adds.
 * Throws `ConfigError` (file `(command line)`, path the flag) for a bad value.
 */
export function applyCoopfileFlags(
  coopfile: Coopfile,
  flags: CoopfileFlags,
  cwd: string = Deno.cwd(),
): Coopfile {
  const raw = {
    base: flags.image === undefined ? undefined : { image: flags.image },
    packages: flags.packages === undefined ? undefined : { install: [...flags.packages] },
    network: flags.network === undefined ? undefined : { mode: flags.network },
  };
  const result = coopfileSchema.safeParse(raw);
  if (!result.success) {
    const flagOf: Record<string, string> = {
      base: "--image",
      packages: "--package",
      network: "--network",
    };
    const diagnostics: ConfigDiagnostic[] = result.error.issues.map((issue) => ({
      severity: "error",
      code: "config.invalid_value",
      path: flagOf[String(issue.path[0])] ?? String(issue.path[0]),
      message: diagnosticsFromIssues([issue], raw)[0].message,
    }));
    throw new ConfigError(FLAGS_SOURCE, diagnostics);
  }
  let base: BaseImage = coopfile.base;
  if (flags.image !== undefined) {
    const mirror = coopfile.base.kind === "debian" ? coopfile.base.mirror : DEFAULT_DEBIAN_MIRROR;
    const parsed = parseBaseImage(flags.image, cwd, mirror);
    if (typeof parsed === "string") {
      throw new ConfigError(FLAGS_SOURCE, [{
        severity: "error",
        code: "config.invalid_value",
        path: "--image",
        message: `${parsed}, got ${showValue(flags.image)}`,
      }]);
    }
    base = parsed;
  }
  const packages = [...coopfile.packages];
  for (const name of flags.packages ?? []) if (!packages.includes(name)) packages.push(name);
  return {
    ...coopfile,
    base,
    packages,
    network: flags.network === undefined
      ? coopfile.network
      : { ...coopfile.network, mode: flags.network as Coopfile["network"]["mode"] },
  };
}
