/**
 * Gives memory back when `coop start` comes to rest after work. A personal gateway is idle most of
 * the time, but after a burst of turns V8's heap, glibc's arenas and the off-loop worker keep what
 * the burst needed (≈ 200 → 105 MB in docs/performance.md "When the load stops"). Once a second it
 * samples the process's CPU time and resident size; after a second of activity (or growth) followed
 * by a second of rest it runs a full GC, `malloc_trim` and retires the idle off-loop worker — once
 * per burst, never while turns keep it busy. While busy, each busy second hands malloc's free pages
 * back (`malloc_trim` on the runtime's thread pool, never two at once): under sustained load the
 * arenas otherwise stay at the high-water mark of the busiest moment (docs/performance.md,
 * "Session 17"). After the first busy seconds it drops, once, the runtime's pages that warm-up
 * touched (`releaseWarmUpPages`).
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { retireIdleOffLoopWorkers } from "../sandbox/off_loop.ts";
import {
  collectGarbage,
  cpuTimeMs,
  releaseProgramPages,
  trimMallocHeap,
} from "./process_memory.ts";
import { residentBytes } from "../sandbox/resident_memory.ts";

const log = getLogger(["coop", "memory"]);

/** What one release did. */
export interface MemoryReleaseReport {
  /** Resident bytes before and after (undefined without `/proc`). */
  rssBefore?: number;
  rssAfter?: number;
  /** Whether each step could run here. */
  collected: boolean;
  trimmed: boolean;
  /** Off-loop workers ended. */
  workersRetired: number;
  durationMs: number;
}

/** Tunables and seams for tests; the defaults are what `coop start` uses. */
export interface IdleMemoryReleaseOptions {
  /** How often the process is sampled (ms). */
  sampleEveryMs?: number;
  /** CPU time within one sample that counts as activity (ms). */
  busyCpuMs?: number;
  /** CPU time within one sample that counts as rest (ms). */
  restCpuMs?: number;
  /** Growth of the resident set since the last release that counts as activity (bytes). */
  growthBytes?: number;
  readCpuMs?: () => number | undefined;
  readRss?: () => number | undefined;
  release?: () => Promise<MemoryReleaseReport>;
  /** Gives malloc's free pages back while busy (`malloc_trim`); false where it cannot. */
  trim?: () => Promise<boolean>;
  /** Busy samples after which `releaseWarmUp` runs, once. */
  warmUpBusySamples?: number;
  releaseWarmUp?: () => Promise<void>;
}

const MIB = 1024 * 1024;

/** A full GC, `malloc_trim(0)` and the idle off-loop workers retired, measured. */
export async function releaseMemory(): Promise<MemoryReleaseReport> {
  const start = performance.now();
  const rssBefore = residentBytes();
  const workersRetired = await retireIdleOffLoopWorkers();
  const collected = await collectGarbage();
  const trimmed = await trimMallocHeap();
  return {
    rssBefore,
    rssAfter: residentBytes(),
    collected,
    trimmed,
    workersRetired,
    durationMs: performance.now() - start,
  };
}

/**
 * Once start-up is done (modules loaded, config read, channels listening): drops the runtime
 * binary's pages that start-up touched from the resident set (`releaseProgramPages`), so what
 * a long-running gateway counts is what it uses. Measured (docs/performance.md, session 20):
 * 7 – 17 MB less resident after 10,000 turns under load; a failure only logs.
 */
export function releaseStartupPages(): Promise<void> {
  return releaseProgramPagesLogged("memory.startup_release");
}

/**
 * The same once the first turns are done: the sandbox self-test, the first sandbox of each
 * kind, and V8 compiling the hot paths run once, from pages of the binary that steady work
 * does not touch again (docs/performance.md, session 21).
 */
export function releaseWarmUpPages(): Promise<void> {
  return releaseProgramPagesLogged("memory.warm_up_release");
}

async function releaseProgramPagesLogged(event: string): Promise<void> {
  const start = performance.now();
  try {
    const releasedKb = await releaseProgramPages();
    if (releasedKb === undefined) {
      log.info(`${event}: not available here (no /proc, glibc or FFI)`, { event });
      return;
    }
    log.info(`${event}: {releasedMb} MB of the runtime's pages in {durationMs} ms`, {
      event,
      releasedMb: Math.round(releasedKb / 102.4) / 10,
      durationMs: Math.round(performance.now() - start),
    });
  } catch (error) {
    log.warn(`${event} failed: {error}`, { event, error: String(error) });
  }
}

