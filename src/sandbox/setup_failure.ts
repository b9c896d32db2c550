/**
 * A failed setup step, as the error the caller sees: the step's name, the errno, and a hint
 * when the cause is a known one.
 * @module
 */
import { detectAppArmorUserns, looksLikeAppArmorDenial } from "./apparmor_userns.ts";
import { ERRNO } from "./errno.ts";
import { SandboxSetupError } from "./errors.ts";
import { stepName } from "./protocol.ts";

/** The error for setup step `step` (its protocol number) failing with `errno`. */
export function setupFailure(step: number, errno: number): SandboxSetupError {
  const name = stepName(step);
  return new SandboxSetupError(name, errno, hintFor(name, errno));
}

function hintFor(step: string, errno: number): string | undefined {
  if (errno === ERRNO.EPERM || errno === ERRNO.EACCES) {
    const userns = detectAppArmorUserns();
    if (looksLikeAppArmorDenial(step, errno, userns)) return userns.fix!;
  }
  if (step === "clone" && (errno === ERRNO.EPERM || errno === ERRNO.ENOSPC)) {
    return "user namespaces are unavailable: check kernel.unprivileged_userns_clone, " +
      "user.max_user_namespaces and AppArmor's kernel.apparmor_restrict_unprivileged_userns";
  }
  if (step === "cgroup") {
    return "the gateway could not place the sandbox in its cgroup limits; the command did " +
      "not run (fail closed)";
  }
  if (step === "mount-workspace" && errno === ERRNO.ENOENT) {
    return "the workspace directory does not exist";
  }
  if (step === "mount-workspace" && errno === ERRNO.ELOOP) {
    return "the workspace is a symlink, or became one while the sandbox was being set up; " +
      "Coop never follows it (configure the directory it points to)";
  }
  if (step === "ipc-limits" && errno !== ERRNO.ECANCELED) {
    return "the memory limit applies per process here (no cgroup: the rlimit path), and the " +
      "sandbox's IPC namespace could not be bounded through /proc/sys/kernel (read-only " +
      "/proc/sys in a container, or a kernel that lets only the host's root write IPC " +
      "sysctls); the command did not run (fail closed). Run the gateway as root on a host " +
      "with cgroups, or drop the memory limit";
  }
  if (step === "capture" && errno !== ERRNO.ECANCELED) {
    return 'networks "proxy" and "public" capture every TCP connection with nf_tables inside ' +
      "the sandbox's network namespace (a redirect to its proxy listener); this kernel refused " +
      "it (CONFIG_NF_TABLES, CONFIG_NFT_REDIR and CONFIG_NF_NAT are needed, or their modules " +
      'loaded). The command did not run (fail closed); use network "none", or see ' +
      "docs/network.md";
  }
  if (step === "mount-proc") {
    return "procfs cannot be mounted here (a container that masks /proc?); run Coop on the host";
  }
  return undefined;
}
