/**
 * The gateway's live session sandboxes (`lifetime = "session"`): one per chat session, made on
 * its first command and keyed by the session and the policy it was made with (a config reload
 * that changes the policy stops the old one and makes a new one). A session sandbox ends on
 * `/clear`, after its idle timeout, on gateway shutdown or drain, and on `coop sandbox stop`
 * (which ends its init; the registry notices the end). Each live one has a file under
 * `<state_dir>/sandboxes/` for the CLI (live_sandbox_files.ts). However it ends, the hooks of
 * its latest command run once it is gone: the CPU time its background processes used is
 * charged (`onCpuSeconds`), and the workspace is scanned once more (`afterEnd`).
 *
 * A session sandbox keeps read-only the protected paths (`.git`, …) that existed when it
 * started; a command after a new one appeared is refused by it (`SessionOutdatedError`), and runs
 * in a new sandbox instead, the old one stopped first.
 *
 * One person's live sandboxes are capped (`maxPerPerson`, the gateway passes their turn cap):
 * a live sandbox outlives its turn, and a client that names a fresh session on every request
 * would otherwise leave one more running each time, until its idle timeout. Past the cap, the
 * one they used least recently, and that runs no command, is stopped first.
 *
 * Where the session's cgroup counts CPU, what runs in the background is charged while it runs
 * too: after each command, and every `chargeEveryMs` while no command runs. Charged only at the
 * end, a person could keep a CPU-bound job running behind a session kept alive by chatting,
 * and every turn would pass the `sandbox_seconds_per_day` budget at the door meanwhile.
 * @module
 */
import { randomBytes } from "node:crypto";
import { getLogger } from "@logtape/logtape";
import { errorMessage } from "../errors/coop_error.ts";
import { SerialQueue } from "../sandbox/serial_queue.ts";
import { abortableWait } from "../sandbox/abortable_wait.ts";
import {
  type ExecResult,
  type SandboxPolicyInput,
  type SessionExecOptions,
  SessionOutdatedError,
  type SessionSandbox,
  startSession,
} from "../sandbox/mod.ts";
import { listLiveSandbox, processStartTime, unlistLiveSandbox } from "./live_sandbox_files.ts";
import {
  CHARGE_EVERY_MS,
  chargeBackground,
  type MeteredSession,
  type SessionEndHooks,
  settleSession,
} from "./session_metering.ts";

export { CHARGE_EVERY_MS, type SessionEndHooks } from "./session_metering.ts";

const log = getLogger(["coop", "tools", "session"]);

/** Which chat session a command belongs to. */
export interface SessionKey {
  channel: string;
  user: string;
  session: string;
}

/** Starts a session sandbox (tests may inject one). */
export type SessionStarter = (policy: SandboxPolicyInput) => Promise<SessionSandbox>;

/** How a registry starts its sandboxes and meters them (tests change both). */
export interface SessionSandboxesOptions {
  /** Starts a session sandbox; default `startSession(policy)`. */
  start?: SessionStarter;
  /** How often an idle live sandbox's background CPU is charged; default `CHARGE_EVERY_MS`. */
  chargeEveryMs?: number;
  /**
   * How many live sandboxes one person (`SessionKey.user`) may have; default
   * `DEFAULT_MAX_PER_PERSON`. Asked each time one starts, so a reload's new value applies.
   */
  maxPerPerson?: (user: string) => number;
}

/** Live sandboxes per person without `maxPerPerson`: `[agent] max_concurrent_turns_per_user`'s default. */
export const DEFAULT_MAX_PER_PERSON = 4;

interface Entry extends MeteredSession {
  /** The overlay upper directory it mounts, if any. */
  upper?: string;
  policyKey: string;
  sandbox: Promise<SessionSandbox>;
  idle?: ReturnType<typeof setTimeout>;
  /** When a command last started in it (`performance.now()`): the least recent goes first. */
  lastUsed: number;
  /** Charges the background CPU every `chargeEveryMs` while it lives. */
  meter?: ReturnType<typeof setInterval>;
  /** Settles once the sandbox has ended and its hooks have run. */
  finished: Promise<void>;
}

/** The overlay upper directory a policy mounts read-write, if any. */
export function upperOf(policy: SandboxPolicyInput): string | undefined {
  const rootfs = policy.rootfs;
  return rootfs && "upper" in rootfs ? rootfs.upper : undefined;
}

function keyOf(key: SessionKey): string {
  return JSON.stringify([key.channel, key.user, key.session]);
}

/** Live session sandboxes of one gateway, by chat session. */
export class SessionSandboxes {
  readonly #entries = new Map<string, Entry>();
  /** Stops under way, by session key: a second stop() of one waits for the first. */
  readonly #stopping = new Map<string, Promise<void>>();
  /** One person's sandboxes are found or started one at a time (see `#entryFor`). */
  readonly #starts = new SerialQueue();
  readonly #stateDir: string;
  readonly #start: SessionStarter;
  readonly #chargeEveryMs: number;
  readonly #maxPerPerson: (user: string) => number;

