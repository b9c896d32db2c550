/**
 * Loads the trampoline library (`ffi/`, built by `deno task build:ffi`) and checks that it
 * was built from the sources in this checkout.
 * @module
 */
import { createHash } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { embeddedLibrary, sealEmbeddedLibrary } from "./embedded_library.ts";
import { SandboxUnavailableError } from "./errors.ts";
import { openNativeLibrary } from "./native_runtime.ts";
import { hashSources } from "./source_hash.ts";
import { type NativeLibrary, type Trampoline, TRAMPOLINE_SYMBOLS } from "./trampoline_symbols.ts";

/** The trampoline's functions, the same under Deno and Node. */
export type { Trampoline } from "./trampoline_symbols.ts";

/** Indexes of coop_prestart's and coop_start's `params` array (`P_*` in ffi/spawn.c). */
export const PARAM = {
  newNet: 0,
  outerUid: 1,
  outerGid: 2,
  wantStdin: 3,
  /** 0, or 1 + the fd of a pty slave for the command (a zeroed array asks for none). */
  terminal: 4,
  /** 0, or 1 + the fd of a held overlay for the sandbox's first overlay (held_overlay.ts). */
  held: 5,
  count: 6,
} as const;
/** Indexes of the `out` array of coop_prestart and coop_start (`O_*` in ffi/spawn.c). */
export const OUT = {
  pid: 0,
  pidfd: 1,
  stdin: 2,
  stdout: 3,
  stderr: 4,
  report: 5,
  go: 6,
  errStep: 7,
  errErrno: 8,
  count: 9,
} as const;

const ROOT = new URL("../..", import.meta.url);
// Under Node the library belongs to the installed coop-sandbox package, which rebuilds it.
const REBUILD = import.meta.url.endsWith(".js")
  ? "run `npx coop-sandbox-build --force` in the project that installed coop-sandbox (needs gcc)"
  : "run `deno task build:ffi` (needs gcc), or `./coop` which builds it for you";

/** Where the library is looked for: `$COOP_SANDBOX_LIB`, else `build/` of this checkout. */
export function libraryPath(): string {
  return process.env.COOP_SANDBOX_LIB ??
    fileURLToPath(new URL("build/libcoop_sandbox.so", ROOT));
}

/** SHA-256 (hex) of the library: names this exact build, debug builds included. */
export async function libraryDigest(): Promise<string> {
  const embedded = embeddedLibrary();
  const bytes = embedded ? embedded.bytes : await readFile(libraryPath());
  return createHash("sha256").update(bytes).digest("hex");
}

const encoder = new TextEncoder();

/** `text` as a NUL-terminated UTF-8 string for the C side. */
export function cString(text: string): Uint8Array {
  return encoder.encode(`${text}\0`);
}

let loaded: Promise<Trampoline> | undefined;

/** Opens the library once; rejects with a SandboxUnavailableError that says how to fix it. */
export function loadTrampoline(): Promise<Trampoline> {
  loaded ??= open().catch((error) => {
    loaded = undefined;
    throw error;
  });
  return loaded;
}

/**
 * The library if `loadTrampoline()` has opened it, for synchronous code that only has work to
 * do once a sandbox has run (a sandbox's cgroup, killed at its end).
 */
export function openedTrampoline(): Trampoline | undefined {
  return opened?.symbols;
}

async function open(): Promise<Trampoline> {
  if (process.platform !== "linux") {
    throw new SandboxUnavailableError(
      `the Linux sandbox needs Linux; this is ${process.platform}`,
    );
  }
  const embedded = embeddedLibrary();
  let library: NativeLibrary<Trampoline>, path: string, expected: string, from: string;
  if (embedded) {
    // A compiled build: the bytes inside the executable, verified and sealed in a memfd; no
    // file on disk is ever consulted, and a missing digest is an error, never a skip.
    const sealed = await sealEmbeddedLibrary(embedded);
    path = sealed.path;
    try {
      library = await openNativeLibrary<Trampoline>(path, TRAMPOLINE_SYMBOLS);
    } catch (cause) {
      throw new SandboxUnavailableError(
        `cannot load the sandbox library embedded in this executable: ${(cause as Error).message}`,
        { cause },
      );
    } finally {
      sealed.close();
    }
    expected = embedded.sourceHash!;
    from = "the source hash recorded when this executable was built";
  } else {
    path = libraryPath();
    try {
      library = await openNativeLibrary<Trampoline>(path, TRAMPOLINE_SYMBOLS);
    } catch (cause) {
      throw new SandboxUnavailableError(
        `cannot load the sandbox library ${path}: ${(cause as Error).message}; ${REBUILD}`,
        { cause },
      );
    }
    const sourceDir = fileURLToPath(new URL("ffi", ROOT));
    if (!await stat(sourceDir).then(() => true, () => false)) {
      // Without the sources nothing ties the library to a reviewed build: refuse rather than
      // run an unverified one (a compiled build carries its digests instead).
      library.close();
      throw new SandboxUnavailableError(
        `cannot verify the sandbox library ${path}: its C sources ${sourceDir} are missing; ` +
          "reinstall, or use a compiled build (`deno task compile`)",
      );
    }
    expected = await hashSources(sourceDir);
    from = `the sources in ${sourceDir}`;
  }
  const built = library.cString(library.symbols.coop_source_hash());
  if (built !== expected) {
    library.close();
    throw new SandboxUnavailableError(
      `the sandbox library ${path} was built from other sources than ${from} ` +
        `(library ${built.slice(0, 12) || "unknown"}, sources ${expected.slice(0, 12)}); ` +
        REBUILD,
    );
  }
  const layers = disabledLayersOf(library);
  if (layers.length && process.env.COOP_ALLOW_DEBUG_LIBRARY !== "1") {
    library.close();
    throw new SandboxUnavailableError(
      `the sandbox library ${path} is a debug build without ${layers.join(", ")}; ` +
        `it is only for tests (COOP_ALLOW_DEBUG_LIBRARY=1). ${REBUILD}`,
    );
  }
  opened = library;
  return library.symbols;
}

let opened: NativeLibrary<Trampoline> | undefined;

function disabledLayersOf(library: NativeLibrary<Trampoline>): string[] {
  return library.cString(library.symbols.coop_disabled_layers()).split(",").filter(Boolean);
}

/** Protections the loaded library was built without (empty for every release build). */
export async function disabledLayers(): Promise<string[]> {
  await loadTrampoline();
  return disabledLayersOf(opened!);
}
