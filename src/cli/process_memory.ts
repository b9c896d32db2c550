/**
 * What `coop start` can do about its own memory once it rests: read its CPU
 * time from `/proc/self`, run a full garbage collection, and hand glibc's freed heap pages back to
 * the kernel. Under load V8 and malloc keep their high-water marks (docs/performance.md, "When the
 * load stops"); neither gives them back while the event loop sleeps.
 * @module
 */
import { readFileSync } from "node:fs";
import inspector from "node:inspector";
import { openNativeLibrary } from "../sandbox/native_runtime.ts";
import type { NativeLibrary } from "../sandbox/trampoline_symbols.ts";

/** The kernel's clock ticks per second for `/proc` CPU times (USER_HZ: 100 on every Linux ABI). */
const TICKS_PER_SECOND = 100;

/** CPU time this process has used, all threads, user + system, in ms (`/proc/self/stat`). */
export function cpuTimeMs(): number | undefined {
  try {
    const stat = readFileSync("/proc/self/stat", "latin1");
    // The command name may hold spaces and parentheses: fields are counted after the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
    return Number.isFinite(ticks) ? (ticks * 1000) / TICKS_PER_SECOND : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A full, compacting garbage collection of this isolate through an in-process inspector session
 * (no `--expose-gc` needed). Resolves to false where the runtime has no inspector.
 */
export function collectGarbage(): Promise<boolean> {
  let session: inspector.Session;
  try {
    session = new inspector.Session();
    session.connect();
  } catch {
    return Promise.resolve(false);
  }
  return new Promise((resolve) => {
    // Deno delivers the inspector's reply without holding the event loop open: a timer does, so
    // a process with nothing else pending still waits for the collection it asked for.
    const hold = setTimeout(() => {}, 60_000);
    session.post("HeapProfiler.collectGarbage", (error: Error | null) => {
      clearTimeout(hold);
      session.disconnect();
      resolve(error === null);
    });
  });
}

interface Malloc {
  malloc_trim(pad: bigint): Promise<number>;
}

let malloc: Promise<NativeLibrary<Malloc> | undefined> | undefined;

/**
 * glibc's `malloc_trim(0)`: returns the free pages of every malloc arena to the kernel. It runs
 * on the runtime's thread pool (a nonblocking FFI call), so the event loop goes on meanwhile: on a
 * heap of tens of MB it walks every free chunk. Resolves to false where there is no such function
 * (musl, or no FFI).
 */
export async function trimMallocHeap(): Promise<boolean> {
  malloc ??= openNativeLibrary<Malloc>("libc.so.6", {
    malloc_trim: { parameters: ["usize"], result: "i32", nonblocking: true },
  }).catch(() => undefined);
  const libc = await malloc;
  if (!libc) return false;
  await libc.symbols.malloc_trim(0n);
  return true;
}
