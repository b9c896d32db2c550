/**
 * Ubuntu's AppArmor restriction of unprivileged user namespaces (23.10+, on by default in
 * 24.04): with `kernel.apparmor_restrict_unprivileged_userns = 1`, a program that no AppArmor
 * profile grants `userns` gets a namespace without capabilities (or none at all), so the
 * sandbox's setup fails with EPERM/EACCES. This detects it, says what to do, and writes the
 * profile that `coop setup apparmor` loads: one granting `userns` to the runtime binary Coop
 * runs under, and confining nothing else.
 * @module
 */
import { readFileSync } from "node:fs";
import process from "node:process";
import { ERRNO } from "./errno.ts";
import { runtimeName } from "./native_runtime.ts";

/** The sysctl, as a path below the proc root. */
export const RESTRICT_SYSCTL = "sys/kernel/apparmor_restrict_unprivileged_userns";

/** What was found about the restriction. */
export interface AppArmorUserns {
  /** The sysctl is 1 and the invoker is not root: unconfined programs get no usable userns. */
  restricted: boolean;
  /** This process runs under an AppArmor profile other than `unconfined` (e.g. Coop's). */
  profile: string | null;
  /** True when the sandbox can be expected to work: not restricted, or a profile applies. */
  ok: boolean;
  /** One line: the sysctl's value and the label of this process. */
  evidence: string;
  /** What to do, when not ok. */
  fix: string | null;
}

function readOrNull(path: string): string | null {
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    return null;
  }
}

/** The fix, naming the binary the profile must grant `userns` to. */
export function appArmorFix(runtime: string): string {
  // `coop setup apparmor` defaults to the Deno binary it runs under; under Node the library's
  // runtime is node, which the command must then be told.
  const flag = runtimeName() === "node" ? ` --runtime ${runtime}` : "";
  return `Ubuntu's AppArmor denies user namespaces to programs without a profile ` +
    `(kernel.apparmor_restrict_unprivileged_userns = 1). Run \`sudo coop setup apparmor${flag}\` ` +
    `once: it loads a profile that grants userns to ${runtime} and nothing else. ` +
    "(Turning the restriction off for every program, `sudo sysctl " +
    "kernel.apparmor_restrict_unprivileged_userns=0`, also works but weakens the whole host.)";
}

/**
 * Reads the restriction from `procRoot` (a stand-in tree in tests) for an invoker `uid`.
 *
 * @example
 * ```ts
 * const userns = detectAppArmorUserns();
 * if (!userns.ok) console.error(userns.fix);
 * ```
 */
export function detectAppArmorUserns(
  procRoot = "/proc",
  uid: number = process.getuid?.() ?? 0,
  runtime: string = process.execPath,
): AppArmorUserns {
  const value = readOrNull(`${procRoot}/${RESTRICT_SYSCTL}`);
  // "coop-deno (unconfined)" for our profile; "unconfined" without one.
  const label = readOrNull(`${procRoot}/self/attr/apparmor/current`) ??
    readOrNull(`${procRoot}/self/attr/current`);
  const profile = label && label !== "unconfined" ? label : null;
  const restricted = value === "1" && uid !== 0;
  const ok = !restricted || profile !== null;
  const evidence = value === null
    ? "kernel.apparmor_restrict_unprivileged_userns: absent (no Ubuntu AppArmor restriction)"
    : `kernel.apparmor_restrict_unprivileged_userns = ${value}; uid ${uid}; AppArmor label ` +
      `${label ?? "none"}`;
  return { restricted, profile, ok, evidence, fix: ok ? null : appArmorFix(runtime) };
}

/**
 * True when a setup failure looks like the restriction: EPERM or EACCES at a step the
 * namespace's missing capabilities break (clone, the id maps, mounts, pivot_root), for an
 * unprivileged invoker while the sysctl is set.
 */
export function looksLikeAppArmorDenial(
  step: string,
  errno: number,
  userns: AppArmorUserns,
): boolean {
  if (!userns.restricted || userns.profile !== null) return false;
  if (errno !== ERRNO.EPERM && errno !== ERRNO.EACCES) return false;
  return step === "clone" || step === "id-map" || step.startsWith("mount") ||
    step === "pivot-root";
}

/** Characters AppArmor reads as globbing or syntax in a profile's attachment path. */
const UNSAFE_PATH = /[\s"'*?[\]{}^,\\#\0]/;

/** A profile name for `runtime`: `coop-` and its file name, e.g. `coop-deno`. */
export function appArmorProfileName(runtime: string): string {
  const base = runtime.split("/").pop()!.toLowerCase().replace(/[^a-z0-9_.-]/g, "-");
  return `coop-${base || "runtime"}`;
}

/**
 * The profile text granting `userns` to `runtime` (an absolute path without characters
 * AppArmor would read as a pattern). `flags=(unconfined)` confines nothing else, as Ubuntu's
 * own profiles for browsers do; `abi <abi/4.0>` is the first ABI with the `userns` rule.
 * Throws when the path cannot be written safely into a profile.
 */
export function appArmorProfile(runtime: string): string {
  if (!runtime.startsWith("/") || UNSAFE_PATH.test(runtime)) {
    throw new Error(
      `cannot write an AppArmor profile for "${runtime}": it must be an absolute path ` +
        "without spaces, quotes or the pattern characters * ? [ ] { } ^ , \\ #",
    );
  }
  const name = appArmorProfileName(runtime);
  return [
    "# Written by `coop setup apparmor`. It lets the runtime Coop runs under create user",
    "# namespaces, which kernel.apparmor_restrict_unprivileged_userns denies to programs",
    "# without a profile, and confines nothing else. Coop's sandbox builds its own confinement",
    "# (docs/security.md). Remove it with: sudo apparmor_parser -R <this file>; rm <this file>",
    "abi <abi/4.0>,",
    "include <tunables/global>",
    "",
    `profile ${name} ${runtime} flags=(unconfined) {`,
    "  userns,",
    "",
    "  # Site-specific additions and overrides. See local/README for details.",
    `  include if exists <local/${name}>`,
    "}",
    "",
  ].join("\n");
}
