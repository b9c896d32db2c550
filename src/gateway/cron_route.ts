/**
 * Who a cron job's turn runs as: its configured user, routed as that user, in a session of the
 * job's own. A job naming no configured user is an error (`coop check` refuses such a config).
 * @module
 */
import type { CoopConfig, CronJobConfig, UserConfig } from "../config/config.ts";
import { GatewayError } from "./gateway_error.ts";
import { type Route, routeUser, sessionOwner } from "./router.ts";

/** The job's user, their route and the session's owner. */
export function cronRoute(
  config: CoopConfig,
  job: CronJobConfig,
): { user: UserConfig; route: Route; person: string } {
  const user = config.users.find((u) => u.name === job.user);
  if (!user) {
    throw new GatewayError(
      "gateway.cron_unknown_user",
      `cron job "${job.name}" runs as "${job.user}", who is not a configured user`,
    );
  }
  const route = routeUser(user);
  return { user, route, person: sessionOwner(route, { channel: "cron", sender: job.name }) };
}
