/**
 * A live session sandbox for tests that need none: its commands succeed at once (or wait for
 * `running`), and the CPU its cgroup "counted" is set by hand (null: no cgroup counts it).
 * @module
 */
import type { ExecResult, SessionCpuTime, SessionSandbox } from "../../src/sandbox/mod.ts";
import { commandResult } from "../fixtures/command_result.ts";

/** A session whose unclaimed CPU is `counted` (null: no cgroup counts it) until it ends. */
export class FakeSession implements SessionSandbox {
  readonly pid = 4242;
  readonly startedAt = Date.now();
  counted: number | null = 0;
  /** The whole unclaimed CPU at the end (the init's rusage less the commands'). */
  finalMs = 0;
  alive = true;
  #end!: (cpu: SessionCpuTime) => void;
  readonly unclaimedCpu = new Promise<SessionCpuTime>((resolve) => this.#end = resolve);
  readonly ended = this.unclaimedCpu.then(() => {});
  /** Commands wait for this when set (a command that is still running). */
  running: Promise<void> | null = null;

  unclaimedCpuSoFar(): SessionCpuTime | null {
    return this.alive && this.counted !== null ? { userMs: this.counted, systemMs: 0 } : null;
  }

  async exec(): Promise<ExecResult> {
    await this.running;
    return {
      ...commandResult(),
      hardening: { landlockAbi: 6, seccomp: true },
      oomKilled: false,
      pidsLimitHit: null,
      cpu: { userMs: 1, systemMs: 0, measuredBy: "rusage" },
      disk: null,
      proxyDenials: [],
      proxyRefusedConnections: 0,
    } as unknown as ExecResult;
  }

  stop(): Promise<void> {
    if (this.alive) this.alive = false, this.#end({ userMs: this.finalMs, systemMs: 0 });
    return this.ended;
  }
}
