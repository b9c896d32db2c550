/**
 * The trampoline library carried inside a compiled executable (`deno task compile`): its bytes
 * are written to a sealed memfd and opened as `/proc/self/fd/N`, so the library never exists
 * as a file anyone could replace, and it is checked against the digests recorded at build time.
 *
 * A compiled build registers its bytes with {@link useEmbeddedLibrary} before the first
 * sandbox; from then on the loader (`ffi.ts`) never looks at `build/` or `ffi/`.
 * @module
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { SandboxUnavailableError } from "./errors.ts";
import { openNativeLibrary } from "./native_runtime.ts";
import type { NativeBuffer } from "./trampoline_symbols.ts";

/** The library as a compiled build embeds it, with what the build recorded about it. */
export interface EmbeddedLibrary {
  /** The shared object's bytes. */
  readonly bytes: Uint8Array;
  /** SHA-256 (hex) of `bytes`, recorded when the executable was built. */
  readonly sha256?: string;
  /** The hash of the C sources the library was built from (what it reports itself). */
  readonly sourceHash?: string;
}

let embedded: EmbeddedLibrary | undefined;

/** Makes the loader use `library` (a compiled build's embedded bytes) instead of `build/`. */
export function useEmbeddedLibrary(library: EmbeddedLibrary): void {
  embedded = library;
}

/** The registered embedded library, if this is a compiled build. */
export function embeddedLibrary(): EmbeddedLibrary | undefined {
  return embedded;
}

const MFD_CLOEXEC = 1, MFD_ALLOW_SEALING = 2;
const F_ADD_SEALS = 1033, F_GET_SEALS = 1034;
const F_SEAL_SEAL = 1, F_SEAL_SHRINK = 2, F_SEAL_GROW = 4, F_SEAL_WRITE = 8;
const ALL_SEALS = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;

const LIBC_SYMBOLS = {
  memfd_create: { parameters: ["buffer", "u32"], result: "i32" },
  write: { parameters: ["i32", "buffer", "usize"], result: "i64" },
  fcntl: { parameters: ["i32", "i32", "i32"], result: "i32" },
  close: { parameters: ["i32"], result: "i32" },
} as const;

interface Libc {
  memfd_create(name: NativeBuffer, flags: number): number;
  write(fd: number, bytes: NativeBuffer, length: bigint): bigint;
  fcntl(fd: number, command: number, argument: number): number;
  close(fd: number): number;
}

/** A sealed memfd holding the library, and the path dlopen takes it by. */
export interface SealedLibrary {
  /** `/proc/self/fd/N`. */
  readonly path: string;
  /** Closes the memfd (once the library is mapped, the mapping keeps its contents). */
  close(): void;
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function refuse(reason: string): never {
  throw new SandboxUnavailableError(
    `the sandbox library embedded in this executable ${reason}; rebuild it with ` +
      "`deno task compile`",
  );
}

/**
 * Checks `library.bytes` against its recorded digest, writes them to a memfd, seals it against
 * every change, and checks the sealed contents again (what dlopen maps is what was verified).
 */
export async function sealEmbeddedLibrary(library: EmbeddedLibrary): Promise<SealedLibrary> {
  if (!library.sha256 || !/^[0-9a-f]{64}$/.test(library.sha256)) {
    refuse("has no recorded digest");
  }
  if (!library.sourceHash) refuse("has no recorded source hash");
  if (sha256(library.bytes) !== library.sha256) refuse("does not match its recorded digest");
  const libc = await openNativeLibrary<Libc>("libc.so.6", LIBC_SYMBOLS);
  const encoder = new TextEncoder();
  const fd = libc.symbols.memfd_create(
    encoder.encode("coop-sandbox\0"),
    MFD_CLOEXEC | MFD_ALLOW_SEALING,
  );
  if (fd < 0) refuse("cannot be placed in a memfd (memfd_create failed)");
  try {
    let offset = 0;
    while (offset < library.bytes.length) {
      const chunk = library.bytes.subarray(offset);
      const n = Number(libc.symbols.write(fd, chunk, BigInt(chunk.length)));
      if (n <= 0) refuse("cannot be written to its memfd");
      offset += n;
    }
    if (libc.symbols.fcntl(fd, F_ADD_SEALS, ALL_SEALS) !== 0) refuse("cannot be sealed");
    if ((libc.symbols.fcntl(fd, F_GET_SEALS, 0) & ALL_SEALS) !== ALL_SEALS) {
      refuse("is in a memfd whose seals did not hold");
    }
    const path = `/proc/self/fd/${fd}`;
    if (sha256(readFileSync(path)) !== library.sha256) {
      refuse("changed on its way into the memfd");
    }
    return {
      path,
      close: () => {
        libc.symbols.close(fd);
        libc.close();
      },
    };
  } catch (error) {
    libc.symbols.close(fd);
    libc.close();
    throw error;
  }
}
