/**
 * The FFI adapter for Node: koffi (an npm package with prebuilt binaries), loaded only when
 * the host is Node. It maps the Deno-style signature table to koffi's C types and normalises
 * 64-bit results to `bigint` (koffi returns `number`), so callers see what Deno gives them.
 * @module
 */
import { createRequire } from "node:module";
import type {
  NativeLibrary,
  NativePointer,
  NativeSignature,
  NativeType,
} from "./trampoline_symbols.ts";

/** A C function as koffi returns it; `async(...args, callback)` runs it on libuv's pool. */
interface KoffiFunction {
  (...args: unknown[]): unknown;
  async(...args: unknown[]): void;
}

/** The part of koffi's API this adapter uses. */
interface Koffi {
  load(path: string): {
    func(name: string, result: string, parameters: string[]): KoffiFunction;
    unload(): void;
  };
  decode(pointer: unknown, type: string, length: number): string;
}

// Typed arrays go to C as `void *` without a copy (koffi passes their memory for synchronous
// calls); koffi takes bigint or number for 64-bit parameters.
const C_TYPE: Record<NativeType, string> = {
  i32: "int32_t",
  u32: "uint32_t",
  i64: "int64_t",
  usize: "size_t",
  pointer: "void *",
  buffer: "void *",
  void: "void",
};

let koffi: Koffi | undefined;

function loadKoffi(): Koffi {
  // createRequire rather than `import "koffi"`: Deno never resolves it (it has its own FFI),
  // and koffi's entry point is CommonJS.
  koffi ??= createRequire(import.meta.url)("koffi") as Koffi;
  return koffi;
}

/** Opens the shared object at `path` with the functions of `table` through koffi. */
export function openWithKoffi<Symbols>(
  path: string,
  table: Record<string, NativeSignature>,
): NativeLibrary<Symbols> {
  const ffi = loadKoffi();
  const library = ffi.load(path);
  const symbols: Record<string, (...args: unknown[]) => unknown> = {};
  for (const [name, signature] of Object.entries(table)) {
    const call = library.func(
      name,
      C_TYPE[signature.result],
      signature.parameters.map((p) => C_TYPE[p]),
    );
    const wide = signature.result === "i64" || signature.result === "usize";
    const result = (value: unknown) => wide ? BigInt(value as number) : value;
    symbols[name] = signature.nonblocking
      ? (...args: unknown[]) =>
        new Promise((resolve, reject) =>
          call.async(
            ...args,
            (error: unknown, value: unknown) => error ? reject(error) : resolve(result(value)),
          )
        )
      : (...args: unknown[]) => result(call(...args));
  }
  return {
    symbols: symbols as unknown as Symbols,
    cString: (pointer: NativePointer) => (pointer ? ffi.decode(pointer, "char", -1) : ""),
    close: () => library.unload(),
  };
}
