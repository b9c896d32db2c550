/**
 * A pseudo-terminal for a sandboxed command (`SpawnOptions.terminal`): the pty pair, the
 * master's relay as a `node:net` Socket, and resizing (ffi/pty.c).
 * @module
 */
import net from "node:net";
import { errnoName, errnoText } from "./errno.ts";
import { SandboxError, SandboxPolicyError } from "./errors.ts";
import { loadTrampoline, type Trampoline } from "./ffi.ts";
import { stepNumber } from "./protocol.ts";
import { setupFailure } from "./setup_failure.ts";

/** A terminal's size in character cells. */
export interface TerminalSize {
  /** Lines (1–65535). */
  rows: number;
  /** Columns (1–65535). */
  cols: number;
}

/** The owner's side of a command's terminal. */
export interface SandboxTerminal {
  /** The command's output (stdout and stderr, as a terminal shows them) and its input. */
  readonly socket: net.Socket;
  /** Sets the terminal's size; the command's foreground process group gets SIGWINCH. */
  resize(rows: number, cols: number): void;
}

/** An opened pty: the slave for coop_start, and what the owner keeps. */
export interface OpenedTerminal {
  /** The slave's fd: passed to the init, then closed here (`closeSlave`). */
  readonly slave: number;
  /** The owner's side. */
  readonly terminal: SandboxTerminal;
  /** Closes this process's copy of the slave (once the init has its own). */
  closeSlave(): void;
  /** Closes the master; the socket ends on its own once the command's side is closed. */
  closeMaster(): void;
}

function checkSize(rows: number, cols: number): void {
  for (const [name, value] of [["rows", rows], ["cols", cols]] as const) {
    if (!Number.isInteger(value) || value < 1 || value > 65535) {
      throw new SandboxPolicyError(`terminal ${name} must be an integer 1–65535, got ${value}`);
    }
  }
}

/**
 * Opens a pty of `size` and the relay of its master; a failure is setup step "terminal".
 *
 * @example
 * ```ts
 * const opened = openTerminal(lib, { rows: 24, cols: 80 });
 * opened.terminal.socket.on("data", (bytes) => process.stdout.write(bytes));
 * ```
 */
export function openTerminal(lib: Trampoline, size: TerminalSize): OpenedTerminal {
  checkSize(size.rows, size.cols);
  const out = new Int32Array(3);
  const r = lib.coop_pty_open(size.rows, size.cols, out);
  if (r < 0) throw setupFailure(stepNumber("terminal"), -r);
  const [socketFd, slave, master] = out;
  const socket = new net.Socket({ fd: socketFd, readable: true, writable: true });
  let slaveOpen = true, masterOpen = true;
  return {
    slave,
    terminal: {
      socket,
      resize(rows, cols) {
        checkSize(rows, cols);
        if (masterOpen) lib.coop_pty_resize(master, rows, cols);
      },
    },
    closeSlave() {
      if (slaveOpen) lib.coop_close(slave);
      slaveOpen = false;
    },
    closeMaster() {
      if (masterOpen) lib.coop_close(master);
      masterOpen = false;
    },
  };
}

/**
 * Puts the terminal on `fd` in raw mode (as `cfmakeraw`: no echo, no line editing, no signal
 * keys, no output processing) and returns the function that restores exactly the settings it
 * had. For relaying a terminal to a sandboxed command's own pty, whose line discipline then
 * does all of that once.
 *
 * @example
 * ```ts
 * const restore = await rawTerminal(0);
 * try {
 *   // relay
 * } finally {
 *   restore();
 * }
 * ```
 */
export async function rawTerminal(fd: number): Promise<() => void> {
  const lib = await loadTrampoline();
  const saved = new Uint8Array(256);
  const r = lib.coop_tty_raw(fd, saved, BigInt(saved.length));
  if (r < 0) {
    throw new SandboxError(
      "sandbox.terminal_mode",
      `cannot put the terminal (fd ${fd}) in raw mode: ${errnoName(-r)} (${errnoText(-r)})`,
    );
  }
  let restored = false;
  return () => {
    if (!restored) lib.coop_tty_restore(fd, saved);
    restored = true;
  };
}