  /** `stateDir` receives the files `coop sandbox ps` reads. */
  constructor(stateDir: string, options: SessionSandboxesOptions = {}) {
    this.#stateDir = stateDir;
    this.#start = options.start ?? ((policy) => startSession(policy));
    this.#chargeEveryMs = options.chargeEveryMs ?? CHARGE_EVERY_MS;
    this.#maxPerPerson = options.maxPerPerson ?? (() => DEFAULT_MAX_PER_PERSON);
  }

  /** How many session sandboxes are live (or starting). */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Runs `argv` in `key`'s live sandbox under `policy`, starting it first when there is none
   * (or its policy changed); `idleTimeoutMs` of no command afterwards stops it.
   */
  async exec(
    key: SessionKey,
    policy: SandboxPolicyInput,
    argv: readonly string[],
    options: SessionExecOptions & { idleTimeoutMs: number } & SessionEndHooks,
  ): Promise<ExecResult> {
    try {
      return await this.#execIn(key, policy, argv, options);
    } catch (error) {
      if (!(error instanceof SessionOutdatedError)) throw error;
      // A protected path appeared since it started (a repository cloned by the last command):
      // a new sandbox keeps it read-only, so the command runs in one; what ran in the
      // background of the old one ends with it.
      log.info(
        "sandbox.session.restarted {user}: {paths} appeared; a new sandbox keeps them read-only",
        {
          event: "sandbox.session.restarted",
          user: key.user,
          session: `${key.channel}:${key.session}`,
          paths: error.paths,
        },
      );
      await this.stop(key);
      return await this.#execIn(key, policy, argv, options);
    }
  }

