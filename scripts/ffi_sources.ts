/**
 * The sources of the sandbox library (`build/libcoop_sandbox.so`), relative to `ffi/`: one list
 * for the build (`build_ffi.ts`) and for the test that builds a stale copy of it, so that a new
 * source file cannot be missing from either.
 * @module
 */

/** C and assembly files of the shared object, in link order. */
export const LIBRARY_SOURCES: readonly string[] = [
  "spawn.c",
  "cgroup.c",
  "drain.c",
  "beneath.c",
  "dir_list.c",
  "relay.c",
  "session.c",
  "pty.c",
  "syncfs.c",
  "file_lock.c",
  "init_blob.S",
];
