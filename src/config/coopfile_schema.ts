/**
 * The schema of one Coopfile (docs/environments.md), key for key. Every key is optional here:
 * a file may set only some of them, and `coopfile_load.ts` merges the global file, the
 * project's and command-line flags before filling defaults and requiring `[base] image`.
 * Unknown keys are errors in every table, as in `coop.toml`.
 * @module
 */
import { posix } from "node:path";
import { z } from "zod";
import { parseAllowEntry } from "../sandbox/mod.ts";
import type { BaseImage } from "./coopfile.ts";

/** `[session] upper` values. */
export const UPPER_LIFETIMES = ["persistent", "session"] as const;
/** `[network] mode` values: the build sandbox's network. */
export const BUILD_NETWORK_MODES = ["none", "proxy", "public"] as const;
/** The Debian mirror `debian:<suite>` images are built from when `[base] mirror` is unset. */
export const DEFAULT_DEBIAN_MIRROR = "http://deb.debian.org/debian";

/** What `[base] image` accepts, for messages. */
export const IMAGE_RULE = 'must be "host", "debian:<suite>" (e.g. "debian:bookworm") or ' +
  '"oci:<path>" (an OCI image archive or layout directory)';

const SUITE = /^[a-z][a-z0-9-]{0,39}$/;
/** A Debian package name (Debian Policy §5.6.7), optionally `=version`. */
const PACKAGE = /^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+~:-]+)?$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
// The control characters: a path, command or value holding one is a mistake or an attack on
// whatever prints or passes it on (NUL cannot cross the sandbox protocol at all).
// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;
/**
 * Sandbox directories a persist entry may not be, nor lie under: the library mounts its own
 * file systems there (`/proc`, `/dev`, a fresh `/tmp`), binds the workspace (`/work`), or
 * hides them (`/sys`).
 */
export const PERSIST_RESERVED = ["/proc", "/sys", "/dev", "/tmp", "/work"] as const;

/**
 * Parses `[base] image` (`host`, `debian:<suite>`, `oci:<path>`); a relative OCI path resolves
 * against `baseDir`. Returns the problem as a string when the value is not one of those.
 */
export function parseBaseImage(
  image: string,
  baseDir: string,
  mirror: string = DEFAULT_DEBIAN_MIRROR,
): BaseImage | string {
  if (image === "host") return { kind: "host" };
  if (image.startsWith("debian:")) {
    const suite = image.slice("debian:".length);
    if (!SUITE.test(suite)) {
      return `${IMAGE_RULE}; the suite must be lowercase letters, digits and -`;
    }
    return { kind: "debian", suite, mirror };
  }
  if (image.startsWith("oci:")) {
    const path = image.slice("oci:".length);
    if (path === "" || CONTROL.test(path)) {
      return `${IMAGE_RULE}; the path after "oci:" must be a file or directory`;
    }
    return { kind: "oci", path: posix.resolve(baseDir, path) };
  }
  return IMAGE_RULE;
}

/** Why `path` cannot be a `[session] persist` entry, or null when it can. */
export function persistPathProblem(path: string): string | null {
  if (!path.startsWith("/")) {
    return "must be an absolute path inside the sandbox, e.g. /root/.cache";
  }
  if (CONTROL.test(path)) return "must not contain control characters";
  const parts = path.split("/").filter((p) => p !== "");
  if (parts.includes("..") || parts.includes(".")) return "must not contain . or .. components";
  if (parts.length === 0) return 'must not be "/" (the whole root is the upper layer already)';
  const normal = "/" + parts.join("/");
  for (const reserved of PERSIST_RESERVED) {
    if (normal === reserved || normal.startsWith(reserved + "/")) {
      return `must not be ${reserved} or under it (Coop mounts its own ${reserved} there)`;
    }
  }
  return null;
}

/** The normal form of a persist path: no doubled or trailing slashes. */
export function normalPersistPath(path: string): string {
  return "/" + path.split("/").filter((p) => p !== "").join("/");
}

const nonEmptyText = z.string().min(1, "must not be empty").refine(
  (s) => !s.includes("\0"),
  "must not contain NUL",
);

