/**
 * The host the library runs on, as the backend choice sees it: operating system, architecture
 * and where the backends' command-line tools are looked for. Tests pass another one
 * (`ExecOptions.platform`, `probe({ platform })`) — an argument in code, never an environment
 * variable a user could set by accident — to drive the macOS backends with fake tools.
 * @module
 */
import { accessSync, constants } from "node:fs";
import { machine } from "node:os";
import process from "node:process";

/** Where backend tools are looked for, and what the host is. */
export interface HostPlatform {
  /** `process.platform`: `linux`, `darwin`, `win32`, `freebsd`, … */
  readonly os: string;
  /** The machine architecture, e.g. `x86_64`, `arm64`. */
  readonly arch: string;
  /**
   * Directories searched for `sandbox-exec` and `container`, in order. Fixed system
   * locations, not `$PATH`: a PATH entry a sandboxed user can write must never supply the
   * sandbox itself.
   */
  readonly toolDirs: readonly string[];
}

/** macOS: sandbox-exec ships in /usr/bin; apple/container's installer puts `container` in /usr/local/bin. */
const SYSTEM_TOOL_DIRS = ["/usr/bin", "/usr/local/bin", "/opt/homebrew/bin"];

let host: HostPlatform | undefined;

/** The real host (one object, so the backend is probed once per process). */
export function hostPlatform(): HostPlatform {
  host ??= Object.freeze({ os: process.platform, arch: machine(), toolDirs: SYSTEM_TOOL_DIRS });
  return host;
}

/** The absolute path of executable `name` in the platform's tool directories, or null. */
export function findTool(platform: HostPlatform, name: string): string | null {
  for (const dir of platform.toolDirs) {
    const path = `${dir}/${name}`;
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not here
    }
  }
  return null;
}
