/**
 * Errors of the sandbox library. Each has a stable `code` and a message a user can act on.
 * @module
 */
import { errnoName, errnoText } from "./errno.ts";

/** Base class of every error the sandbox library throws on purpose. */
export class SandboxError extends Error {
  /** A stable machine-readable code, e.g. `sandbox.setup`. */
  readonly code: string;
  /** An error with a stable `code` and a message a user can act on. */
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "SandboxError";
    this.code = code;
  }
}

/** The sandbox could not be built: `step` failed with `errno`; nothing of the command ran. */
export class SandboxSetupError extends SandboxError {
  /** The setup step that failed, e.g. `mount-workspace`. */
  readonly step: string;
  /** The errno the kernel returned for that step. */
  readonly errno: number;
  /** `hint` says what to do about it (e.g. the AppArmor switch for `clone`). */
  constructor(step: string, errno: number, hint?: string) {
    super(
      "sandbox.setup",
      `sandbox setup failed at step "${step}": ${errnoName(errno)} (${errnoText(errno)})` +
        (hint ? ` — ${hint}` : ""),
    );
    this.name = "SandboxSetupError";
    this.step = step;
    this.errno = errno;
  }
}

/** The sandbox cannot run on this machine at all (no library, wrong platform, stale build). */
export class SandboxUnavailableError extends SandboxError {
  /** `message` names what is missing and the fix. */
  constructor(message: string, options?: ErrorOptions) {
    super("sandbox.unavailable", message, options);
    this.name = "SandboxUnavailableError";
  }
}

/** A policy or exec option is invalid; `path` names the offending field. */
export class SandboxPolicyError extends SandboxError {
  /** `message` names the field and what was expected. */
  constructor(message: string) {
    super("sandbox.policy", message);
    this.name = "SandboxPolicyError";
  }
}

/** A requested resource limit cannot be enforced by any path on this host; fail closed. */
export class SandboxLimitError extends SandboxError {
  /** `message` names the limit and why no path can enforce it. */
  constructor(message: string) {
    super("sandbox.limits", message);
    this.name = "SandboxLimitError";
  }
}

/**
 * The workspace could not be checked before the sandbox was built (too many entries to find the
 * paths that must stay read-only); nothing of the command ran.
 */
export class SandboxWorkspaceError extends SandboxError {
  /** `message` says how many entries were read and what to do. */
  constructor(message: string) {
    super("sandbox.workspace_too_large", message);
    this.name = "SandboxWorkspaceError";
  }
}

/**
 * The workspace is at or over its disk or inode quota (measured before the command), or could
 * not be measured; the command did not run.
 */
export class SandboxQuotaError extends SandboxError {
  /** `message` names the workspace, its usage, the quota and what to do. */
  constructor(message: string) {
    super("sandbox.quota_exceeded", message);
    this.name = "SandboxQuotaError";
  }
}
