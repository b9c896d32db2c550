import { assertEquals } from "../assert.ts";
import { sandboxBanner } from "../../src/cli/banner.ts";
import type { ProbeCheck, ProbeReport } from "../../src/sandbox/mod.ts";

const platform = { os: "linux", arch: "x86_64", kernel: "6.18", uid: 1000 };
const ids = [
  "user-namespace",
  "mount-namespace",
  "pid-namespace",
  "network-namespace",
  "uts-namespace",
  "landlock",
  "seccomp",
];

function report(failing: string[] = [], extra: ProbeCheck[] = []): ProbeReport {
  const checks = ids.map((id) => ({ id, label: id, ok: !failing.includes(id), evidence: "" }));
  return { available: true, platform, checks: [...checks, ...extra], disabledLayers: [] };
}

Deno.test("the banner names every layer measured in force", () => {
  assertEquals(
    sandboxBanner(report()),
    "🔒 Sandbox: linux (namespaces + landlock + seccomp) — owner bypasses",
  );
});

Deno.test("a layer not in force is named, and the icon warns", () => {
  assertEquals(
    sandboxBanner(report(["landlock"])),
    "⚠ Sandbox: linux (namespaces + seccomp; not in force: landlock) — owner bypasses",
  );
});

Deno.test("the limits path comes from the measured check", () => {
  const limits = {
    id: "resource-limits",
    label: "resource limits",
    ok: true,
    evidence: "rlimit: 9 of 24",
  };
  assertEquals(
    sandboxBanner(report([], [limits])),
    "🔒 Sandbox: linux (namespaces + landlock + seccomp, limits via rlimit) — owner bypasses",
  );
});

Deno.test("an unavailable or disabled sandbox says non-owners are refused", () => {
  const down: ProbeReport = { available: false, error: "clone: EPERM", platform, checks: [] };
  assertEquals(
    sandboxBanner(down),
    "✗ Sandbox: unavailable (clone: EPERM) — non-owner commands are refused",
  );
  assertEquals(sandboxBanner(report(), false), "⚠ Sandbox: disabled — non-owner bash is refused");
});
