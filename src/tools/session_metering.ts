/**
 * What a live session sandbox's background processes cost, charged to the person: where its
 * cgroup counts CPU, as it runs (after each command and on a timer, never while a command runs,
 * whose own CPU comes with its result); the rest when it ends, with its last workspace scan.
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type { SessionSandbox } from "../sandbox/mod.ts";
import { errorMessage } from "../errors/coop_error.ts";

const log = getLogger(["coop", "tools", "session"]);

/** What the latest command of a session asks to be done when its sandbox ends. */
export interface SessionEndHooks {
  /** Receives the CPU seconds no command's result reported (background processes, the init). */
  onCpuSeconds?: (seconds: number) => void;
  /** Runs once the sandbox is gone (the last workspace scan); `stop()` waits for it. */
  afterEnd?: (session: { startedAt: number }) => Promise<unknown>;
  /**
   * Whether the budget `onCpuSeconds` charges is spent; asked after each charge of background
   * CPU while the sandbox lives, which is stopped when it is.
   */
  budgetSpent?: () => boolean;
}

/** How often a live sandbox's background CPU is charged while no command runs, by default. */
export const CHARGE_EVERY_MS = 5000;
/** Background CPU below this waits for the next charge (each late charge is a usage write). */
const MIN_CHARGE_MS = 10;

/** The metering state of one live session sandbox. */
export interface MeteredSession {
  id: string;
  key: { channel: string; user: string; session: string };
  /** Commands running in it now. */
  running: number;
  /** The latest command's hooks, run at the end. */
  hooks: SessionEndHooks;
  /** Background CPU charged while the sandbox ran (milliseconds); the end charges the rest. */
  chargedMs: number;
}

/**
 * Charges the background CPU the session's cgroup has counted since the last charge, when no
 * command runs; nothing where no cgroup counts it. Returns whether the budget is now spent.
 */
export function chargeBackground(entry: MeteredSession, live: SessionSandbox): boolean {
  if (entry.running > 0) return false;
  const cpu = live.unclaimedCpuSoFar();
  if (!cpu) return false;
  const ms = cpu.userMs + cpu.systemMs - entry.chargedMs;
  if (ms < MIN_CHARGE_MS) return false;
  entry.chargedMs += ms;
  log.debug("sandbox.session.cpu {user} {id}: {seconds} s in the background, charged", {
    user: entry.key.user,
    id: entry.id,
    seconds: ms / 1000,
  });
  try {
    entry.hooks.onCpuSeconds?.(ms / 1000);
    return entry.hooks.budgetSpent?.() ?? false;
  } catch (error) {
    // A timer's callback, or a command's end: the command's result stands either way.
    log.error("sandbox.session.charge_failed {user} {id}: {error}", {
      user: entry.key.user,
      id: entry.id,
      error: errorMessage(error),
    });
    return false;
  }
}

/** Charges the CPU time no command reported and runs the last scan; never throws. */
export async function settleSession(entry: MeteredSession, live: SessionSandbox): Promise<void> {
  const { onCpuSeconds, afterEnd } = entry.hooks;
  try {
    const cpu = await live.unclaimedCpu;
    // What was charged while it ran is not charged again.
    const seconds = Math.max(0, cpu.userMs + cpu.systemMs - entry.chargedMs) / 1000;
    log.info("sandbox.session.cpu {user} {id}: {seconds} s not charged with a command", {
      user: entry.key.user,
      id: entry.id,
      seconds,
    });
    onCpuSeconds?.(seconds);
  } catch (error) {
    log.error("sandbox.session.charge_failed {user} {id}: {error}", {
      user: entry.key.user,
      id: entry.id,
      error: errorMessage(error),
    });
  }
  try {
    await afterEnd?.({ startedAt: live.startedAt });
  } catch (error) {
    log.error("sandbox.session.end_scan_failed {user} {id}: {error}", {
      user: entry.key.user,
      id: entry.id,
      error: errorMessage(error),
    });
  }
}
