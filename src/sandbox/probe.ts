/**
 * `probe()`: starts a real tiny sandbox and reports what it *measured* inside — never what
 * kernel flags suggest. `coop sandbox status` and the startup banner print this.
 * @module
 */
import { mkdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { machine, tmpdir } from "node:os";
import process from "node:process";
import { detectAppArmorUserns } from "./apparmor_userns.ts";
import { SandboxError } from "./errors.ts";
import { releaseLoopQuota } from "./loop_quota.ts";
import { probeForeignBackend } from "./foreign_probe.ts";
import { type HostPlatform, hostPlatform } from "./platform.ts";
import { exec } from "./exec.ts";
import { disabledLayers } from "./ffi.ts";
import { BASE_ENV, HOST_ENV_ALLOWLIST } from "./environment.ts";
import { captureCheck } from "./probe_capture.ts";

/** One measured capability of the sandbox. */
export interface ProbeCheck {
  /** Stable identifier, e.g. `pid-namespace`. */
  id: string;
  /** Human label. */
  label: string;
  /** True when the evidence shows the protection in force. */
  ok: boolean;
  /** What was observed inside the sandbox. */
  evidence: string;
}

/** The result of `probe()`. */
export interface ProbeReport {
  /** True when a sandbox could be started at all. */
  available: boolean;
  /** Why not, when `available` is false. */
  error?: string;
  /** Where it ran: operating system, architecture, kernel release, the invoker's uid. */
  platform: { os: string; arch: string; kernel: string; uid: number };
  /** Measured checks, in display order (empty when unavailable). */
  checks: ProbeCheck[];
  /** Wall-clock time of the probe sandbox, spawn to exit. */
  durationMs?: number;
  /** Protections the loaded library was built without (a debug build; empty normally). */
  disabledLayers?: string[];
  /** The backend that ran the probe: `linux-namespaces`, `apple-container`, `sandbox-exec`, or `none`. */
  backend?: string;
  /** Something the owner may want to change about the backend choice (e.g. a stopped service). */
  note?: string;
}

/** Options of {@link probe}. */
export interface ProbeOptions {
  /**
   * The host as the backend choice sees it (tests drive the macOS backends with fakes).
   * @ignore
   */
  platform?: HostPlatform;
}

// Prints key=value lines; $@ are host paths that must not exist inside.
const SCRIPT = `
echo "uid=$(id -u)"
echo "uidmap=$(tr -s ' ' < /proc/self/uid_map | sed 's/^ //')"
echo "init=$(cat /proc/1/comm)"
echo "procs=$(ls -d /proc/[0-9]* | wc -l)"
echo "hostname=$(cat /proc/sys/kernel/hostname)"
echo "netdevs=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | paste -sd, -)"
grep -E '^(CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status | tr -d '\\t ' | sed 's/:/=/'
echo "rootdir=$(ls -A / | paste -sd, -)"
# The fds a fresh process inherits (the shell itself holds extra ones while redirecting).
sleep 10 & child=$!
# Not before it is sleep: between fork and exec the shell briefly holds an extra fd, and the
# kernel renames the task during execve just before it closes the close-on-exec ones. So look
# again while a listing shows more: an inherited fd stays as long as the sleep does.
until [ "$(cat /proc/$child/comm 2>/dev/null)" = sleep ]; do :; done
tries=0
while ls /proc/$child/fd > /tmp/fds && [ "$(paste -sd, /tmp/fds)" != 0,1,2 ] && [ $tries -lt 200 ]; do
  tries=$((tries + 1))
done
kill $child
echo "fds=$(paste -sd, /tmp/fds)"
echo "env=$(env | cut -d= -f1 | sort | paste -sd, -)"
if touch /usr/.coop-probe 2>/dev/null; then echo usr=writable; else echo usr=readonly; fi
# Landlock answers a loopback connect with EACCES (without it: ECONNREFUSED);
# seccomp answers user-namespace creation with EPERM (without it: it succeeds).
bash -c 'exec 3<>/dev/tcp/127.0.0.1/9' 2>/tmp/tcp && echo tcp=connected || echo "tcp=$(tail -n1 /tmp/tcp)"
unshare -U true 2>/tmp/userns && echo userns=created || echo "userns=$(tail -n1 /tmp/userns)"
visible=""
for p in "$@"; do [ -e "$p" ] && visible="$visible$p,"; done
echo "visible=$visible"
`;

function parse(stdout: string): Map<string, string> {
  const values = new Map<string, string>();
  for (const line of stdout.split("\n")) {
    const at = line.indexOf("=");
    if (at > 0) values.set(line.slice(0, at), line.slice(at + 1));
  }
  return values;
}

function kernelRelease(): string {
  try {
    return readFileSync("/proc/sys/kernel/osrelease", "utf8").trim();
  } catch {
    return "unknown";
  }
}

const PROBE_PIDS = 12;
const PROBE_MEMORY = 64 * 2 ** 20;
// Prints the limits and cgroups the command sees, then tries to start twice the pids limit of
// background sleeps and counts how many started.
const LIMITS_SCRIPT = `
echo "as=$(grep '^Max address space' /proc/self/limits | tr -s ' ' | cut -d' ' -f4)"
echo "nproc=$(grep '^Max processes' /proc/self/limits | tr -s ' ' | cut -d' ' -f3)"
echo "cgroups=$(grep -E ':(memory|pids):' /proc/self/cgroup | cut -d: -f2,3 | paste -sd' ' -)"
echo "cgroup2=$(grep '^0::' /proc/self/cgroup | cut -d: -f3)"
(for i in $(seq ${2 * PROBE_PIDS}); do sleep 5 & echo x; done) 2>/dev/null > /tmp/forks
echo "forks=$(wc -l < /tmp/forks)"
`;

/**
 * Measures the resource-limit path: a sandbox with a small pids and memory limit must fail to
 * start twice that many processes, and shows which mechanism bounds it.
 */
async function limitsCheck(workspace: string): Promise<ProbeCheck> {
  const label = "resource limits";
  try {
    const r = await exec({ workspace, pidsLimit: PROBE_PIDS, memoryBytes: PROBE_MEMORY }, [
      "sh",
      "-c",
      LIMITS_SCRIPT,
    ], { timeoutMs: 10_000, expectViolations: true });
    const v = parse(r.stdout);
    const forks = Number(v.get("forks") ?? "NaN");
    const capped = forks < 2 * PROBE_PIDS;
    const path = r.limits.path;
    const seen = path === "cgroup-v1"
      ? `cgroups inside: ${v.get("cgroups") || "none"}`
      : path === "cgroup-v2"
      ? `cgroup v2 inside: ${v.get("cgroup2") || "none"}`
      : `RLIMIT_AS ${v.get("as")}, RLIMIT_NPROC ${v.get("nproc")} (counted per user namespace)`;
    const memoryOk = path === "cgroup-v1"
      ? /memory:\/coop-/.test(v.get("cgroups") ?? "")
      : path === "cgroup-v2"
      ? /\/coop-[^/]+$/.test(v.get("cgroup2") ?? "")
      : v.get("as") === String(PROBE_MEMORY);
    return {
      id: "resource-limits",
      label,
      ok: capped && memoryOk,
      evidence: `${path}: ${forks} of ${2 * PROBE_PIDS} processes started under a limit of ` +
        `${PROBE_PIDS}; ${seen}; not better because: ${r.limits.reason}`,
    };
  } catch (error) {
    return { id: "resource-limits", label, ok: false, evidence: String(error) };
  }
}

/**
 * Measures the disk quota's enforcement: under an 8 MiB quota a 16 MiB write must stop, and
 * the evidence names how (a loop-mounted image as root on an empty workspace, else accounting).
 */
async function quotaCheck(workspace: string): Promise<ProbeCheck> {
  const label = "workspace quotas";
  const dir = `${workspace}/quota`;
  try {
    mkdirSync(dir);
    const r = await exec({ workspace: dir, diskQuotaBytes: 8 * 2 ** 20 }, [
      "sh",
      "-c",
      "dd if=/dev/zero of=/work/f bs=64k count=256 2>/dev/null; wc -c < /work/f",
    ], { timeoutMs: 10_000, expectViolations: true });
    const written = Number(r.stdout.trim());
    const how = r.disk?.enforcement === "loop-image"
      ? "the workspace's own file system of the quota's size (ENOSPC)"
      : `RLIMIT_FSIZE = the quota left; a workspace over quota is refused before each command, ` +
        `and a watchdog kills a command that goes over (no hard quota: ${r.disk?.reason})`;
    return {
      id: "workspace-quotas",
      label,
      ok: r.disk !== null && written <= 8 * 2 ** 20,
      evidence: `${r.disk?.enforcement ?? "none"}: a 16 MiB write stopped at ${written} bytes ` +
        `under an 8 MiB quota: ${how}`,
    };
  } catch (error) {
    return { id: "workspace-quotas", label, ok: false, evidence: String(error) };
  } finally {
    await releaseLoopQuota(dir);
  }
}

/** Host paths a sandbox must never see: the invoker's home and the usual secrets. */
export function hostSecretPaths(): string[] {
  const home = process.env.HOME;
  const paths = ["/root", "/etc/shadow", "/home", "/var/lib"];
  if (home && home !== "/") paths.push(home);
  return [...new Set(paths)];
}

/**
 * Runs one tiny sandbox and measures each protection from inside it.
 *
 * @example
 * ```ts
 * const report = await probe();
 * for (const c of report.checks) console.log(c.ok ? "✓" : "✗", c.label, c.evidence);
 * ```
 */
export async function probe(options: ProbeOptions = {}): Promise<ProbeReport> {
  const host = options.platform ?? hostPlatform();
  if (host.os !== "linux") return probeForeignBackend(host);
  const platform = {
    os: process.platform as string,
    arch: machine(),
    kernel: kernelRelease(),
    uid: process.getuid?.() ?? -1,
  };
  // Ubuntu's restriction explains a sandbox that cannot start; shown with its fix either way.
  const userns = detectAppArmorUserns();
  const appArmor: ProbeCheck = {
    id: "apparmor-userns",
    label: "user namespaces allowed (AppArmor)",
    ok: userns.ok,
    evidence: userns.ok ? userns.evidence : `${userns.evidence}. Fix: ${userns.fix}`,
  };
  const unavailableChecks = userns.ok ? [] : [appArmor];
  const workspace = await mkdtemp(`${tmpdir()}/coop-probe-`);
  try {
    const result = await exec({ workspace }, [
      "sh",
      "-c",
      SCRIPT,
      "coop-probe",
      ...hostSecretPaths(),
    ], {
      timeoutMs: 10_000,
    });
    if (result.exitCode !== 0) {
      return {
        available: false,
        error: `the probe sandbox exited with ${result.exitCode}: ${result.stderr.trim()}`,
        platform,
        checks: unavailableChecks,
      };
    }
    const v = parse(result.stdout);
    const allowedEnv = new Set([
      ...Object.keys(BASE_ENV),
      ...HOST_ENV_ALLOWLIST,
      "PWD",
      "SHLVL",
      "_",
    ]);
    const envNames = (v.get("env") ?? "").split(",").filter(Boolean);
    const strayEnv = envNames.filter((name) => !allowedEnv.has(name));
    const caps = ["CapPrm", "CapEff", "CapBnd", "CapAmb"].map((k) => `${k}=${v.get(k) ?? "?"}`);
    const capsZero = ["CapPrm", "CapEff", "CapBnd", "CapAmb"].every((k) =>
      /^0+$/.test(v.get(k) ?? "")
    );
    const fds = v.get("fds") ?? "";
    const visible = (v.get("visible") ?? "").split(",").filter(Boolean);
    const checks: ProbeCheck[] = [
      {
        id: "user-namespace",
        label: "user namespace",
        ok: v.get("uid") === "0" && /^0 \d+ 1$/.test(v.get("uidmap") ?? ""),
        evidence: `uid ${v.get("uid")} inside; uid_map "${v.get("uidmap")}"`,
      },
      {
        id: "mount-namespace",
        label: "private root (pivot_root)",
        ok: visible.length === 0 && v.get("usr") === "readonly",
        evidence: `/ holds ${v.get("rootdir")}; /usr ${v.get("usr")}; ` +
          (visible.length
            ? `VISIBLE: ${visible.join(", ")}`
            : `absent: ${hostSecretPaths().join(", ")}`),
      },
      {
        id: "pid-namespace",
        label: "pid namespace",
        ok: v.get("init") === "coop-init",
        evidence: `pid 1 is ${v.get("init")}; ${v.get("procs")} processes visible`,
      },
      {
        id: "network-namespace",
        label: "network namespace",
        ok: v.get("netdevs") === "lo",
        evidence: `interfaces: ${v.get("netdevs")}`,
      },
      {
        id: "uts-namespace",
        label: "uts namespace",
        ok: v.get("hostname") === "coop",
        evidence: `hostname ${v.get("hostname")}`,
      },
      { id: "capabilities", label: "capabilities dropped", ok: capsZero, evidence: caps.join(" ") },
      {
        id: "no-new-privs",
        label: "no_new_privs",
        ok: v.get("NoNewPrivs") === "1",
        evidence: `NoNewPrivs: ${v.get("NoNewPrivs")}`,
      },
      {
        id: "seccomp",
        label: "seccomp filter",
        ok: v.get("Seccomp") === "2" && /Operation not permitted/.test(v.get("userns") ?? ""),
        evidence: `Seccomp: ${v.get("Seccomp")}; unshare -U: ${v.get("userns")}`,
      },
      {
        id: "landlock",
        label: "landlock",
        ok: result.hardening.landlockAbi > 0 && /Permission denied/.test(v.get("tcp") ?? ""),
        evidence: `ABI ${result.hardening.landlockAbi || "none"}; connect 127.0.0.1:9: ${
          v.get("tcp")
        }`,
      },
      {
        id: "environment",
        label: "environment allowlist",
        ok: strayEnv.length === 0,
        evidence: strayEnv.length
          ? `unexpected: ${strayEnv.join(",")}`
          : `only ${envNames.join(",")}`,
      },
      {
        id: "file-descriptors",
        label: "no inherited fds",
        ok: fds === "0,1,2",
        evidence: `a command's open fds: ${fds}`,
      },
    ];
    checks.push(appArmor);
    checks.push(await limitsCheck(workspace));
    checks.push(await quotaCheck(workspace));
    checks.push(await captureCheck(workspace));
    return {
      available: true,
      platform,
      checks,
      durationMs: result.durationMs,
      disabledLayers: await disabledLayers(),
      backend: "linux-namespaces",
    };
  } catch (error) {
    const message = error instanceof SandboxError ? error.message : String(error);
    return {
      available: false,
      error: message,
      platform,
      checks: unavailableChecks,
      backend: "linux-namespaces",
    };
  } finally {
    await rm(workspace, { recursive: true, force: true }).catch(() => {});
  }
}
