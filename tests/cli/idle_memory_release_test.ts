/**
 * `coop start` gives memory back once it rests after work: the detector (fake clock readings),
 * and each real step on this process (full GC, `malloc_trim`, the off-loop worker retired and
 * started again on the next task).
 */
import process from "node:process";
import { assert, assertEquals } from "../assert.ts";
import {
  IdleMemoryRelease,
  type MemoryReleaseReport,
  releaseMemory,
} from "../../src/cli/idle_memory_release.ts";
import { cpuTimeMs } from "../../src/cli/process_memory.ts";
import { residentBytes } from "../../src/sandbox/resident_memory.ts";
import { runOffLoop } from "../../src/sandbox/off_loop.ts";

const MIB = 1024 * 1024;

/** A detector over scripted readings; `cpu`/`rss` are what the next sample reads. */
function scripted(options: { releaseCpuMs?: number; fail?: boolean } = {}) {
  const state = { cpu: 0, rss: 100 * MIB, releases: 0 };
  const detector = new IdleMemoryRelease({
    readCpuMs: () => state.cpu,
    readRss: () => state.rss,
    trim: () => Promise.resolve(true), // the busy-time trim has tests of its own below
    releaseWarmUp: () => Promise.resolve(), // so has the warm-up release
    release: (): Promise<MemoryReleaseReport> => {
      state.releases++;
      state.cpu += options.releaseCpuMs ?? 0; // a GC costs CPU time of its own
      if (options.fail) return Promise.reject(new Error("inspector gone"));
      const before = state.rss;
      state.rss = 100 * MIB;
      return Promise.resolve({
        rssBefore: before,
        rssAfter: state.rss,
        collected: true,
        trimmed: true,
        workersRetired: 0,
        durationMs: 1,
      });
    },
  });
  detector.start(); // reads the starting CPU and RSS; the interval is never awaited here
  const tick = async (cpuMs: number, rss = state.rss) => {
    state.cpu += cpuMs;
    state.rss = rss;
    await detector.sample();
  };
  return { state, tick, stop: () => detector.stop() };
}

Deno.test("idle release: activity, then a second of rest: one release, not repeated", async () => {
  const { state, tick, stop } = scripted();
  try {
    await tick(400, 180 * MIB); // a burst of turns
    assertEquals(state.releases, 0, "no release while busy");
    await tick(2); // rest
    assertEquals(state.releases, 1);
    for (let i = 0; i < 5; i++) await tick(2);
    assertEquals(state.releases, 1, "resting on does not release again");
    await tick(100);
    await tick(0);
    assertEquals(state.releases, 2, "the next burst is released too");
  } finally {
    await stop();
  }
});

Deno.test("idle release: never while every second is busy, never without activity", async () => {
  const { state, tick, stop } = scripted();
  try {
    for (let i = 0; i < 5; i++) await tick(5);
    assertEquals(state.releases, 0, "a process that only rests has nothing to give back");
    for (let i = 0; i < 10; i++) await tick(300);
    assertEquals(state.releases, 0, "a process under load is never paused for a full GC");
    await tick(20); // between rest and activity: neither
    assertEquals(state.releases, 0);
    await tick(1);
    assertEquals(state.releases, 1);
  } finally {
    await stop();
  }
});

Deno.test("while busy: each busy second trims malloc off the loop, never two trims at once", async () => {
  let trims = 0, running = 0, most = 0;
  let finish = () => {};
  const state = { cpu: 0 };
  const detector = new IdleMemoryRelease({
    readCpuMs: () => state.cpu,
    readRss: () => 100 * MIB,
    release: () => Promise.reject(new Error("no release expected while busy")),
    releaseWarmUp: () => Promise.resolve(),
    trim: () => {
      trims++;
      most = Math.max(most, ++running);
      return new Promise<boolean>((resolve) => finish = () => resolve(true))
        .finally(() => running--);
    },
  });
  detector.start();
  try {
    for (const cpu of [5, 20]) { // rest, then between rest and activity: no trim
      state.cpu += cpu;
      await detector.sample();
    }
    assertEquals(trims, 0, "a resting process is not trimmed");
    state.cpu += 300;
    await detector.sample();
    assertEquals(trims, 1, "a busy second starts a trim");
    state.cpu += 300;
    await detector.sample();
    assertEquals(trims, 1, "while one runs, a busy second starts none");
    finish();
    await detector.trimsSettled();
    state.cpu += 300;
    await detector.sample();
    assertEquals(trims, 2, "the next busy second trims again");
    finish();
    await detector.trimsSettled();
    assertEquals(most, 1);
  } finally {
    finish();
    await detector.stop();
  }
});

Deno.test("while busy: a trim that fails is logged, and sampling goes on", async () => {
  let trims = 0;
  const state = { cpu: 0 };
  const detector = new IdleMemoryRelease({
    readCpuMs: () => state.cpu,
    readRss: () => 100 * MIB,
    releaseWarmUp: () => Promise.resolve(),
    trim: () => {
      trims++;
      return Promise.reject(new Error("no libc"));
    },
  });
  detector.start();
  try {
    for (let i = 0; i < 3; i++) {
      state.cpu += 300;
      await detector.sample();
      await detector.trimsSettled();
    }
    assertEquals(trims, 3);
  } finally {
    await detector.stop();
  }
});

