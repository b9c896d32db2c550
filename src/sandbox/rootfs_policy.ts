/**
 * The policy's environment parts: `rootfs` (an overlay root or a directory root) and `persist`
 * binds, with the checks that need no file system (docs/environments_overlay.md).
 * @module
 */
import { z } from "zod";
import { isInside } from "./path_containment.ts";

/**
 * An environment's root: `lower` (a base directory, or `"host"` for the host's `/usr`) below
 * the user's `upper` (with `work`, overlayfs's scratch directory on the same file system); or
 * a host `directory` mounted read-write as the root (the build sandbox of `coop init`).
 */
export type RootfsPolicy =
  | { lower: string; upper: string; work: string }
  | { directory: string };

/** A host directory bound read-write at `target` inside the sandbox. */
export interface PersistBind {
  /** Host directory (created 0700 for the sandbox's root when missing). */
  source: string;
  /** Absolute sandbox path; not under /proc, /dev, /sys, /work or /tmp. */
  target: string;
}

/** Sandbox paths that are the sandbox's own: nothing may be bound over or below them. */
export const RESERVED_TARGETS = ["/proc", "/dev", "/sys", "/work", "/tmp"] as const;

/**
 * An absolute host path without `..` — and without `,`, `:` or `\`, which overlayfs's own
 * option syntax would read as separators or escapes.
 */
function hostPath(what: string) {
  return z.string().superRefine((path, ctx) => {
    const problem = !path.startsWith("/")
      ? "must be an absolute path"
      : path.split("/").includes("..")
      ? 'must not contain ".."'
      : /[,:\\\0]/.test(path)
      ? "must not contain a comma, colon, backslash or NUL"
      : null;
    if (problem) ctx.addIssue({ code: "custom", message: `${what} ${problem}, got "${path}"` });
  });
}

/** Validates `rootfs`. */
export const rootfsSchema = z.union([
  z.strictObject({
    lower: z.union([z.literal("host"), hostPath("the lower layer")]),
    upper: hostPath("the upper layer"),
    work: hostPath("the work directory"),
  }).superRefine((r, ctx) => {
    if (isInside(r.upper, r.work) || isInside(r.work, r.upper)) {
      ctx.addIssue({
        code: "custom",
        path: ["work"],
        message: `must not be inside the upper layer or contain it (overlayfs refuses it), ` +
          `got upper "${r.upper}", work "${r.work}"`,
      });
    }
    if (r.lower !== "host" && (isInside(r.upper, r.lower) || isInside(r.lower, r.upper))) {
      ctx.addIssue({
        code: "custom",
        path: ["upper"],
        message: `must not be inside the lower layer or contain it, got "${r.upper}"`,
      });
    }
  }),
  z.strictObject({ directory: hostPath("the root directory") }),
], { error: "must be { lower, upper, work } or { directory }" });

/** Validates `persist`. */
export const persistSchema = z.array(z.strictObject({
  source: hostPath("the persist source"),
  target: hostPath("the persist target").superRefine((target, ctx) => {
    if (target.replace(/\/+$/, "") === "") {
      ctx.addIssue({ code: "custom", message: "must not be the root itself" });
    }
    const reserved = RESERVED_TARGETS.find((dir) => isInside(target, dir));
    if (reserved) {
      ctx.addIssue({
        code: "custom",
        message: `must not be ${reserved} or below it (the sandbox's own), got "${target}"`,
      });
    }
  }),
})).superRefine((binds, ctx) => {
  const seen = new Set<string>();
  for (const [i, bind] of binds.entries()) {
    if (seen.has(bind.target)) {
      ctx.addIssue({ code: "custom", path: [i, "target"], message: "is bound twice" });
    }
    seen.add(bind.target);
  }
});
