/**
 * What a config reload ends at once: the live session sandboxes of the people it changed. A live
 * sandbox keeps the policy it started with, and its background processes run on between calls;
 * the next call starts one under the new policy.
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type { ConfigChanges } from "../config/config_changes.ts";
import type { SessionSandboxes } from "../tools/session_sandboxes.ts";

const log = getLogger(["coop", "gateway"]);

/**
 * Stops the live sandboxes of the people `changes` names (everyone's when `[sandbox]` or the
 * groups changed, or without `changes`), in the background, and logs how many ended.
 */
export function endChangedSessions(sandboxes: SessionSandboxes, changes?: ConfigChanges): void {
  const whose = !changes || changes.sandbox || changes.groups.length > 0
    ? null
    : new Set(changes.users.map((name) => name.replace(/^[+-]/, "")));
  if (whose !== null && whose.size === 0) return;
  void sandboxes.stopUsers(whose).then((stopped) => {
    if (stopped === 0) return;
    log.info("sandbox.session.reload: {stopped} live sandbox(es) ended for the new config", {
      event: "sandbox.session.reload",
      stopped,
    });
  });
}
