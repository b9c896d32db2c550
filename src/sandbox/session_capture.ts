/**
 * Output capture for a command of a session sandbox. Unlike a one-shot sandbox, whose pipes
 * close when its pid namespace ends, a session command's stdout may stay open long after the
 * command exits — held by a process it left in the background (`server &`). So the capture
 * ends when the command itself has exited: what is already in the pipe is read, the rest of
 * the stream is the background process's and goes nowhere.
 * @module
 */
import { Buffer } from "node:buffer";
import net from "node:net";
import type { Trampoline } from "./ffi.ts";
import type { Captured } from "./output_capture.ts";

/** A capture that can be ended before its pipe closes. */
export interface SessionCapture {
  /** Settles with what was kept once the capture ended (EOF, or `end()`). */
  readonly done: Promise<Captured>;
  /** Reads what the pipe holds now, without waiting, then ends the capture. */
  end(): void;
}

const CHUNK = 64 * 1024;

/** Captures up to `limit` bytes of pipe `fd` (which it owns and closes). */
export function sessionCapture(lib: Trampoline, fd: number, limit: number): SessionCapture {
  const socket = new net.Socket({ fd, readable: true, writable: false });
  const chunks: Uint8Array[] = [];
  let kept = 0, truncated = false;
  const keep = (chunk: Uint8Array) => {
    const room = limit - kept;
    if (chunk.length > room) truncated = true;
    if (room <= 0) return;
    // Copy: a slice would pin the socket's whole chunk.
    chunks.push(new Uint8Array(chunk.subarray(0, Math.min(room, chunk.length))));
    kept += Math.min(room, chunk.length);
  };
  let resolve!: (captured: Captured) => void;
  const done = new Promise<Captured>((r) => resolve = r);
  socket.on("data", (chunk: Buffer) => keep(chunk));
  socket.on("error", () => {});
  socket.on("close", () => resolve({ bytes: Buffer.concat(chunks, kept), truncated }));
  return {
    done,
    end() {
      if (socket.destroyed) return;
      // The socket's fd is non-blocking (libuv): this reads what is pending and stops. A
      // writer that keeps the pipe full (a background flood) is bounded by the pipe's size.
      for (let reads = 0; reads < 64; reads++) {
        const buffer = new Uint8Array(CHUNK);
        const n = Number(lib.coop_read_report(fd, buffer, BigInt(CHUNK)));
        if (n <= 0) break;
        keep(buffer.subarray(0, n));
        if (n < CHUNK) break;
      }
      socket.destroy();
    },
  };
}
