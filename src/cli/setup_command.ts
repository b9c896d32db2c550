/**
 * `coop setup apparmor [--runtime PATH] [--print] [--dir DIR]`: writes and loads the AppArmor
 * profile that lets the runtime Coop runs under create user namespaces on Ubuntu 23.10+
 * (src/sandbox/apparmor_userns.ts). Root only, except `--print`.
 * @module
 */
import { parseArgs } from "node:util";
import { appArmorProfile, appArmorProfileName } from "../sandbox/apparmor_userns.ts";
import { UsageError } from "./usage_error.ts";

/** What the command uses from the outside world; tests pass stand-ins. */
export interface SetupDependencies {
  /** The invoker's uid. */
  uid: number;
  /** The binary the profile is for when `--runtime` is not given (Deno's, or Coop's own). */
  runtime: string;
  /** Runs `apparmor_parser`; throws Deno.errors.NotFound when it is not installed. */
  run: (program: string, args: string[]) => Promise<{ code: number; stderr: string }>;
  /** Writes standard output. */
  out: (text: string) => void;
  /** Writes standard error. */
  err: (text: string) => void;
}

async function runProgram(program: string, args: string[]) {
  const out = await new Deno.Command(program, { args, stdin: "null", stdout: "null" }).output();
  return { code: out.code, stderr: new TextDecoder().decode(out.stderr).trim() };
}

const encoder = new TextEncoder();
const DEFAULTS: SetupDependencies = {
  uid: Deno.uid() ?? 0,
  runtime: Deno.execPath(),
  run: runProgram,
  out: (text) => Deno.stdout.writeSync(encoder.encode(text)),
  err: (text) => Deno.stderr.writeSync(encoder.encode(text)),
};

async function apparmorCommand(args: string[], deps: SetupDependencies): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      runtime: { type: "string" },
      print: { type: "boolean" },
      dir: { type: "string" },
    },
    strict: true,
  });
  const runtime = values.runtime ?? deps.runtime;
  let profile: string;
  try {
    profile = appArmorProfile(runtime);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.print) {
    deps.out(profile);
    return 0;
  }
  if (deps.uid !== 0) {
    deps.err(
      "coop: setup apparmor writes to /etc/apparmor.d and loads a kernel policy: run it as " +
        "root (sudo coop setup apparmor), or see the profile with --print\n",
    );
    return 1;
  }
  const file = `${values.dir ?? "/etc/apparmor.d"}/${appArmorProfileName(runtime)}`;
  await Deno.writeTextFile(file, profile, { mode: 0o644 });
  let loaded;
  try {
    loaded = await deps.run("apparmor_parser", ["-r", file]);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    deps.err(
      `coop: wrote ${file}, but apparmor_parser is not installed (apt install apparmor); ` +
        `load it with: apparmor_parser -r ${file}\n`,
    );
    return 1;
  }
  if (loaded.code !== 0) {
    deps.err(`coop: apparmor_parser could not load ${file}: ${loaded.stderr}\n`);
    return 1;
  }
  deps.out(
    `Loaded AppArmor profile ${appArmorProfileName(runtime)} (${file}): ${runtime} may create ` +
      "user namespaces. Check with: coop sandbox status\n",
  );
  return 0;
}

/** Dispatches `coop setup <what>`; returns the exit status. */
export function setupCommand(
  args: string[],
  deps: SetupDependencies = DEFAULTS,
): Promise<number> {
  const [what, ...rest] = args;
  if (what === "apparmor") return apparmorCommand(rest, deps);
  throw new UsageError(what ? `unknown setup "${what}"` : "setup needs what to set up: apparmor");
}