Deno.test("warm-up: the runtime's pages are released once, after the first busy seconds", async () => {
  let warmUps = 0;
  const state = { cpu: 0 };
  const detector = new IdleMemoryRelease({
    readCpuMs: () => state.cpu,
    readRss: () => 100 * MIB,
    release: () => Promise.reject(new Error("no idle release expected")),
    trim: () => Promise.resolve(true),
    warmUpBusySamples: 3,
    releaseWarmUp: () => {
      warmUps++;
      return Promise.resolve();
    },
  });
  detector.start();
  try {
    // Only busy seconds count towards warm-up, whether or not in a row.
    for (const cpu of [300, 20, 300]) {
      state.cpu += cpu;
      await detector.sample();
    }
    assertEquals(warmUps, 0, "two busy seconds are not yet warm");
    state.cpu += 300;
    await detector.sample();
    assertEquals(warmUps, 1, "the third busy second releases the warm-up pages");
    for (let i = 0; i < 5; i++) {
      state.cpu += 300;
      await detector.sample();
    }
    assertEquals(warmUps, 1, "never again, however long the work goes on");
  } finally {
    await detector.trimsSettled();
    await detector.stop();
  }
});

Deno.test("idle release: slow growth without much CPU counts as activity", async () => {
  const { state, tick, stop } = scripted();
  try {
    await tick(5, 110 * MIB);
    await tick(5, 110 * MIB);
    assertEquals(state.releases, 0, "10 MiB over the start is not enough");
    await tick(5, 120 * MIB); // > 16 MiB over the baseline, at rest
    assertEquals(state.releases, 1);
    await tick(5, 100 * MIB);
    await tick(5, 100 * MIB);
    assertEquals(state.releases, 1, "the baseline is what the release left");
  } finally {
    await stop();
  }
});

Deno.test("idle release: its own GC's CPU time is not taken for new activity", async () => {
  const { state, tick, stop } = scripted({ releaseCpuMs: 250 });
  try {
    await tick(200);
    await tick(0);
    assertEquals(state.releases, 1);
    await tick(0);
    await tick(0);
    assertEquals(state.releases, 1);
  } finally {
    await stop();
  }
});

Deno.test("idle release: a failed release is logged and the next burst tries again", async () => {
  const { state, tick, stop } = scripted({ fail: true });
  try {
    await tick(200);
    await tick(0);
    await tick(200);
    await tick(0);
    assertEquals(state.releases, 2);
  } finally {
    await stop();
  }
});

Deno.test("process readings: resident size and CPU time of this process", () => {
  const rss = residentBytes();
  assert(rss !== undefined && rss > 10 * MIB, `RSS ${rss}`);
  // Spin until the runtime's own count says 150 ms of CPU were used — not 150 ms of wall time,
  // which on a loaded machine is far less CPU — then /proc must agree (to its 10 ms ticks).
  const before = cpuTimeMs()!;
  const usage = process.cpuUsage();
  let x = 0;
  while (process.cpuUsage(usage).user + process.cpuUsage(usage).system < 150_000) {
    for (let i = 0; i < 10_000; i++) x += Math.sqrt(x + 1);
  }
  assert(x > 0);
  assert(cpuTimeMs()! - before >= 130, `CPU time went from ${before} to ${cpuTimeMs()}`);
});

Deno.test("releaseMemory: full GC, malloc_trim, and the idle off-loop worker ended and restarted", async () => {
  const module = new URL("../../src/sandbox/protected_paths.ts", import.meta.url);
  const dir = await Deno.makeTempDir();
  try {
    await runOffLoop(module, "protectedPathsIn", [dir, [".git"]]); // the worker now exists
    const workerThreads = () =>
      [...Deno.readDirSync("/proc/self/task")].filter((task) => {
        try {
          return Deno.readTextFileSync(`/proc/self/task/${task.name}/comm`).startsWith("worker-");
        } catch {
          return false; // exited while listed
        }
      }).length;
    assertEquals(workerThreads(), 1, "the off-loop worker's thread runs");
    const report = await releaseMemory();
    assert(report.collected, "the inspector's full GC ran");
    assert(report.trimmed, "glibc's malloc_trim ran (this runtime links glibc)");
    assertEquals(report.workersRetired, 1);
    assert(report.rssBefore! > 0 && report.rssAfter! > 0);
    // Its thread ends once the isolate is torn down, which may finish just after `terminate()`.
    const deadline = Date.now() + 5000;
    while (workerThreads() > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assertEquals(workerThreads(), 0, "the worker's thread is gone");
    // The next task starts a worker again.
    assertEquals(await runOffLoop(module, "protectedPathsIn", [dir, [".git"]]), []);
    assertEquals((await releaseMemory()).workersRetired, 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
