/**
 * probe() on a host whose backend is not Linux namespaces: which backend the host has, and
 * what a real tiny sandbox of it just proved — the workspace writable, the host's home and
 * system paths out of reach, no network. On a host with no backend: unavailable, with the
 * reason naming the platform and what is missing.
 * @module
 */
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import process from "node:process";
import { chooseBackend } from "./backend_choice.ts";
import { SandboxError } from "./errors.ts";
import { exec } from "./exec.ts";
import type { HostPlatform } from "./platform.ts";
import type { ProbeCheck, ProbeReport } from "./probe.ts";

// `coop-probe` marks the script (fake tools in tests recognise it). $1: the host's home;
// $2: a host loopback port that must stay unreachable.
const SCRIPT = `# coop-probe
echo "uid=$(id -u)"
if echo probe > ./.coop-probe 2>/dev/null; then echo work=rw; else echo work=denied; fi
rm -f ./.coop-probe
if ls "$1" >/dev/null 2>&1; then echo home=visible; else echo home=hidden; fi
if touch /usr/.coop-probe 2>/dev/null; then echo usr=writable; else echo usr=readonly; fi
if command -v ip >/dev/null 2>&1 && ip route show default 2>/dev/null | grep -q .; then echo route=default; else echo route=none; fi
if (exec 3<>/dev/tcp/127.0.0.1/$2) 2>/dev/null; then echo loopback=reached; else echo loopback=blocked; fi
`;

function parse(text: string): Map<string, string> {
  const values = new Map<string, string>();
  for (const line of text.split("\n")) {
    const at = line.indexOf("=");
    if (at > 0) values.set(line.slice(0, at), line.slice(at + 1));
  }
  return values;
}

/** Probes `platform`'s backend with one real command. */
export async function probeForeignBackend(platform: HostPlatform): Promise<ProbeReport> {
  const where = {
    os: platform.os,
    arch: platform.arch,
    kernel: "unknown",
    uid: process.getuid?.() ?? -1,
  };
  const backend = await chooseBackend(platform);
  if (backend.kind === "none" || backend.kind === "linux-namespaces") {
    const error = backend.kind === "none" ? backend.reason : "not a foreign backend";
    return { available: false, error, platform: where, checks: [], backend: backend.kind };
  }
  const workspace = await mkdtemp(`${tmpdir()}/coop-probe-`);
  let connections = 0;
  const listener = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((ready) => listener.listen(0, "127.0.0.1", ready));
  try {
    const port = (listener.address() as AddressInfo).port;
    const home = process.env.HOME ?? "/Users";
    // bash for /dev/tcp; macOS ships it, and so does a VM image that has it (else: blocked).
    const result = await exec({ workspace }, [
      "bash",
      "-c",
      SCRIPT,
      "coop-probe",
      home,
      String(port),
    ], {
      timeoutMs: 60_000,
      platform,
    });
    const v = parse(result.stdout);
    const tool = backend.kind === "apple-container"
      ? `${backend.cli} (${backend.version})`
      : backend.cli;
    const network = backend.kind === "apple-container"
      ? { ok: v.get("route") === "none", evidence: `default route inside: ${v.get("route")}` }
      : {
        ok: v.get("loopback") === "blocked" && connections === 0,
        evidence: `a host listener on 127.0.0.1: ${v.get("loopback")}, ${connections} connections`,
      };
    const checks: ProbeCheck[] = [
      {
        id: "backend",
        label: backend.kind,
        ok: result.exitCode === 0,
        evidence: `${tool}: exit ${result.exitCode}`,
      },
      {
        id: "workspace",
        label: "workspace read-write",
        ok: v.get("work") === "rw",
        evidence: `write: ${v.get("work")}`,
      },
      {
        id: "host-home",
        label: "host home hidden",
        ok: v.get("home") === "hidden",
        evidence: `${home}: ${v.get("home")}`,
      },
      {
        id: "system-read-only",
        label: "system paths read-only",
        ok: v.get("usr") === "readonly",
        evidence: `/usr: ${v.get("usr")}`,
      },
      { id: "network", label: "no network", ...network },
    ];
    if (backend.kind === "apple-container") {
      checks.push({
        id: "uid",
        label: "commands not root in the VM",
        ok: v.get("uid") !== "0",
        evidence: `uid ${v.get("uid")}`,
      });
    }
    return {
      available: true,
      platform: where,
      checks,
      durationMs: result.durationMs,
      backend: backend.kind,
      ...(backend.kind === "sandbox-exec" && backend.note ? { note: backend.note } : {}),
    };
  } catch (error) {
    const message = error instanceof SandboxError ? error.message : String(error);
    return { available: false, error: message, platform: where, checks: [], backend: backend.kind };
  } finally {
    await new Promise((closed) => listener.close(closed));
    await rm(workspace, { recursive: true, force: true }).catch(() => {});
  }
}
