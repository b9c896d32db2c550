/**
 * The isolation checks of `probe()`: one script run in the probe sandbox prints what it sees —
 * ids, namespaces, capabilities, seccomp, Landlock, environment, inherited fds, host paths —
 * and each check is read from that output.
 * @module
 */
import process from "node:process";
import { BASE_ENV, HOST_ENV_ALLOWLIST } from "./environment.ts";
import type { ExecResult } from "./exec.ts";
import type { ProbeCheck } from "./probe.ts";
import { parseProbeOutput } from "./probe_output.ts";

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

/** Host paths a sandbox must never see: the invoker's home and the usual secrets. */
export function hostSecretPaths(): string[] {
  const home = process.env.HOME;
  const paths = ["/root", "/etc/shadow", "/home", "/var/lib"];
  if (home && home !== "/") paths.push(home);
  return [...new Set(paths)];
}

/** The probe sandbox's command: the isolation script, given the host paths it must not see. */
export function isolationArgv(): string[] {
  return ["sh", "-c", SCRIPT, "coop-probe", ...hostSecretPaths()];
}

/** The isolation checks, read from what `isolationArgv()` printed in the probe sandbox. */
export function isolationChecks(result: ExecResult): ProbeCheck[] {
  const v = parseProbeOutput(result.stdout);
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
  return [
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
}
