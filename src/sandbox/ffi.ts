/**
 * Loads the trampoline library (`ffi/`, built by `deno task build:ffi`) and checks that it
 * was built from the sources in this checkout.
 * @module
 */
import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import { SandboxUnavailableError } from "./errors.ts";
import { hashSources } from "./source_hash.ts";

const SYMBOLS = {
  coop_source_hash: { parameters: [], result: "pointer" },
  coop_disabled_layers: { parameters: [], result: "pointer" },
  coop_prestart: { parameters: ["buffer", "buffer"], result: "i32" },
  coop_start: {
    parameters: ["buffer", "usize", "buffer", "buffer", "buffer", "buffer"],
    result: "i32",
  },
  coop_discard: { parameters: ["buffer"], result: "void" },
  coop_wait: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
  coop_kill: { parameters: ["i32", "i32"], result: "i32" },
  coop_read_report: { parameters: ["i32", "buffer", "i64"], result: "i64" },
  coop_close: { parameters: ["i32"], result: "i32" },
  coop_dup: { parameters: ["i32"], result: "i32" },
  coop_read_beneath: { parameters: ["buffer", "buffer", "buffer", "i64", "buffer"], result: "i64" },
  coop_write_beneath: {
    parameters: ["buffer", "buffer", "buffer", "i64", "i32"],
    result: "i64",
  },
  coop_drain: { parameters: ["i32", "i64"], result: "i64" },
  coop_list_dir: { parameters: ["buffer", "buffer", "i64"], result: "i64" },
  coop_relay_start: { parameters: ["buffer", "i32", "buffer", "i64", "buffer"], result: "pointer" },
  coop_relay_head: { parameters: ["pointer", "u32", "buffer", "i64"], result: "i64" },
  coop_relay_reply: { parameters: ["pointer", "u32", "buffer", "i64"], result: "i32" },
  coop_relay_dial: {
    parameters: ["pointer", "u32", "buffer", "i32", "buffer", "i64", "buffer", "i64"],
    result: "i32",
  },
  coop_relay_release: { parameters: ["pointer", "u32"], result: "i32" },
  coop_relay_stop: { parameters: ["pointer"], result: "void" },
  coop_relay_free: { parameters: ["pointer"], result: "void" },
} as const;

/** The trampoline's functions, as Deno.dlopen exposes them. */
export type Trampoline = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];

/** Indexes of coop_prestart's and coop_start's `params` array (`P_*` in ffi/spawn.c). */
export const PARAM = { newNet: 0, outerUid: 1, outerGid: 2, wantStdin: 3, count: 4 } as const;
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
const REBUILD = "run `deno task build:ffi` (needs gcc), or `./coop` which builds it for you";

/** Where the library is looked for: `$COOP_SANDBOX_LIB`, else `build/` of this checkout. */
export function libraryPath(): string {
  return Deno.env.get("COOP_SANDBOX_LIB") ??
    fileURLToPath(new URL("build/libcoop_sandbox.so", ROOT));
}

/** SHA-256 (hex) of the library file: names this exact build, debug builds included. */
export async function libraryDigest(): Promise<string> {
  return createHash("sha256").update(await Deno.readFile(libraryPath())).digest("hex");
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

async function open(): Promise<Trampoline> {
  if (Deno.build.os !== "linux") {
    throw new SandboxUnavailableError(
      `the Linux sandbox needs Linux; this is ${Deno.build.os}`,
    );
  }
  const path = libraryPath();
  let library: Deno.DynamicLibrary<typeof SYMBOLS>;
  try {
    library = Deno.dlopen(path, SYMBOLS);
  } catch (cause) {
    throw new SandboxUnavailableError(
      `cannot load the sandbox library ${path}: ${(cause as Error).message}; ${REBUILD}`,
      { cause },
    );
  }
  const pointer = library.symbols.coop_source_hash();
  const built = pointer ? Deno.UnsafePointerView.getCString(pointer) : "";
  const sourceDir = fileURLToPath(new URL("ffi", ROOT));
  const haveSources = await Deno.stat(sourceDir).then(() => true, () => false);
  if (haveSources) {
    const expected = await hashSources(sourceDir);
    if (built !== expected) {
      library.close();
      throw new SandboxUnavailableError(
        `the sandbox library ${path} was built from other sources than ${sourceDir} ` +
          `(library ${built.slice(0, 12) || "unknown"}, sources ${expected.slice(0, 12)}); ` +
          REBUILD,
      );
    }
  }
  const layers = disabledLayersOf(library.symbols);
  if (layers.length && Deno.env.get("COOP_ALLOW_DEBUG_LIBRARY") !== "1") {
    library.close();
    throw new SandboxUnavailableError(
      `the sandbox library ${path} is a debug build without ${layers.join(", ")}; ` +
        `it is only for tests (COOP_ALLOW_DEBUG_LIBRARY=1). ${REBUILD}`,
    );
  }
  return library.symbols;
}

function disabledLayersOf(symbols: Trampoline): string[] {
  const pointer = symbols.coop_disabled_layers();
  const list = pointer ? Deno.UnsafePointerView.getCString(pointer) : "";
  return list.split(",").filter(Boolean);
}

/** Protections the loaded library was built without (empty for every release build). */
export async function disabledLayers(): Promise<string[]> {
  return disabledLayersOf(await loadTrampoline());
}