const imageSchema = z.string().superRefine((image, ctx) => {
  const parsed = parseBaseImage(image, "/");
  if (typeof parsed === "string") {
    ctx.addIssue({ code: "custom", message: `${parsed}; got ${JSON.stringify(image)}` });
  }
});

const mirrorSchema = z.string().superRefine((v, ctx) => {
  if (!(/^https?:\/\/[^\s]+$/.test(v) && URL.canParse(v))) {
    ctx.addIssue({
      code: "custom",
      message: `must be an http:// or https:// URL, e.g. "${DEFAULT_DEBIAN_MIRROR}"; got ${
        JSON.stringify(v)
      }`,
    });
  }
});

const packageName = z.string().regex(
  PACKAGE,
  "must be a Debian package name (lowercase letters, digits, + . -), optionally =version",
);

const persistEntry = z.string().superRefine((path, ctx) => {
  const problem = persistPathProblem(path);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

const allowDomain = z.string().superRefine((entry, ctx) => {
  try {
    parseAllowEntry(entry);
  } catch (error) {
    ctx.addIssue({ code: "custom", message: (error as Error).message });
  }
});

const envName = z.string().regex(ENV_NAME, "must be an environment variable name like MY_VAR")
  .refine((n) => !n.startsWith("COOP_"), "must not start with COOP_ (Coop sets those itself)");

/** One Coopfile as written: every table and key optional, unknown keys rejected. */
export const coopfileSchema = z.strictObject({
  base: z.strictObject({
    image: imageSchema.optional(),
    mirror: mirrorSchema.optional(),
  }).superRefine((base, ctx) => {
    if (
      base.mirror !== undefined && base.image !== undefined && !base.image.startsWith("debian:")
    ) {
      ctx.addIssue({
        code: "custom",
        path: ["mirror"],
        message: 'applies only to image = "debian:<suite>"; remove it',
      });
    }
  }).optional(),
  packages: z.strictObject({
    install: z.array(packageName).optional(),
  }).optional(),
  setup: z.strictObject({
    run: z.array(nonEmptyText).optional(),
  }).optional(),
  agent: z.strictObject({
    install: z.array(nonEmptyText).optional(),
    command: z.array(nonEmptyText).min(1, 'must name a program, e.g. ["claude"]').optional(),
  }).optional(),
  session: z.strictObject({
    persist: z.array(persistEntry).superRefine((paths, ctx) => {
      const seen = paths.map((p) => persistPathProblem(p) === null ? normalPersistPath(p) : "");
      seen.forEach((path, i) => {
        if (path === "") return;
        const other = seen.findIndex((q, j) =>
          j !== i && q !== "" && (q === path && j < i || path.startsWith(q + "/"))
        );
        if (other >= 0) {
          ctx.addIssue({
            code: "custom",
            path: [i],
            message: seen[other] === path
              ? `repeats entry ${other}`
              : `lies inside entry ${other} (${seen[other]}); list only one of them`,
          });
        }
      });
    }).optional(),
    upper: z.enum(UPPER_LIFETIMES).optional(),
  }).optional(),
  network: z.strictObject({
    mode: z.enum(BUILD_NETWORK_MODES).optional(),
    allow_domains: z.array(allowDomain).optional(),
  }).optional(),
  env: z.record(z.string(), z.unknown()).superRefine((env, ctx) => {
    // A record's key errors would lose the key in the path; check names and values here so
    // each message names `env.<NAME>`.
    for (const [name, value] of Object.entries(env)) {
      const nameCheck = envName.safeParse(name);
      if (!nameCheck.success) {
        ctx.addIssue({ code: "custom", path: [name], message: nameCheck.error.issues[0].message });
      } else if (typeof value !== "string") {
        ctx.addIssue({
          code: "invalid_type",
          expected: "string",
          path: [name],
          input: value,
        });
      } else if (value.includes("\0")) {
        ctx.addIssue({ code: "custom", path: [name], message: "must not contain NUL" });
      }
    }
  }).optional(),
});

/** One Coopfile as parsed and validated, before merging. */
export type RawCoopfile = z.output<typeof coopfileSchema>;
