/**
 * Group commit for the state database: commits are made without an fsync
 * (`synchronous=NORMAL`, committed — a crash of Coop cannot lose them — but left to the OS), and
 * whoever must acknowledge one awaits `flush()`, which fsyncs the write-ahead log on a thread of
 * the runtime's pool instead of the event loop. Every commit made while one fsync runs is covered
 * by the next, so N concurrent turns share one fsync, and none is acknowledged before an fsync
 * that started after its own commit has finished.
 *
 * Why the WAL file and not a checkpoint: SQLite appends each commit's frames to `<db>-wal`, so
 * `fdatasync` of that file makes every commit so far durable; it is the same inode SQLite writes
 * through for as long as a connection is open (the file is reused after checkpoints, removed only
 * when the last connection closes, after a checkpoint that syncs the database itself).
 * @module
 */
import { closeSync, fdatasync, fstatSync, openSync, statSync } from "node:fs";
import type { DatabaseSync } from "node:sqlite";
import { getLogger } from "@logtape/logtape";
import { errorMessage } from "../errors/coop_error.ts";
import { runOffLoop } from "../sandbox/off_loop.ts";
import type { CheckpointResult } from "./wal_checkpoint.ts";

const log = getLogger(["coop", "state"]);

/** Checkpoints the WAL of the database at a path, off the event loop (`wal_checkpoint.ts`). */
export type Checkpoint = (databasePath: string) => Promise<CheckpointResult>;

const checkpointOffLoop: Checkpoint = (path) =>
  runOffLoop<CheckpointResult>(new URL("./wal_checkpoint.ts", import.meta.url), "checkpointWal", [
    path,
  ]);

/**
 * Commits between checkpoints on the worker: a few pages each, so about SQLite's own default
 * (1,000 pages) of WAL between them.
 */
export const CHECKPOINT_EVERY_COMMITS = 250;

/**
 * The connection's own automatic checkpoint stays as a safety net, far beyond the worker's
 * (≈ 40 MB of WAL): it runs only when checkpoints on the worker keep failing.
 */
const SAFETY_NET_PAGES = 10_000;

/** Syncs a file's data to disk; injectable so tests can hold an fsync open and count them. */
export type SyncData = (fd: number) => Promise<void>;

/** `fdatasync` on the runtime's thread pool: the event loop goes on meanwhile. */
const syncData: SyncData = (fd) =>
  new Promise((resolve, reject) => fdatasync(fd, (error) => error ? reject(error) : resolve()));

/**
 * Coalesces fsyncs of one database's WAL: `committed()` after each commit, `await flush()`
 * before acknowledging.
 *
 * @example
 * ```ts
 * const wal = new WalFlusher("/var/lib/coop/coop.db");
 * db.exec("INSERT …"); // with PRAGMA synchronous = NORMAL
 * wal.committed();
 * await wal.flush(); // on disk now, together with every other commit before the fsync began
 * ```
 */
export class WalFlusher {
  readonly #walPath: string;
  readonly #syncData: SyncData;
  /** Commits so far, and how many of them an fsync has covered. */
  #committed = 0;
  #synced = 0;
  #running: Promise<void> | null = null;
  #fd: number | null = null;

  readonly #databasePath: string;
  readonly #checkpoint: Checkpoint | null;
  #checkpointing = false;
  #commitsAtCheckpoint = 0;

  /**
   * With `db` (the connection that commits), checkpoints move off the event loop: its automatic
   * checkpoint is pushed back to a safety net and every `CHECKPOINT_EVERY_COMMITS` commits one
   * runs on the off-loop worker (`checkpoint`, injectable for tests).
   */
  constructor(
    databasePath: string,
    options: { syncData?: SyncData; db?: DatabaseSync; checkpoint?: Checkpoint } = {},
  ) {
    this.#databasePath = databasePath;
    this.#walPath = `${databasePath}-wal`;
    this.#syncData = options.syncData ?? syncData;
    this.#checkpoint = options.db ? options.checkpoint ?? checkpointOffLoop : null;
    options.db?.exec(`PRAGMA wal_autocheckpoint = ${SAFETY_NET_PAGES}`);
  }

  /** Counts a commit made without an fsync; the next `flush()` waits for one that covers it. */
  committed(): void {
    this.#committed++;
    if (
      this.#checkpoint && !this.#checkpointing &&
      this.#committed - this.#commitsAtCheckpoint >= CHECKPOINT_EVERY_COMMITS
    ) {
      this.#checkpointInBackground(this.#checkpoint);
    }
  }

  /** How many checkpoints finished on the worker (tests count them). */
  checkpoints = 0;
  /** What the last checkpoint on the worker did (tests). */
  lastCheckpoint: CheckpointResult | null = null;

  /** Resolves once no checkpoint is running (tests; `close` need not wait for one). */
  async checkpointsSettled(): Promise<void> {
    while (this.#checkpointing) await new Promise((resolve) => setTimeout(resolve, 1));
  }

  #checkpointInBackground(checkpoint: Checkpoint): void {
    this.#checkpointing = true;
    this.#commitsAtCheckpoint = this.#committed;
    checkpoint(this.#databasePath).then(
      (result) => {
        this.checkpoints++;
        this.lastCheckpoint = result;
      },
      (error) => {
        // Not fatal: the connection's own checkpoint (SAFETY_NET_PAGES) still bounds the WAL.
        log.warning("state.checkpoint_failed {reason}", {
          event: "state.checkpoint_failed",
          database: this.#databasePath,
          reason: errorMessage(error),
        });
      },
    ).finally(() => this.#checkpointing = false);
  }

  /** How many fsyncs have finished (tests and benchmarks count them). */
  syncs = 0;

  readonly #beforeFlush: (() => void)[] = [];

  /** Runs `write` at the start of every `flush()`: what it commits is covered by that flush. */
  beforeFlush(write: () => void): void {
    this.#beforeFlush.push(write);
  }

  /** Resolves once every commit counted before this call is on disk. */
  async flush(): Promise<void> {
    for (const write of this.#beforeFlush) write();
    const target = this.#committed;
    while (this.#synced < target) {
      // One fsync at a time; commits made while it runs wait for the next one.
      this.#running ??= this.#syncOnce().finally(() => this.#running = null);
      await this.#running;
    }
  }

  /**
   * Closes the WAL's descriptor (the database itself is closed by its owner); call it once no
   * `flush()` is pending (after the gateway drained).
   */
  close(): void {
    if (this.#fd !== null) closeSync(this.#fd);
    this.#fd = null;
  }

  async #syncOnce(): Promise<void> {
    // Only commits counted before the fsync starts are known to be covered by it.
    const covers = this.#committed;
    await this.#syncData(this.#walFd());
    this.syncs++;
    this.#synced = Math.max(this.#synced, covers);
  }

  /** The WAL's descriptor, reopened if the file was replaced (all connections closed meanwhile). */
  #walFd(): number {
    if (this.#fd !== null && fstatSync(this.#fd).ino === statSync(this.#walPath).ino) {
      return this.#fd;
    }
    this.close();
    this.#fd = openSync(this.#walPath, "r");
    return this.#fd;
  }
}
