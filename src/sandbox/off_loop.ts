/**
 * Runs a synchronous function of one of Coop's own modules on a worker thread, so that work
 * which grows with what a sandbox wrote — listing a workspace of 800,000 directories — never
 * stalls the event loop that serves everyone else (ATTACKS R12).
 *
 * Why a worker and not async file calls: Deno runs each async file call on its blocking thread
 * pool, which grows with concurrency and lingers, and `Deno.readDir` still hands the whole
 * listing to the event loop at once. A worker does the synchronous calls on its own thread and
 * sends back only the result. One long-lived worker is kept (node:worker_threads, which Deno
 * and Node both have), unreferenced while idle so it never keeps a process alive; starting one
 * costs about 50 ms, once.
 * @module
 */
import process from "node:process";
import { Worker } from "node:worker_threads";

/**
 * How many scans may run at once (the machine's cores are for the sandboxes too). One: each worker
 * is a whole V8 isolate, ~18 MB of the gateway's RSS whether it scans or not (docs/performance.md,
 * session 12), and scans of large workspaces are rare next to turns; they queue behind each other.
 */
const POOL_SIZE = 1;

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

interface Slot {
  worker: Worker;
  pending: Map<number, Pending>;
}

/** The error a task threw on the worker, with its name, message and `code`. */
export class OffLoopError extends Error {
  /** The `code` of the error the task threw, if it had one. */
  readonly code?: string;
  constructor(name: string, message: string, code?: string) {
    super(message);
    this.name = name;
    this.code = code;
  }
}

/** True when running as JavaScript compiled from these sources (the npm package, under Node). */
const COMPILED = import.meta.url.endsWith(".js");

/** `url` as the module this build has: the `.js` file beside a `.ts` name once compiled. */
function moduleOf(url: URL): string {
  return COMPILED ? url.href.replace(/\.ts$/, ".js") : url.href;
}

const slots: Slot[] = [];
let nextId = 0;

/**
 * The runtime flags a worker inherits, less `--input-type`: Node refuses to start a worker with
 * it ("can only be used with string input"), and a script run as `node --input-type=module -e`
 * would then lose every workspace scan. Deno has no such flags (an empty list).
 */
function workerExecArgv(): string[] {
  const flags: string[] = [];
  const given = process.execArgv;
  for (let i = 0; i < given.length; i++) {
    if (given[i] === "--input-type") i++; // and its value
    else if (!given[i].startsWith("--input-type=")) flags.push(given[i]);
  }
  return flags;
}

function startSlot(): Slot {
  const worker = new Worker(new URL(moduleOf(new URL("./off_loop_worker.ts", import.meta.url))), {
    execArgv: workerExecArgv(),
  });
  const slot: Slot = { worker, pending: new Map() };
  worker.on("message", (m: { id: number; ok: boolean; value?: unknown; error?: OffLoopError }) => {
    const job = slot.pending.get(m.id);
    if (!job) return;
    slot.pending.delete(m.id);
    if (slot.pending.size === 0) worker.unref();
    if (m.ok) job.resolve(m.value);
    else job.reject(new OffLoopError(m.error!.name, m.error!.message, m.error!.code));
  });
  const fail = (reason: string) => {
    slots.splice(slots.indexOf(slot), 1);
    for (const job of slot.pending.values()) {
      job.reject(new OffLoopError("OffLoopError", `the scan worker stopped: ${reason}`));
    }
    slot.pending.clear();
  };
  worker.on("error", (error: Error) => fail(error.message));
  worker.on("exit", (code: number) => slots.includes(slot) && fail(`exit code ${code}`));
  worker.unref();
  slots.push(slot);
  return slot;
}

function pickSlot(): Slot {
  // All at once, on first use: a pool that grows later would look like a leak of threads and
  // descriptors to whoever counts them after warming up (tests/sandbox/lifecycle_test.ts).
  while (slots.length < POOL_SIZE) startSlot();
  return slots.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
}

/**
 * Calls the exported function `name` of `module` (one of Coop's own) with `args` on a worker
 * thread and resolves to its result. Arguments and result are structured-cloned.
 *
 * @example
 * ```ts
 * const paths = await runOffLoop<string[]>(
 *   new URL("./protected_paths.ts", import.meta.url), "protectedPathsIn", ["/ws", [".git"]],
 * );
 * ```
 */
export function runOffLoop<T>(module: URL, name: string, args: unknown[]): Promise<T> {
  return dispatch<T>(pickSlot(), module, name, args);
}

/**
 * Starts the workers now and has each import `module` and call its export `name` (without
 * arguments), so that the first real task — which may come when a sandbox made a workspace
 * huge — pays for neither the worker's start nor the module's load (ATTACKS R12).
 */
export async function warmOffLoop(module: URL, name: string): Promise<void> {
  pickSlot();
  await Promise.all(slots.map((slot) => dispatch(slot, module, name, [])));
}

/**
 * Ends every worker that has no task, so that an idle process gives back the memory of its
 * isolate (~18 MB); the next task starts a worker again (about 50 ms, off the event loop).
 * Resolves to how many were ended.
 */
export async function retireIdleOffLoopWorkers(): Promise<number> {
  const idle = slots.filter((slot) => slot.pending.size === 0);
  for (const slot of idle) slots.splice(slots.indexOf(slot), 1);
  await Promise.all(idle.map((slot) => slot.worker.terminate()));
  return idle.length;
}

function dispatch<T>(slot: Slot, module: URL, name: string, args: unknown[]): Promise<T> {
  const id = nextId++;
  return new Promise<T>((resolve, reject) => {
    slot.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
    slot.worker.ref();
    slot.worker.postMessage({ id, module: moduleOf(module), name, args });
  });
}
