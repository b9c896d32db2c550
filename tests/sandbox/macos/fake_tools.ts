/**
 * Fake `sandbox-exec` and `container` command-line tools for the macOS backend tests: shell
 * scripts in a temporary directory (passed as the platform's tool directory) that record each
 * call's arguments and environment, and play back what the real tools print — including their
 * failures (a profile that cannot be applied, a stopped service, a VM that does not boot).
 */
import type { HostPlatform } from "../../../src/sandbox/platform.ts";

/** A directory of fake tools and what they recorded. */
export interface FakeTools {
  /** The platform whose tool directory holds the fakes. */
  platform: HostPlatform;
  /** The directory (fakes and their records). */
  dir: string;
  /** Every call of `tool`, each as its argument list, in order. */
  calls(tool: "sandbox-exec" | "container"): Promise<string[][]>;
  /** The environment of the last sandbox-exec call, `NAME=value` lines. */
  lastEnv(): Promise<string[]>;
  /** Makes the fakes play a failure: a file named `mode` in their directory switches it on. */
  fail(mode: "apply-fails" | "service-down" | "vm-fails"): Promise<void>;
  /** Removes the directory. */
  remove(): Promise<void>;
}

// The probe's script carries `coop-probe`: answer with what a working sandbox measures.
const SANDBOX_EXEC = (dir: string) =>
  `#!/bin/bash
# Fake /usr/bin/sandbox-exec: records args (NUL-separated, one file per call) and environment.
n=$(ls "${dir}"/sandbox-exec.*.args 2>/dev/null | wc -l)
printf '%s\\0' "$@" > "${dir}/sandbox-exec.$n.args"
env > "${dir}/sandbox-exec.env"
echo $$ > "${dir}/sandbox-exec.pid"
if [ -e "${dir}/apply-fails" ]; then
  echo "sandbox-exec: sandbox_apply: Operation not permitted" >&2
  exit 71
fi
[ "$1" = -p ] || { echo "usage: sandbox-exec [-f profile-file] [-n profile-name] [-p profile-string] [-D key=value ...] command [arguments ...]" >&2; exit 64; }
shift 2
[ "$1" = -- ] && shift
case "$*" in
  *coop-probe*) printf 'uid=501\\nwork=rw\\nhome=hidden\\nusr=readonly\\nroute=none\\nloopback=blocked\\n'; exit 0 ;;
esac
exec "$@"
`;

const CONTAINER = (dir: string) =>
  `#!/bin/bash
# Fake apple/container CLI: records args; keeps one file per running VM, holding its labels,
# which \`inspect\` prints where the real tool does (configuration.labels).
n=$(ls "${dir}"/container.*.args 2>/dev/null | wc -l)
printf '%s\\0' "$@" > "${dir}/container.$(printf %03d $n).args"
case "$1" in
  --version) echo "container CLI version 0.6.0 (build: release, commit: 3f8c1d2)"; exit 0 ;;
  system)
    if [ -e "${dir}/service-down" ]; then
      echo "Error: apiserver is not running and not registered with launchd" >&2; exit 1
    fi
    echo "apiserver is running"; exit 0 ;;
  inspect)
    if [ -e "${dir}/vm-$2" ]; then
      echo '[{"status":"running","configuration":{"id":"'"$2"'","labels":{'"$(cat "${dir}/vm-$2")"'},"resources":{"cpus":2}}}]'; exit 0
    fi
    echo "Error: notFound: \\"container with ID $2 not found\\"" >&2; exit 1 ;;
  run)
    if [ -e "${dir}/vm-fails" ]; then
      echo 'Error: internalError: "failed to bootstrap container" (cause: "VZErrorDomain Code=2 Virtualization is not available on this hardware.")' >&2
      exit 1
    fi
    name=; labels=
    while [ $# -gt 0 ]; do
      case "$1" in
        --name) name=$2; shift 2 ;;
        --label) k=\${2%%=*}; labels="\${labels:+$labels,}\\"$k\\":\\"\${2#*=}\\""; shift 2 ;;
        *) shift ;;
      esac
    done
    printf '%s' "$labels" > "${dir}/vm-$name"; echo "$name"; exit 0 ;;
  kill|delete)
    for a in "$@"; do rm -f "${dir}/vm-$a"; done; exit 0 ;;
  exec)
    shift
    while [ $# -gt 0 ]; do
      case "$1" in
        --interactive) shift ;;
        --user|--workdir|--env) shift 2 ;;
        *) break ;;
      esac
    done
    [ -e "${dir}/vm-$1" ] || { echo "Error: invalidState: \\"container $1 is not running\\"" >&2; exit 1; }
    shift
    case "$*" in
      *"ip route del default"*) exit 0 ;;
      *coop-probe*) printf 'uid=1000\\nwork=rw\\nhome=hidden\\nusr=readonly\\nroute=none\\nloopback=blocked\\n'; exit 0 ;;
    esac
    exec "$@" ;;
esac
echo "Error: unknown command $1" >&2; exit 64
`;

/** Writes the fakes (`tools` of them) into a new directory. */
export async function fakeTools(tools: ("sandbox-exec" | "container")[]): Promise<FakeTools> {
  const dir = await Deno.makeTempDir({ prefix: "coop-fake-macos-" });
  for (const tool of tools) {
    const path = `${dir}/${tool}`;
    await Deno.writeTextFile(path, tool === "container" ? CONTAINER(dir) : SANDBOX_EXEC(dir));
    await Deno.chmod(path, 0o755);
  }
  const platform: HostPlatform = { os: "darwin", arch: "arm64", toolDirs: [dir] };
  return {
    platform,
    dir,
    async calls(tool) {
      const names: string[] = [];
      for await (const entry of Deno.readDir(dir)) {
        if (entry.name.startsWith(`${tool}.`) && entry.name.endsWith(".args")) {
          names.push(entry.name);
        }
      }
      const order = (name: string) => Number(name.split(".")[1]);
      names.sort((a, b) => order(a) - order(b));
      const calls: string[][] = [];
      for (const name of names) {
        calls.push((await Deno.readTextFile(`${dir}/${name}`)).split("\0").slice(0, -1));
      }
      return calls;
    },
    async lastEnv() {
      return (await Deno.readTextFile(`${dir}/sandbox-exec.env`)).trim().split("\n").sort();
    },
    async fail(mode) {
      await Deno.writeTextFile(`${dir}/${mode}`, "");
    },
    remove: () => Deno.remove(dir, { recursive: true }),
  };
}
