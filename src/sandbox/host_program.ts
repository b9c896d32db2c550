/**
 * Runs a host program the limits paths need (`busctl`, `mkfs.ext4`, `mount`, `umount`) with
 * `node:child_process`, which Deno and Node both have: no stdin, stdout discarded, stderr
 * collected for the error message.
 * @module
 */
import { spawn } from "node:child_process";
import { Buffer } from "node:buffer";
import { signalNumber } from "./wait_status.ts";

/** How a host program ended. */
export interface HostProgramOutcome {
  /** The exit code; `128 + n` when signal n killed it. */
  code: number;
  /** Its standard error, trimmed. */
  stderr: string;
}

/**
 * Runs `program` with `args` and waits for it. Rejects with the spawn error when it cannot
 * start: `code === "ENOENT"` when it is not installed (`isNotFound` in errno.ts).
 *
 * @example
 * ```ts
 * const { code, stderr } = await runHostProgram("umount", ["/srv/ws"]);
 * ```
 */
export function runHostProgram(program: string, args: string[]): Promise<HostProgramOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: ["ignore", "ignore", "pipe"] });
    const chunks: Buffer[] = [];
    child.stderr.on("data", (chunk: Buffer) => chunks.push(chunk));
    // A program that cannot start emits "error" before "close"; the promise keeps the first.
    child.once("error", reject);
    child.once("close", (code, signal) => {
      resolve({
        code: code ?? (signal ? 128 + signalNumber(signal) : 1),
        stderr: Buffer.concat(chunks).toString("utf8").trim(),
      });
    });
  });
}
