/**
 * The public library API (`mod.ts`) is curated: what a library user needs, nothing of Coop's
 * internals (the FFI library, raw fds, prestarted inits, test hooks). Adding an export is a
 * decision, so it changes this list; `deno task check` runs `deno doc --lint mod.ts`, which
 * requires JSDoc on every export and every type they reference.
 */
import * as api from "../../mod.ts";
import { assertEquals } from "../assert.ts";

Deno.test("mod.ts exports exactly the curated runtime values", () => {
  assertEquals(Object.keys(api).sort(), [
    "NETWORK_MODES",
    "STEPS",
    "SandboxError",
    "SandboxHostIdError",
    "SandboxLimitError",
    "SandboxPolicyError",
    "SandboxQuotaError",
    "SandboxSetupError",
    "SandboxUnavailableError",
    "SandboxUpperInUseError",
    "SandboxWorkspaceError",
    "SessionEndedError",
    "environmentWritesSettled",
    "exec",
    "lastSelfTest",
    "probe",
    "resolvePolicy",
    "selfTest",
    "spawn",
    "startSession",
  ]);
});

Deno.test("every error the library exports is a SandboxError with a stable code", () => {
  const errors = [
    new api.SandboxSetupError("clone", 1),
    new api.SandboxUnavailableError("x"),
    new api.SandboxPolicyError("x"),
    new api.SandboxLimitError("x"),
    new api.SandboxHostIdError("x"),
    new api.SandboxWorkspaceError("x"),
    new api.SandboxQuotaError("x"),
    new api.SessionEndedError("x"),
    new api.SandboxUpperInUseError("/env/uppers/bob/upper", null, 0),
  ];
  for (const error of errors) {
    assertEquals(error instanceof api.SandboxError, true);
    assertEquals(typeof error.code, "string");
  }
});
