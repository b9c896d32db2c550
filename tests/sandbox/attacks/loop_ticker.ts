/**
 * A 5 ms interval timer that records how late each of its ticks came, on the event loop that
 * imports it or — started with `controlTicker` — on a worker thread of its own that does
 * nothing else and samples, at each of its ticks, what the loop's thread is doing (running,
 * or asleep in which kernel function): ATTACKS R12's test tells from them a stall of ours (the
 * loop running our code, or blocked in a system call) from the machine's load.
 * @module
 */
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";

/** The timer's interval. */
export const TICK_MS = 5;

/** One tick: when it came and how late, on the thread that ticked. */
export interface Tick {
  /** When it ran, in ms since the epoch (comparable across threads). */
  at: number;
  /** How late it ran, less the time the thread waited for a CPU in that interval. */
  late: number;
  /** The thread's time on a CPU since the previous tick (null where not reported). */
  cpu: number | null;
  /** The thread's time runnable but waiting for a CPU since the previous tick (null likewise). */
  waiting: number | null;
}

/**
 * The calling thread's scheduler counters in ms — on a CPU, runnable but waiting — from
 * `/proc/thread-self/schedstat`, read synchronously so by the thread itself; null where the
 * kernel does not report them.
 */
export function threadTimes(): { cpu: number; waiting: number } | null {
  try {
    const [cpu, waiting] = Deno.readTextFileSync("/proc/thread-self/schedstat").split(" ");
    return { cpu: Number(cpu) / 1e6, waiting: Number(waiting) / 1e6 };
  } catch {
    return null;
  }
}

function now(): number {
  return performance.timeOrigin + performance.now();
}

/** Starts ticking on this thread's event loop; the returned function stops it and hands the ticks. */
export function startTicker(): () => Tick[] {
  const ticks: Tick[] = [];
  let expected = now() + TICK_MS;
  let last = threadTimes();
  // A tick, and on stopping one more: a loop blocked from before its first tick to the end
  // of the watch would otherwise leave no late tick at all.
  const tick = () => {
    const at = now();
    const times = threadTimes();
    const cpu = last && times ? times.cpu - last.cpu : null;
    const waiting = last && times ? times.waiting - last.waiting : null;
    ticks.push({ at, late: Math.max(0, at - expected - (waiting ?? 0)), cpu, waiting });
    expected = at + TICK_MS;
    last = times;
  };
  const timer = setInterval(tick, TICK_MS);
  return () => {
    clearInterval(timer);
    tick();
    return ticks;
  };
}

/** What the watched thread was doing at one of the control's ticks. */
export interface Sample {
  at: number;
  /** Its state (`R` running or runnable, `S` sleeping, `D` uninterruptible). */
  state: string;
  /** The kernel function it sleeps in (`/proc/…/wchan`, `do_epoll_wait` when idle), "0" when running. */
  wchan: string;
  /**
   * While it sleeps outside epoll, each other thread's total time runnable but waiting for a
   * CPU, by thread id: a sleep that waits on another thread of ours (a futex) is the machine's
   * load for as long as that thread waits for a CPU.
   */
  othersWaiting?: Record<string, number>;
}

/** This thread's id (`/proc/thread-self` names it), for the control to watch; null if unknown. */
export function threadId(): number | null {
  try {
    return Number(Deno.readLinkSync("/proc/thread-self").split("/").pop());
  } catch {
    return null;
  }
}

function sample(tid: number): Sample | null {
  try {
    const stat = Deno.readTextFileSync(`/proc/self/task/${tid}/stat`);
    const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
    const wchan = Deno.readTextFileSync(`/proc/self/task/${tid}/wchan`);
    const at = now();
    if (state === "R" || /epoll/.test(wchan)) return { at, state, wchan };
    const othersWaiting: Record<string, number> = {};
    for (const task of Deno.readDirSync("/proc/self/task")) {
      if (task.name === String(tid)) continue;
      try {
        const times = Deno.readTextFileSync(`/proc/self/task/${task.name}/schedstat`);
        othersWaiting[task.name] = Number(times.split(" ")[1]) / 1e6;
      } catch {
        // gone meanwhile
      }
    }
    return { at, state, wchan, othersWaiting };
  } catch {
    return null;
  }
}

/**
 * Starts the same ticker on a worker thread of its own, and resolves once it ticks; the
 * returned function stops it and resolves to its ticks. Given the id of a thread of this
 * process, it also samples at each tick what that thread is doing.
 */
export async function controlTicker(
  watch: number | null = null,
): Promise<() => Promise<{ ticks: Tick[]; samples: Sample[] }>> {
  const worker = new Worker(new URL(import.meta.url), {
    workerData: { loopTicker: true, watch },
  });
  await new Promise<void>((resolve, reject) => {
    worker.once("message", () => resolve());
    worker.once("error", reject);
  });
  return async () => {
    const result = new Promise<{ ticks: Tick[]; samples: Sample[] }>((resolve, reject) => {
      worker.once("message", resolve);
      worker.once("error", reject);
    });
    worker.postMessage("stop");
    const value = await result;
    await worker.terminate();
    return value;
  };
}

if (!isMainThread && (workerData as { loopTicker?: boolean })?.loopTicker) {
  const watch = (workerData as { watch: number | null }).watch;
  const samples: Sample[] = [];
  const sampler = watch === null ? undefined : setInterval(() => {
    const seen = sample(watch);
    if (seen) samples.push(seen);
  }, TICK_MS);
  const stop = startTicker();
  parentPort!.once("message", () => {
    clearInterval(sampler);
    parentPort!.postMessage({ ticks: stop(), samples });
  });
  parentPort!.postMessage("ticking");
}
