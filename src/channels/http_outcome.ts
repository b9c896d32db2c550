/**
 * The JSON body of a `POST /v1/messages` answer: the turn's outcome, with each file the turn
 * sent (`send_file`) inline as base64 (docs/agent.md, "Sending files").
 * @module
 */
import { Buffer } from "node:buffer";
import type { TurnOutcome } from "../gateway/turn_handler.ts";

/** A sent file as the HTTP channel returns it. */
export interface HttpFile {
  /** The file's name (no directory). */
  name: string;
  /** Its media type, e.g. `text/csv`. */
  mediaType: string;
  /** Its size in bytes. */
  size: number;
  /** Its content, base64-encoded (RFC 4648 §4). */
  base64: string;
}

/** Returns `outcome` as JSON-ready data: `files` (when there are any) become `HttpFile`s. */
export function httpOutcomeBody(outcome: TurnOutcome): Record<string, unknown> {
  const { files, ...rest } = outcome;
  if (!files?.length) return rest;
  return {
    ...rest,
    files: files.map((f): HttpFile => ({
      name: f.name,
      mediaType: f.mediaType,
      size: f.bytes.length,
      base64: Buffer.from(f.bytes).toString("base64"),
    })),
  };
}
