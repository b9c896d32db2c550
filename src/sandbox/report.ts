/**
 * The report pipe: fixed-size records the trampoline and the init write (`ffi/protocol.h`) — a
 * setup step that failed, an exec that failed, the command's exit status, the layers applied.
 * @module
 */
import { Buffer } from "node:buffer";
import type { Trampoline } from "./ffi.ts";
import { RECORD, RECORD_SIZE } from "./protocol.ts";

/** What the trampoline and the init reported about one sandbox. */
export interface Report {
  setupError?: { step: number; errno: number };
  execErrno?: number;
  commandStatus?: number;
  ready?: { landlockAbi: number; seccomp: boolean };
}

const REPORT_CHUNK = 4096;

/**
 * Reads the report pipe once the init has been reaped, when every record is in the pipe and
 * the read ends at EOF at once (ffi/spawn.c `coop_read_report`). A synchronous read here
 * saves a `node:net` socket per sandbox, and its events, over watching the pipe all along.
 */
export function readReport(lib: Trampoline, fd: number): Report {
  const chunks: Uint8Array[] = [];
  for (;;) {
    const chunk = new Uint8Array(REPORT_CHUNK);
    const n = Number(lib.coop_read_report(fd, chunk, BigInt(chunk.length)));
    if (n <= 0) break;
    chunks.push(chunk.subarray(0, n));
    if (n < chunk.length) break;
  }
  lib.coop_close(fd);
  const bytes = Buffer.concat(chunks);
  const report: Report = {};
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = 0; at + RECORD_SIZE <= bytes.length; at += RECORD_SIZE) {
    const kind = view.getInt32(at, true), a = view.getInt32(at + 4, true);
    const b = view.getInt32(at + 8, true);
    if (kind === RECORD.error) report.setupError ??= { step: a, errno: b };
    else if (kind === RECORD.exec) report.execErrno = a;
    else if (kind === RECORD.exit) report.commandStatus = a;
    else if (kind === RECORD.ready) report.ready = { landlockAbi: a, seccomp: b === 1 };
  }
  return report;
}
