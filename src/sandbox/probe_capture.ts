/**
 * The transparent-capture check of `probe()`: a real sandbox with network "proxy" whose
 * connection to an address nobody allowed must end at the policy proxy (its 403, and a recorded
 * denial), whose stub resolver must hand out a 198.18/16 address for an allowed name, and whose
 * UDP must go nowhere — measured, like every other check.
 * @module
 */
import { SandboxError } from "./errors.ts";
import { exec } from "./exec.ts";
import type { ProbeCheck } from "./probe.ts";

const ALLOWED = "allowed.coop-probe.invalid";
const REFUSED = "192.0.2.1"; // documentation space: refused even if it were allowed
const SCRIPT = `echo "stub=$(getent hosts ${ALLOWED} | cut -d' ' -f1)"
printf 'captured=%s\\n' "$(bash -c 'exec 3<>/dev/tcp/${REFUSED}/80 &&
  printf "GET / HTTP/1.0\\r\\n\\r\\n" >&3 && head -n1 <&3' 2>&1 | tr -d '\\r')"
bash -c 'echo > /dev/udp/${REFUSED}/53' 2>/tmp/udp && echo udp=sent || echo "udp=$(tail -n1 /tmp/udp)"`;

/** Measures transparent capture (networks "proxy" and "public") in a sandbox of its own. */
export async function captureCheck(workspace: string): Promise<ProbeCheck> {
  const id = "network-capture", label = 'transparent capture (network "proxy")';
  try {
    const r = await exec({ workspace, network: "proxy", allowDomains: [ALLOWED] }, [
      "sh",
      "-c",
      SCRIPT,
    ], { timeoutMs: 10_000, expectViolations: true });
    const v = new Map(
      r.stdout.split("\n").filter((l) => l.includes("=")).map((l) => [
        l.slice(0, l.indexOf("=")),
        l.slice(l.indexOf("=") + 1),
      ]),
    );
    const denied = r.proxyDenials.some((d) => d.host === REFUSED && d.port === 80);
    const ok = /^198\.18\.\d+\.\d+$/.test(v.get("stub") ?? "") &&
      /^HTTP\/1\.1 403 /.test(v.get("captured") ?? "") && denied &&
      /Operation not permitted/.test(v.get("udp") ?? "");
    return {
      id,
      label,
      ok,
      evidence: `${ALLOWED} → ${v.get("stub") || "no answer"} (stub resolver); ` +
        `bash /dev/tcp/${REFUSED}/80 → ${v.get("captured") || "nothing"}` +
        `${denied ? " (denial recorded)" : " (no denial recorded)"}; UDP → ${v.get("udp")}`,
    };
  } catch (error) {
    const message = error instanceof SandboxError ? error.message : String(error);
    return { id, label, ok: false, evidence: message };
  }
}
