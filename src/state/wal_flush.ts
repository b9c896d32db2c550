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

  constructor(databasePath: string, options: { syncData?: SyncData } = {}) {
    this.#walPath = `${databasePath}-wal`;
    this.#syncData = options.syncData ?? syncData;
  }

  /** Counts a commit made without an fsync; the next `flush()` waits for one that covers it. */
  committed(): void {
    this.#committed++;
  }

  /** How many fsyncs have finished (tests and benchmarks count them). */
  syncs = 0;

  /** Resolves once every commit counted before this call is on disk. */
  async flush(): Promise<void> {
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
