/**
 * Keeps at most `limit` bytes of a stream. Past the cap the pipe is still drained — so the
 * command runs on as it would on a terminal — but in the kernel (splice to /dev/null, through
 * the trampoline), so a flood such as `yes` costs the gateway no memory at all.
 * @module
 */
import { Buffer } from "node:buffer";
import { ERRNO } from "./errno.ts";
import type net from "node:net";
import type { Trampoline } from "./ffi.ts";

/** What a capture collected once the stream ended. */
export interface Captured {
  bytes: Uint8Array;
  truncated: boolean;
}

const DRAIN_CHUNK = 16n << 20n;
const MAX_BACKOFF_MS = 32;
const EAGAIN = -BigInt(ERRNO.EAGAIN); // coop_drain returns -errno

/** Discards the rest of `fd` (ours to close), polling without blocking; resolves at EOF. */
function drain(lib: Trampoline, fd: number): Promise<void> {
  return new Promise((done) => {
    let backoff = 0;
    const step = () => {
      const n = lib.coop_drain(fd, DRAIN_CHUNK) as bigint;
      if (n > 0n || n === EAGAIN) {
        backoff = n > 0n ? 0 : Math.min(MAX_BACKOFF_MS, Math.max(1, backoff * 2));
        setTimeout(step, backoff);
        return;
      }
      lib.coop_close(fd); // EOF (0) or a broken pipe: either way the stream is over
      done();
    };
    step();
  });
}

/** Collects up to `limit` bytes from `socket` (which owns pipe `fd`); resolves at EOF. */
export function captureOutput(
  lib: Trampoline,
  socket: net.Socket,
  fd: number,
  limit: number,
): Promise<Captured> {
  return new Promise((resolve) => {
    const chunks: Uint8Array[] = [];
    let kept = 0, draining: Promise<void> | undefined;
    const finish = async () => {
      await draining;
      resolve({ bytes: Buffer.concat(chunks, kept), truncated: draining !== undefined });
    };
    socket.on("data", (chunk: Buffer) => {
      if (draining) return;
      const room = limit - kept;
      // Copy: a slice would pin the socket's whole chunk.
      chunks.push(new Uint8Array(chunk.subarray(0, Math.min(room, chunk.length))));
      kept += Math.min(room, chunk.length);
      if (chunk.length < room) return;
      const copy = lib.coop_dup(fd);
      draining = copy >= 0 ? drain(lib, copy) : Promise.resolve();
      socket.destroy();
    });
    socket.on("error", () => {});
    socket.on("close", () => void finish());
  });
}
