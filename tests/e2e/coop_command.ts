/**
 * Runs one `coop` subcommand (`init`, `check`, `sandbox reset` …) to its end in a test's Coop
 * home, with the same environment `coop start` gets there.
 * @module
 */
import { coopArgv, type CoopHome } from "./gateway_process.ts";

/** Runs a `coop` subcommand to its end; returns its status and output. */
export async function runCoop(
  home: CoopHome,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  const [cmd, ...rest] = coopArgv(...args);
  const out = await new Deno.Command(cmd, {
    args: rest,
    env: home.env(),
    clearEnv: true,
    stdin: "null",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: out.code,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
  };
}
