/**
 * Reading and writing files confined to a directory, atomically: the kernel resolves the
 * path with `openat2(RESOLVE_BENEATH)` (ffi/beneath.c), so a symlink swapped in by a running
 * sandbox cannot redirect the gateway outside the root. Used by the file tools.
 * @module
 */
import { errnoName } from "./errno.ts";
import { cString, loadTrampoline } from "./ffi.ts";

/** A confined file operation failed; `code` is the errno name (`EXDEV`: it left the root). */
export class BeneathError extends Error {
  /** The errno name, e.g. `ENOENT`, `EXDEV`, `EISDIR`, `EFBIG`. */
  readonly code: string;
  /** For `EFBIG`: the file's size. */
  readonly size?: number;
  constructor(code: string, message: string, size?: number) {
    super(message);
    this.name = "BeneathError";
    this.code = code;
    this.size = size;
  }
}

function fail(errno: number, what: string, size?: number): never {
  const code = errnoName(errno);
  throw new BeneathError(code, `${what}: ${code}`, size);
}

/** Reads regular file `rel` under `root`, at most `maxBytes`; throws `BeneathError`. */
export async function readFileBeneath(
  root: string,
  rel: string,
  maxBytes: number,
): Promise<Uint8Array> {
  const lib = await loadTrampoline();
  const buffer = new Uint8Array(maxBytes);
  const size = new BigInt64Array(1);
  const n = Number(
    lib.coop_read_beneath(cString(root), cString(rel), buffer, BigInt(maxBytes), size),
  );
  if (n < 0) fail(-n, `cannot read ${rel}`, Number(size[0]));
  return buffer.slice(0, n);
}

/**
 * Creates or truncates `rel` under `root` (making missing parents) with `bytes`. With
 * `noSymlinks`, a symlink anywhere in `rel` fails it with `ELOOP` (writes for a non-owner).
 */
export async function writeFileBeneath(
  root: string,
  rel: string,
  bytes: Uint8Array,
  options: { noSymlinks?: boolean } = {},
): Promise<void> {
  const lib = await loadTrampoline();
  const n = Number(
    lib.coop_write_beneath(
      cString(root),
      cString(rel),
      bytes,
      BigInt(bytes.length),
      options.noSymlinks ? 1 : 0,
    ),
  );
  if (n < 0) fail(-n, `cannot write ${rel}`);
}
