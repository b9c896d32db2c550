/**
 * Builds a debug sandbox library without some protections (`build_ffi.ts --disable`), for the
 * layer-proof tests, the degraded self-test and the hardening bench; returns the environment
 * that makes a child `coop` or `deno test` load it (the loader refuses it otherwise).
 * @module
 */
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** The outcome of one debug build. */
export interface DebugLibrary {
  /** True when gcc built it. */
  ok: boolean;
  /** What the build printed (for assertion messages). */
  output: string;
  /** `COOP_SANDBOX_LIB` and `COOP_ALLOW_DEBUG_LIBRARY` for a child process. */
  env: Record<string, string>;
}

/** Builds (or reuses, when current) `build/debug-<layers joined by +>/`. */
export async function buildDebugLibrary(layers: readonly string[]): Promise<DebugLibrary> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      "--quiet",
      `${ROOT}scripts/build_ffi.ts`,
      ...layers.flatMap((layer) => ["--disable", layer]),
    ],
    stdin: "null",
  }).output();
  const text = new TextDecoder();
  const dir = [...layers].sort().join("+");
  return {
    ok: out.success,
    output: text.decode(out.stdout) + text.decode(out.stderr),
    env: {
      COOP_SANDBOX_LIB: `${ROOT}build/debug-${dir}/libcoop_sandbox.so`,
      COOP_ALLOW_DEBUG_LIBRARY: "1",
    },
  };
}
