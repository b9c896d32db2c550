/**
 * The startup banner's sandbox line, built from what a probe sandbox measured — never from
 * kernel flags: `🔒 Sandbox: linux (namespaces + landlock + seccomp) — owner bypasses`.
 * @module
 */
import type { ProbeReport } from "../sandbox/mod.ts";

const NAMESPACE_CHECKS = [
  "user-namespace",
  "mount-namespace",
  "pid-namespace",
  "network-namespace",
  "uts-namespace",
];

/** One line saying which protections were measured in force, and which were not. */
export function sandboxBanner(report: ProbeReport | null, sandboxEnabled = true): string {
  if (!sandboxEnabled || report === null) return "⚠ Sandbox: disabled — non-owner bash is refused";
  if (!report.available) {
    return `✗ Sandbox: unavailable (${report.error}) — non-owner commands are refused`;
  }
  const ok = new Map(report.checks.map((c) => [c.id, c.ok]));
  const layers: string[] = [];
  if (NAMESPACE_CHECKS.every((id) => ok.get(id))) layers.push("namespaces");
  if (ok.get("landlock")) layers.push("landlock");
  if (ok.get("seccomp")) layers.push("seccomp");
  const limits = report.checks.find((c) => c.id === "resource-limits");
  const missing = report.checks.filter((c) => !c.ok).map((c) => c.label);
  const debug = report.disabledLayers?.length
    ? ` — DEBUG LIBRARY without ${report.disabledLayers.join(", ")}`
    : "";
  const icon = missing.length || debug ? "⚠" : "🔒";
  const gaps = missing.length ? `; not in force: ${missing.join(", ")}` : "";
  const limitsNote = limits?.ok ? `, limits via ${limits.evidence.split(/[;:]/)[0].trim()}` : "";
  return `${icon} Sandbox: ${report.platform.os} (${layers.join(" + ")}${limitsNote}${gaps})` +
    ` — owner bypasses${debug}`;
}
