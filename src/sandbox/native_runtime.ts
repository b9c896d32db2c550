/**
 * Which JavaScript runtime hosts the library, and the FFI adapter for it: Deno's `dlopen` or
 * koffi under Node. Everything else in the library uses `node:*` APIs both runtimes have.
 * @module
 */
import type { NativeLibrary, NativeSignature } from "./trampoline_symbols.ts";

/** The runtimes the sandbox library runs on. */
export type RuntimeName = "deno" | "node";

/** The runtime executing this code. */
export function runtimeName(): RuntimeName {
  return "Deno" in globalThis ? "deno" : "node";
}

/** Opens the shared object at `path` with the adapter of the current runtime. */
export async function openNativeLibrary<Symbols>(
  path: string,
  table: Record<string, NativeSignature>,
): Promise<NativeLibrary<Symbols>> {
  if (runtimeName() === "deno") {
    const { openWithDeno } = await import("./ffi_deno.ts");
    return openWithDeno<Symbols>(path, table);
  }
  const { openWithKoffi } = await import("./ffi_koffi.ts");
  return openWithKoffi<Symbols>(path, table);
}
