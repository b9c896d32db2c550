/**
 * The base's manifest (`BaseManifest`, environment_layout.ts): what it was built from, read by
 * `coop init` (skip when the Coopfile's hash is unchanged) and `coop sandbox status`.
 * @module
 */
import { writeFileSync } from "node:fs";
import type { BaseImage } from "../config/coopfile.ts";
import type { BaseManifest } from "./environment_layout.ts";

/** `[base] image` as the Coopfile writes it. */
export function imageText(base: BaseImage): string {
  switch (base.kind) {
    case "host":
      return "host";
    case "debian":
      return `debian:${base.suite}`;
    case "oci":
      return `oci:${base.path}`;
  }
}

/** Writes `manifest` to `path` (0600, pretty JSON). */
export function writeBaseManifest(path: string, manifest: BaseManifest): void {
  writeFileSync(path, JSON.stringify(manifest, null, 2) + "\n", { mode: 0o600 });
}