  async #execIn(
    key: SessionKey,
    policy: SandboxPolicyInput,
    argv: readonly string[],
    options: SessionExecOptions & { idleTimeoutMs: number } & SessionEndHooks,
  ): Promise<ExecResult> {
    const entry = await this.#entryFor(key, policy, options.signal);
    clearTimeout(entry.idle);
    entry.lastUsed = performance.now();
    // The latest turn's meter pays for what the session runs in the background until it ends.
    entry.hooks = {
      onCpuSeconds: options.onCpuSeconds,
      afterEnd: options.afterEnd,
      budgetSpent: options.budgetSpent,
    };
    entry.running++;
    let live: SessionSandbox | undefined;
    try {
      // A cancel while it starts leaves at once; the sandbox starts on and idles for the next.
      live = await abortableWait(entry.sandbox, options.signal);
      return await live.exec(argv, options);
    } finally {
      entry.running--;
      if (live) this.#chargeBackground(entry, live);
      if (entry.running === 0 && this.#entries.get(keyOf(key)) === entry) {
        entry.idle = setTimeout(() => {
          log.info("sandbox.session.idle {user} {id}: stopped after {idleMs} ms unused", {
            user: key.user,
            id: entry.id,
            idleMs: options.idleTimeoutMs,
          });
          void this.stop(key);
        }, options.idleTimeoutMs);
        Deno.unrefTimer?.(entry.idle as unknown as number);
      }
    }
  }

  /**
   * The live sandbox for `key`, started if need be; one person's calls take turns (two at once
   * each started one, and the one overwritten lived on unseen, holding its upper).
   */
  #entryFor(key: SessionKey, policy: SandboxPolicyInput, signal?: AbortSignal): Promise<Entry> {
    return this.#starts.after(key.user, () => this.#findOrStart(key, policy), signal);
  }

  async #findOrStart(key: SessionKey, policy: SandboxPolicyInput): Promise<Entry> {
    const k = keyOf(key);
    const policyKey = JSON.stringify(policy);
    const existing = this.#entries.get(k);
    if (existing) {
      const alive = await existing.sandbox.then((s) => s.alive, () => false);
      if (alive && existing.policyKey === policyKey) return existing;
      if (this.#entries.get(k) === existing) await this.stop(key);
      const again = this.#entries.get(k);
      if (again && again.policyKey === policyKey) return again;
    }
    // An upper layer is mounted by one sandbox at a time (overlayfs: two mounts of one upper
    // give undefined results): another session's live sandbox on it (the same person, in
    // another chat) is stopped first, background processes and all.
    const upper = upperOf(policy);
    for (const other of [...this.#entries.values()]) {
      if (upper !== undefined && other.upper === upper && keyOf(other.key) !== k) {
        log.info("sandbox.session.displaced {user} {id}: its upper layer is needed by {session}", {
          user: other.key.user,
          id: other.id,
          session: `${key.channel}:${key.session}`,
        });
        await this.stop(other.key);
      }
    }
    await this.#makeRoomFor(key);
    const id = randomBytes(4).toString("hex");
    const sandbox = this.#start(policy);
    const entry: Entry = {
      id,
      key,
      upper,
      policyKey,
      sandbox,
      running: 0,
      lastUsed: performance.now(),
      hooks: {},
      chargedMs: 0,
      finished: Promise.resolve(),
    };
    this.#entries.set(k, entry);
    entry.finished = sandbox.then((live) => {
      listLiveSandbox(this.#stateDir, {
        id,
        pid: live.pid,
        pidStart: processStartTime(live.pid) ?? "",
        user: key.user,
        session: `${key.channel}:${key.session}`,
        startedAt: new Date(live.startedAt).toISOString(),
        gatewayPid: Deno.pid,
      });
      log.info("sandbox.session.started {user} {id} pid={pid}", {
        user: key.user,
        id,
        pid: live.pid,
        channel: key.channel,
      });
      entry.meter = setInterval(() => this.#chargeBackground(entry, live), this.#chargeEveryMs);
      Deno.unrefTimer?.(entry.meter as unknown as number);
      // However it ends — stop(), `coop sandbox stop`, the init dying — it is forgotten, and
      // what it did since the last command is charged and scanned.
      return live.ended.then(async () => {
        unlistLiveSandbox(this.#stateDir, id);
        clearTimeout(entry.idle);
        clearInterval(entry.meter);
        if (this.#entries.get(k) === entry) this.#entries.delete(k);
        log.info("sandbox.session.ended {user} {id}", { user: key.user, id });
        await settleSession(entry, live);
      });
    }, () => {
      if (this.#entries.get(k) === entry) this.#entries.delete(k);
    }).catch((error) => {
      // Said here: stop() and the timers await this, and must not reject (it would end us).
      const [user, why] = [key.user, errorMessage(error)];
      log.error("sandbox.session.settle_failed {user} {id}: {error}", { user, id, error: why });
    });
    return entry;
  }

  /**
   * Stops `key.user`'s least recently used idle live sandboxes until one more fits their cap. One
   * that runs a command is never stopped: those are bounded by the person's turn cap already.
   */
  async #makeRoomFor(key: SessionKey): Promise<void> {
    const cap = Math.max(1, this.#maxPerPerson(key.user));
    const theirs = () =>
      [...this.#entries.values()].filter((e) =>
        e.key.user === key.user && keyOf(e.key) !== keyOf(key)
      );
    for (let live = theirs(); live.length >= cap; live = theirs()) {
      const idle = live.filter((e) => e.running === 0).sort((a, b) => a.lastUsed - b.lastUsed);
      if (idle.length === 0) return;
      log.info("sandbox.session.evicted {user} {id}: {count} live sandboxes, their cap is {cap}", {
        event: "sandbox.session.evicted",
        user: key.user,
        id: idle[0].id,
        count: live.length,
        cap,
        session: `${idle[0].key.channel}:${idle[0].key.session}`,
      });
      await this.stop(idle[0].key);
    }
  }

  /** Charges `entry`'s background CPU (session_metering.ts); stops it once the budget is spent. */
  #chargeBackground(entry: Entry, live: SessionSandbox): void {
    if (!chargeBackground(entry, live) || this.#entries.get(keyOf(entry.key)) !== entry) return;
    // The budget refuses the person's next turn at the door; what they left running stops now.
    log.warn("sandbox.session.budget_spent {user} {id}: stopped, with its background processes", {
      event: "sandbox.session.budget_spent",
      user: entry.key.user,
      id: entry.id,
    });
    void this.stop(entry.key);
  }

  /**
   * Stops `key`'s live sandbox, if any; resolves once it is gone and settled, for a second
   * caller too (/clear during an idle stop must not remove the layer under it).
   */
  stop(key: SessionKey): Promise<void> {
    const k = keyOf(key);
    const stopping = this.#stopping.get(k);
    if (stopping) return stopping;
    const entry = this.#entries.get(k);
    if (!entry) return Promise.resolve();
    this.#entries.delete(k);
    clearTimeout(entry.idle);
    const done = (async () => {
      const sandbox = await entry.sandbox.catch(() => null);
      await sandbox?.stop();
      unlistLiveSandbox(this.#stateDir, entry.id);
      await entry.finished;
    })().finally(() => this.#stopping.delete(k));
    this.#stopping.set(k, done);
    return done;
  }

  /** Stops every live sandbox (gateway shutdown or drain). */
  async stopAll(): Promise<void> {
    await this.stopUsers(null);
  }

  /**
   * Stops the live sandboxes of `users` (null: everyone's) — a reload changed what they may do,
   * and a live sandbox keeps the policy it started with; resolves to how many were stopped.
   */
  async stopUsers(users: ReadonlySet<string> | null): Promise<number> {
    const keys = [...this.#entries.keys()].map((k) => {
      const [channel, user, session] = JSON.parse(k) as string[];
      return { channel, user, session };
    }).filter((key) => users === null || users.has(key.user));
    await Promise.all(keys.map((key) => this.stop(key)));
    return keys.length;
  }
}
