/**
 * What `coop start` can do about its own memory once it rests: read its CPU
 * time from `/proc/self`, run a full garbage collection, and hand glibc's freed heap pages back to
 * the kernel. Under load V8 and malloc keep their high-water marks (docs/performance.md, "When the
 * load stops"); neither gives them back while the event loop sleeps.
 * @module
 */
import { readFileSync, realpathSync } from "node:fs";
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

/** What of glibc this module calls. */
interface Libc {
  malloc_trim(pad: bigint): Promise<number>;
  madvise(address: bigint, length: bigint, advice: number): number;
}

let libcLoading: Promise<NativeLibrary<Libc> | undefined> | undefined;

/** glibc, opened once; undefined where it cannot be (musl, or no FFI). */
function libc(): Promise<NativeLibrary<Libc> | undefined> {
  libcLoading ??= openNativeLibrary<Libc>("libc.so.6", {
    malloc_trim: { parameters: ["usize"], result: "i32", nonblocking: true },
    // The address as a plain integer: the same in the C ABI as a pointer, on both FFI adapters.
    madvise: { parameters: ["usize", "usize", "i32"], result: "i32" },
  }).catch(() => undefined);
  return libcLoading;
}

/**
 * glibc's `malloc_trim(0)`: returns the free pages of every malloc arena to the kernel. It runs
 * on the runtime's thread pool (a nonblocking FFI call), so the event loop goes on meanwhile: on a
 * heap of tens of MB it walks every free chunk. Resolves to false where there is no such function
 * (musl, or no FFI).
 */
export async function trimMallocHeap(): Promise<boolean> {
  const glibc = await libc();
  if (!glibc) return false;
  await glibc.symbols.malloc_trim(0n);
  return true;
}

/** `MADV_DONTNEED` (asm-generic/mman-common.h, which x86_64 and aarch64 use). */
const MADV_DONTNEED = 4;

/** One mapping of `/proc/self/smaps` that `releaseProgramPages` may drop. */
export interface ProgramMapping {
  start: bigint;
  length: bigint;
  residentKb: number;
}

/**
 * The runtime binary's mappings whose resident pages are all the file's own: not writable, and
 * with no anonymous (copied-on-write) page — dropping those would lose the runtime's relocations.
 */
export function programMappings(smaps: string, program: string): ProgramMapping[] {
  const found: ProgramMapping[] = [];
  let current: (ProgramMapping & { anonymousKb?: number }) | null = null;
  const settle = () => {
    if (current && current.anonymousKb === 0 && current.residentKb > 0) {
      found.push({ start: current.start, length: current.length, residentKb: current.residentKb });
    }
  };
  for (const line of smaps.split("\n")) {
    // Every line that starts with an address range begins a mapping, whether or not it names a
    // file: reading a nameless one's fields as the previous mapping's would be wrong.
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) {
      settle();
      const header = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+ *(.*)$/.exec(line);
      if (!header) {
        current = null;
        continue;
      }
      const [, from, to, perms, path] = header;
      current = path === program && !perms.includes("w")
        ? {
          start: BigInt(`0x${from}`),
          length: BigInt(`0x${to}`) - BigInt(`0x${from}`),
          residentKb: 0,
        }
        : null;
      continue;
    }
    if (!current) continue;
    const field = /^(Rss|Anonymous):\s+(\d+) kB/.exec(line);
    if (field?.[1] === "Rss") current.residentKb = Number(field[2]);
    else if (field?.[1] === "Anonymous") current.anonymousKb = Number(field[2]);
  }
  settle();
  return found;
}

/**
 * Drops this process's resident pages of the runtime binary (`madvise(MADV_DONTNEED)` on its
 * read-only mappings): start-up code, the V8 snapshot it deserialized, code paths a gateway never
 * takes again — tens of MB counted in its resident set for as long as it runs. They stay in the
 * page cache; a page used again comes back with a minor fault. Resolves to the kB dropped, or
 * undefined where it cannot run (no `/proc`, no FFI).
 */
export async function releaseProgramPages(): Promise<number | undefined> {
  const glibc = await libc();
  if (!glibc) return undefined;
  let mappings: ProgramMapping[];
  try {
    mappings = programMappings(
      readFileSync("/proc/self/smaps", "latin1"),
      realpathSync("/proc/self/exe"),
    );
  } catch {
    return undefined;
  }
  let released = 0;
  for (const mapping of mappings) {
    if (glibc.symbols.madvise(mapping.start, mapping.length, MADV_DONTNEED) === 0) {
      released += mapping.residentKb;
    }
  }
  return released;
}
