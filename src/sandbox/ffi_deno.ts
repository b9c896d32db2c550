/**
 * The FFI adapter for Deno: `Deno.dlopen`. The only file of the library that touches `Deno.*`
 * FFI; the koffi adapter (`ffi_koffi.ts`) offers the same shape under Node.
 * @module
 */
import type { NativeLibrary, NativePointer, NativeSignature } from "./trampoline_symbols.ts";

/** Opens the shared object at `path` with the functions of `table` (throws as dlopen does). */
export function openWithDeno<Symbols>(
  path: string,
  table: Record<string, NativeSignature>,
): NativeLibrary<Symbols> {
  const library = Deno.dlopen(path, table as Deno.ForeignLibraryInterface);
  return {
    // Deno already returns i64 results as bigint and takes typed arrays for "buffer".
    symbols: library.symbols as unknown as Symbols,
    cString: (pointer: NativePointer) =>
      pointer ? Deno.UnsafePointerView.getCString(pointer as Deno.PointerObject) : "",
    close: () => library.close(),
  };
}
