/**
 * The end of a chat session for environments: a `[session] upper = "session"` layer is
 * discarded when its session ends (`/clear`, the end of a cron run).
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type { CoopConfig } from "../config/config.ts";
import { errorMessage } from "../errors/coop_error.ts";
import { discardSessionUppers } from "../environments/environment_lifecycle.ts";
import { upperLocker } from "../environments/layer_removal.ts";
import type { EnvironmentSession } from "../environments/environment_mounts.ts";

const log = getLogger(["coop", "environments"]);

/**
 * Deletes `user`'s session upper layers of `session` in every environment (none exist unless
 * an environment keeps its upper per session). A failure is logged, never thrown: the session
 * has ended either way, and `coop sandbox clean` removes what is left.
 */
export async function endEnvironmentSession(
  config: CoopConfig,
  user: string,
  session: EnvironmentSession,
): Promise<void> {
  try {
    const lock = await upperLocker();
    for (const removed of discardSessionUppers(config.agent.stateDir, user, session, lock)) {
      log.info("environment.session_upper_removed {path}", {
        event: "environment.session_upper_removed",
        user,
        channel: session.channel,
        path: removed.path,
        bytes: removed.bytes,
      });
    }
  } catch (error) {
    log.warn("environment.session_upper_kept {user}: {reason}", {
      event: "environment.session_upper_kept",
      user,
      channel: session.channel,
      reason: errorMessage(error),
    });
  }
}
