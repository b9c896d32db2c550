/**
 * Progress of a base build on stderr: a line per step and per notable event with the elapsed
 * time and the bytes written so far, at most one "still working" line every few seconds while
 * bytes flow, and a summary at the end. Silent with `--json` (the JSON result says it all).
 * @module
 */
import { sizeText } from "./size_text.ts";

/** The steps a build goes through; a failure names one. */
export type BuildStep = "fetch" | "unpack" | "packages" | "setup" | "agent" | "manifest";

/** Receives a build's progress. */
export interface BuildProgress {
  /** A step starts (or reports a notable event within it). */
  step(step: BuildStep, detail: string): void;
  /** `count` more bytes were written into the base. */
  bytes(count: number): void;
  /** The build finished. */
  done(summary: string): void;
}

/** Reports nothing (`--json`, tests). */
export const SILENT_PROGRESS: BuildProgress = { step() {}, bytes() {}, done() {} };

/** Writes progress lines to `write` (stderr by default), prefixed with `label`. */
export function lineProgress(
  label: string,
  write: (line: string) => void = (line) => console.error(line),
  tickMs = 3000,
  now: () => number = () => performance.now(),
): BuildProgress {
  const start = now();
  let total = 0;
  let current: BuildStep | null = null;
  let lastLine = start;
  const elapsed = () => `${((now() - start) / 1000).toFixed(1)}s`;
  const emit = (text: string) => {
    lastLine = now();
    write(`${label}: [${elapsed()}] ${text} (${sizeText(total)} so far)`);
  };
  return {
    step(step, detail) {
      current = step;
      emit(`${step}: ${detail}`);
    },
    bytes(count) {
      total += count;
      if (now() - lastLine >= tickMs) emit(`${current ?? "build"}: working`);
    },
    done(summary) {
      write(`${label}: [${elapsed()}] ${summary}`);
    },
  };
}
