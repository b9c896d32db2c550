/**
 * `coop run` and `coop shell` run a person's program on their workspace like a tool call does,
 * so the same scan follows when it exits (ATTACKS F23, F27): git traps it left are made
 * harmless before the owner's own git runs there, and the owner is told on stderr.
 * @module
 */
import { DEFAULT_SCAN_LIMIT } from "../sandbox/mod.ts";
import { WorkspaceGuard } from "../workspace/workspace_guard.ts";
import { writeStderr } from "./stderr.ts";
import type { UserSandbox } from "./user_sandbox.ts";

/**
 * Scans `sandbox`'s workspace for what changed since `started` (ms); prints what was disabled,
 * the auto-run files written, and whether the scan could not see everything.
 */
export async function scanAfterRun(sandbox: UserSandbox, started: number): Promise<void> {
  const found = await new WorkspaceGuard().afterCall(sandbox.user, sandbox.workspace, started, {
    maxEntries: sandbox.policy.scanLimit ?? DEFAULT_SCAN_LIMIT,
  });
  for (const file of found.autoexec) {
    writeStderr(
      `coop: ${sandbox.user} wrote ${file.path} (${file.what}); read it before you ` +
        `use that tool there\n`,
    );
  }
  if (found.note) writeStderr(`${found.note.replaceAll("[coop]", "coop:")}\n`);
}
