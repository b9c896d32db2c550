/**
 * The trampoline's C functions: one signature table both FFI adapters read (`ffi_deno.ts`,
 * `ffi_koffi.ts`), and the runtime-neutral type the rest of the library calls them through.
 *
 * 64-bit values are normalised to `bigint` on both runtimes (Deno's own form; the koffi adapter
 * converts), so call sites never see `number | bigint`. Pointers are opaque: a value that is
 * `null` for C's NULL and is only ever handed back to C.
 * @module
 */

/** The C types the tables use (Deno's FFI names; the koffi adapter maps them). */
export type NativeType = "i32" | "u32" | "i64" | "usize" | "pointer" | "buffer" | "void";

/** One C function's parameter and result types. */
export interface NativeSignature {
  readonly parameters: readonly NativeType[];
  readonly result: NativeType;
  /** Runs on a thread of the runtime's pool: the call returns a promise of the result. */
  readonly nonblocking?: boolean;
}

/** An opaque C pointer: `null` for NULL, otherwise only passed back to C. */
export type NativePointer = object | bigint | null;

/** Memory C reads or writes: a typed array passed without a copy, or `null` for NULL. */
export type NativeBuffer = Uint8Array | Int32Array | BigInt64Array | null;

/** The trampoline's exported functions (ffi/*.c). */
export const TRAMPOLINE_SYMBOLS = {
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
  coop_recv_held: { parameters: ["i32"], result: "i32" },
  coop_pidfd_open: { parameters: ["i32"], result: "i32" },
  coop_dup: { parameters: ["i32"], result: "i32" },
  coop_read_beneath: { parameters: ["buffer", "buffer", "buffer", "i64", "buffer"], result: "i64" },
  coop_write_beneath: {
    parameters: ["buffer", "buffer", "buffer", "i64", "i32"],
    result: "i64",
  },
  coop_drain: { parameters: ["i32", "i64"], result: "i64" },
  coop_list_dir: { parameters: ["buffer", "buffer", "i64"], result: "i64" },
  coop_tree_usage: { parameters: ["buffer", "i64", "buffer"], result: "i64" },
  // Waits for the disk (ms, more under load): never on the event loop, and cheaper on the
  // runtime's thread pool than as a message to the off-loop worker (src/sandbox/upper_sync.ts).
  coop_syncfs: { parameters: ["buffer"], result: "i32", nonblocking: true },
  coop_lock_file: { parameters: ["buffer", "buffer", "i64", "buffer"], result: "i32" },
  coop_mount_root: { parameters: ["buffer"], result: "i32" },
  coop_relay_start: { parameters: ["buffer", "i32", "buffer", "i64", "buffer"], result: "pointer" },
  coop_relay_head: { parameters: ["pointer", "u32", "buffer", "i64"], result: "i64" },
  coop_relay_reply: { parameters: ["pointer", "u32", "buffer", "i64"], result: "i32" },
  coop_relay_dial: {
    parameters: ["pointer", "u32", "buffer", "i32", "buffer", "i64", "buffer", "i64"],
    result: "i32",
  },
  coop_relay_release: { parameters: ["pointer", "u32"], result: "i32" },
  coop_relay_drain: { parameters: ["pointer"], result: "void" },
  coop_relay_stop: { parameters: ["pointer"], result: "void" },
  coop_relay_free: { parameters: ["pointer"], result: "void" },
  coop_session_run: {
    parameters: ["i32", "i32", "buffer", "usize", "i32", "buffer"],
    result: "i32",
  },
  coop_session_signal: { parameters: ["i32", "i32", "i32"], result: "i32" },
  coop_pty_open: { parameters: ["i32", "i32", "buffer"], result: "i32" },
  coop_pty_resize: { parameters: ["i32", "i32", "i32"], result: "i32" },
  coop_tty_raw: { parameters: ["i32", "buffer", "i64"], result: "i32" },
  coop_tty_restore: { parameters: ["i32", "buffer"], result: "i32" },
  coop_netwatch_open: { parameters: [], result: "i32" },
  coop_netwatch_changed: { parameters: ["i32"], result: "i32" },
} as const satisfies Record<string, NativeSignature>;

type Buf = NativeBuffer;
type Ptr = NativePointer;

/** The trampoline's functions as both adapters expose them. */
export interface Trampoline {
  coop_source_hash(): Ptr;
  coop_disabled_layers(): Ptr;
  coop_prestart(params: Buf, out: Buf): number;
  coop_start(spec: Buf, length: bigint, params: Buf, idmap: Buf, attach: Buf, out: Buf): number;
  coop_discard(out: Buf): void;
  coop_wait(pid: number, status: Buf, cpu: Buf): number;
  coop_kill(pidfd: number, signal: number): number;
  coop_read_report(fd: number, buffer: Buf, length: bigint): bigint;
  coop_close(fd: number): number;
  coop_recv_held(go: number): number;
  coop_pidfd_open(pid: number): number;
  coop_dup(fd: number): number;
  coop_read_beneath(root: Buf, rel: Buf, buffer: Buf, max: bigint, size: Buf): bigint;
  coop_write_beneath(root: Buf, rel: Buf, data: Buf, length: bigint, mode: number): bigint;
  coop_drain(fd: number, max: bigint): bigint;
  coop_list_dir(path: Buf, buffer: Buf, length: bigint): bigint;
  coop_tree_usage(path: Buf, limit: bigint, out: Buf): bigint;
  coop_syncfs(path: Buf): Promise<number>;
  coop_lock_file(path: Buf, holder: Buf, holderLength: bigint, changed: Buf): number;
  coop_mount_root(path: Buf): number;
  coop_relay_start(path: Buf, max: number, refusal: Buf, length: bigint, out: Buf): Ptr;
  coop_relay_head(relay: Ptr, id: number, buffer: Buf, length: bigint): bigint;
  coop_relay_reply(relay: Ptr, id: number, bytes: Buf, length: bigint): number;
  coop_relay_dial(
    relay: Ptr,
    id: number,
    address: Buf,
    port: number,
    head: Buf,
    headLength: bigint,
    refusal: Buf,
    refusalLength: bigint,
  ): number;
  coop_relay_release(relay: Ptr, id: number): number;
  coop_relay_drain(relay: Ptr): void;
  coop_relay_stop(relay: Ptr): void;
  coop_relay_free(relay: Ptr): void;
  coop_session_run(
    sock: number,
    id: number,
    spec: Buf,
    length: bigint,
    wantStdin: number,
    out: Buf,
  ): number;
  coop_session_signal(sock: number, id: number, signal: number): number;
  coop_pty_open(rows: number, cols: number, out: Buf): number;
  coop_pty_resize(master: number, rows: number, cols: number): number;
  coop_tty_raw(fd: number, saved: Buf, cap: bigint): number;
  coop_tty_restore(fd: number, saved: Buf): number;
  coop_netwatch_open(): number;
  coop_netwatch_changed(fd: number): number;
}

/** A loaded shared object: its functions, and what only the runtime can do with pointers. */
export interface NativeLibrary<Symbols> {
  /** The functions, called synchronously on the calling thread. */
  readonly symbols: Symbols;
  /** The NUL-terminated UTF-8 string at `pointer` ("" for NULL). */
  cString(pointer: NativePointer): string;
  /** Unloads the library. */
  close(): void;
}
