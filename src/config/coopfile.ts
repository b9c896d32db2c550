/**
 * The Coopfile: an environment's recipe (docs/environments.md). This module holds the resolved
 * shape every other part reads; `coopfile_schema.ts` parses and validates the TOML, and
 * `coopfile_load.ts` merges the global file, the project's and command-line flags into it.
 * @module
 */

/** Where an environment's base layer comes from. */
export type BaseImage =
  /** Today's root: the host's `/usr` (read-only) under the user's upper layer. */
  | { kind: "host" }
  /** A Debian suite built with mmdebstrap, e.g. `debian:bookworm`. */
  | { kind: "debian"; suite: string; mirror: string }
  /** An OCI image archive (`.tar`) or layout directory on disk, absolute path. */
  | { kind: "oci"; path: string };

/** Whether a user's writable layer outlives a chat session. */
export type UpperLifetime = "persistent" | "session";

/** Network of the build sandbox (`coop init`): packages and setup commands. */
export type BuildNetwork = "none" | "proxy" | "public";

/** A Coopfile after merging and validation: every field present, paths absolute. */
export interface Coopfile {
  /** The files it was merged from, in order (global, project); absolute paths. */
  readonly sources: readonly string[];
  /** `[base] image`. */
  readonly base: BaseImage;
  /** `[packages] install`: Debian package names installed into the base. */
  readonly packages: readonly string[];
  /** `[setup] run`: shell commands run in the base after the packages, in order. */
  readonly setup: readonly string[];
  /** `[agent] install` (shell commands run last at build) and `command` (argv for `coop run`). */
  readonly agent: { readonly install: readonly string[]; readonly command?: readonly string[] };
  /** `[session] persist` (absolute sandbox paths kept per user) and `upper`. */
  readonly session: { readonly persist: readonly string[]; readonly upper: UpperLifetime };
  /** `[network] mode` and `allow_domains`: the build sandbox's network. */
  readonly network: { readonly mode: BuildNetwork; readonly allowDomains: readonly string[] };
  /** `[env]`: variables set in every sandbox of this environment (and the build's). */
  readonly env: Readonly<Record<string, string>>;
}