/** Samples the process and releases memory when it comes to rest after activity. */
export class IdleMemoryRelease {
  readonly #every: number;
  readonly #busy: number;
  readonly #rest: number;
  readonly #growth: number;
  readonly #readCpu: () => number | undefined;
  readonly #readRss: () => number | undefined;
  readonly #release: () => Promise<MemoryReleaseReport>;
  readonly #trim: () => Promise<boolean>;
  readonly #releaseWarmUp: () => Promise<void>;
  /** Busy samples still to come before the warm-up release; it has run once this is 0. */
  #warmUpLeft: number;
  #timer: ReturnType<typeof setInterval> | undefined;
  #lastCpu: number | undefined;
  #baseline: number | undefined;
  #active = false;
  #releasing: Promise<void> | undefined;
  #trimming: Promise<void> | undefined;

  constructor(options: IdleMemoryReleaseOptions = {}) {
    this.#every = options.sampleEveryMs ?? 1000;
    this.#busy = options.busyCpuMs ?? 30;
    this.#rest = options.restCpuMs ?? 15;
    this.#growth = options.growthBytes ?? 16 * MIB;
    this.#readCpu = options.readCpuMs ?? cpuTimeMs;
    this.#readRss = options.readRss ?? residentBytes;
    this.#release = options.release ?? releaseMemory;
    this.#trim = options.trim ?? trimMallocHeap;
    this.#releaseWarmUp = options.releaseWarmUp ?? releaseWarmUpPages;
    this.#warmUpLeft = options.warmUpBusySamples ?? 3;
  }

  /** Starts sampling; the timer never keeps the process alive. */
  start(): void {
    if (this.#timer !== undefined) return;
    this.#lastCpu = this.#readCpu();
    this.#baseline = this.#readRss();
    this.#timer = setInterval(() => this.sample(), this.#every);
    this.#timer.unref();
  }

  /** Stops sampling and waits for a release or a trim in progress. */
  async stop(): Promise<void> {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#releasing;
    await this.#trimming;
  }

  /** Resolves once no trim started by a busy second is running (tests). */
  async trimsSettled(): Promise<void> {
    await this.#trimming;
  }

  /** One sample (the timer's tick; tests call it directly). Resolves when a release it began ends. */
  sample(): Promise<void> {
    if (this.#releasing) return this.#releasing;
    const cpu = this.#readCpu();
    const rss = this.#readRss();
    const used = cpu !== undefined && this.#lastCpu !== undefined ? cpu - this.#lastCpu : 0;
    this.#lastCpu = cpu;
    this.#baseline ??= rss;
    const grown = rss !== undefined && this.#baseline !== undefined &&
      rss > this.#baseline + this.#growth;
    if (used >= this.#busy) {
      this.#active = true;
      this.#trimWhileBusy();
      // madvise takes a few ms on the loop, once; it logs its own failure.
      if (this.#warmUpLeft > 0 && --this.#warmUpLeft === 0) return this.#releaseWarmUp();
      return Promise.resolve();
    }
    if (grown) this.#active = true;
    if (!this.#active || used > this.#rest) return Promise.resolve();
    this.#releasing = this.#releaseNow().finally(() => this.#releasing = undefined);
    return this.#releasing;
  }

  /** Starts a `malloc_trim` off the event loop unless one still runs; a failure only logs. */
  #trimWhileBusy(): void {
    if (this.#trimming) return;
    this.#trimming = this.#trim().then(
      () => {},
      (error) =>
        log.debug("memory.trim failed: {error}", { event: "memory.trim", error: String(error) }),
    ).finally(() => this.#trimming = undefined);
  }

  async #releaseNow(): Promise<void> {
    this.#active = false;
    try {
      const report = await this.#release();
      this.#baseline = report.rssAfter ?? this.#readRss();
      log.info("memory.release: {rssBefore} → {rssAfter} MB in {durationMs} ms", {
        event: "memory.release",
        rssBefore: megabytes(report.rssBefore),
        rssAfter: megabytes(report.rssAfter),
        durationMs: Math.round(report.durationMs),
        collected: report.collected,
        trimmed: report.trimmed,
        workersRetired: report.workersRetired,
      });
    } catch (error) {
      log.warn("memory.release failed: {error}", { event: "memory.release", error: String(error) });
    }
    // The release's own CPU time is not activity.
    this.#lastCpu = this.#readCpu();
  }
}

function megabytes(bytes: number | undefined): number | undefined {
  return bytes === undefined ? undefined : Math.round(bytes / MIB * 10) / 10;
}
