/**
 * `coop check`: cron jobs — names, users, schedules that never fire, where replies go.
 * @module
 */
import type { CoopConfig } from "./config.ts";
import { type ConfigDiagnostic, configError, configWarning } from "./config_diagnostic.ts";
import { nextCronRun } from "./cron_schedule.ts";
import { isLoopbackHost } from "./loopback_host.ts";

function isPlainRemoteHttp(url: string): boolean {
  const parsed = new URL(url);
  return parsed.protocol === "http:" && !isLoopbackHost(parsed.hostname);
}

/** Duplicate jobs, unknown users, owner overrides, schedules that never fire, plain-HTTP replies. */
export function checkCron(config: CoopConfig, out: ConfigDiagnostic[]): void {
  const jobs = new Set<string>();
  config.cron.forEach((job, i) => {
    if (jobs.has(job.name)) {
      out.push(
        configError("config.duplicate_cron", `cron[${i}].name`, `"${job.name}" is defined twice`),
      );
    }
    jobs.add(job.name);
    const user = config.users.find((u) => u.name === job.user);
    if (!user) {
      out.push(configError(
        "config.unknown_cron_user",
        `cron[${i}].user`,
        `no user named "${job.user}"; a job runs as a configured user (their trust and sandbox)`,
      ));
    } else if (user.trust === "owner" && Object.keys(job.sandbox).length > 0) {
      out.push(configWarning(
        "config.owner_sandbox_overrides",
        `cron[${i}].sandbox`,
        `"${job.user}" is the owner, whose commands run on the host: only timeout and ` +
          "max_timeout apply, the other keys are ignored",
      ));
    }
    if (nextCronRun(job.schedule, Date.now()) === null) {
      out.push(configWarning(
        "config.cron_never_runs",
        `cron[${i}].schedule`,
        `"${job.schedule}" never fires (no such date); the job will not run`,
      ));
    }
    if (job.replyTo.kind === "http" && isPlainRemoteHttp(job.replyTo.url)) {
      out.push(configWarning(
        "config.cron_reply_plain_http",
        `cron[${i}].reply_to`,
        "replies would travel unencrypted to a non-loopback host; use https://",
      ));
    }
  });
}
