/**
 * Keeps at most `limit` bytes of a stream and drains the rest, so a flood (`yes`) costs
 * bounded memory while the command still runs to completion or to its timeout.
 * @module
 */
import type { Buffer } from "node:buffer";
import type net from "node:net";

/** What a capture collected once the stream closed. */
export interface Captured {
  bytes: Uint8Array;
  truncated: boolean;
}

/** Collects up to `limit` bytes from `socket`; resolves when the stream closes. */
export function captureOutput(socket: net.Socket, limit: number): Promise<Captured> {
  return new Promise((resolve) => {
    const chunks: Uint8Array[] = [];
    let kept = 0, truncated = false;
    socket.on("data", (chunk: Buffer) => {
      if (kept >= limit) {
        truncated = true;
        return;
      }
      const room = limit - kept;
      const piece = chunk.length > room ? chunk.subarray(0, room) : chunk;
      if (chunk.length > room) truncated = true;
      // Copy: the socket may reuse its buffer, and a slice would pin the large chunk.
      chunks.push(new Uint8Array(piece));
      kept += piece.length;
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      const bytes = new Uint8Array(kept);
      let offset = 0;
      for (const chunk of chunks) {
        bytes.set(chunk, offset);
        offset += chunk.length;
      }
      resolve({ bytes, truncated });
    });
  });
}
