/**
 * `coop init` and `coop rebuild`: build the base layer of every environment coop.toml refers
 * to (or the Coopfile named with `--coopfile`). `init` keeps a base already built from the same
 * Coopfile hash; `rebuild` always builds. Progress goes to stderr; `--json` prints one result.
 * @module
 */
import { existsSync } from "node:fs";
import { basename, dirname, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { CoopConfig } from "../config/config.ts";
import { loadConfig } from "../config/config.ts";
import { gatewaySockets } from "../config/gateway_sockets.ts";
import { ConfigError, formatDiagnostic } from "../config/config_diagnostic.ts";
import { applyCoopfileFlags, loadCoopfile } from "../config/coopfile_load.ts";
import { CoopError } from "../errors/coop_error.ts";
import { BaseBuildError, buildBase, type BuildResult } from "../environments/base_builder.ts";
import { lineProgress, SILENT_PROGRESS } from "../environments/build_progress.ts";
import { sizeText } from "../environments/size_text.ts";
import { referencedEnvironments } from "../environments/environment_lifecycle.ts";
import { callerPath } from "./caller_path.ts";
import { writeStderr } from "./stderr.ts";

/** One environment's outcome as `--json` prints it. */
export type InitOutcome =
  | BuildResult
  | { coopfile: string; status: "failed"; code: string; step?: string; error: string };

/** `coop init` (`force` false) or `coop rebuild` (`force` true). */
export async function initCommand(args: string[], force: boolean): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      config: { type: "string", default: "coop.toml" },
      coopfile: { type: "string" },
      image: { type: "string" },
      package: { type: "string", multiple: true },
      network: { type: "string" },
      json: { type: "boolean", default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  const name = force ? "coop rebuild" : "coop init";
  const configFile = callerPath(values.config);
  let config: CoopConfig;
  try {
    config = await loadConfig(configFile);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const d of error.diagnostics) writeStderr(`error: ${formatDiagnostic(configFile, d)}\n`);
    return 1;
  }
  const coopfiles = values.coopfile !== undefined
    ? [callerPath(values.coopfile)]
    : [...referencedEnvironments(config).keys()];
  if (coopfiles.length === 0) {
    const fallback = resolve(dirname(configFile), "Coopfile");
    if (!existsSync(fallback)) {
      writeStderr(
        `${name}: ${configFile} refers to no environment ([sandbox] environment) and ` +
          `${fallback} does not exist; name one with --coopfile PATH\n`,
      );
      return 1;
    }
    coopfiles.push(fallback);
  }
  const outcomes: InitOutcome[] = [];
  for (const path of coopfiles) outcomes.push(await initOne(path, config, values, force, name));
  if (values.json) console.log(JSON.stringify({ environments: outcomes }, null, 2));
  else for (const outcome of outcomes) console.log(describe(outcome));
  return outcomes.some((o) => o.status === "failed") ? 1 : 0;
}

async function initOne(
  path: string,
  config: CoopConfig,
  values: { image?: string; package?: string[]; network?: string; json: boolean },
  force: boolean,
  name: string,
): Promise<InitOutcome> {
  try {
    const coopfile = applyCoopfileFlags(loadCoopfile({ project: path }), {
      image: values.image,
      packages: values.package,
      network: values.network,
    });
    return await buildBase({
      stateDir: config.agent.stateDir,
      coopfilePath: path,
      coopfile,
      force,
      neverDial: gatewaySockets(config),
      progress: values.json ? SILENT_PROGRESS : lineProgress(`${name} ${basename(path)}`),
    });
  } catch (error) {
    if (!(error instanceof CoopError)) throw error;
    const message = error instanceof ConfigError
      ? error.diagnostics.map((d) => formatDiagnostic(error.file, d)).join("\n")
      : error.message;
    if (!values.json) writeStderr(`${name}: error: ${message}\n`);
    return {
      coopfile: path,
      status: "failed",
      code: error.code,
      step: error instanceof BaseBuildError ? error.step : undefined,
      error: message,
    };
  }
}

/** One line per environment for the terminal. */
function describe(outcome: InitOutcome): string {
  if (outcome.status === "failed") return `${outcome.coopfile}: failed (${outcome.code})`;
  const m = outcome.manifest;
  const verb = outcome.status === "built" ? "built" : "up to date, built";
  const { devices, fifos, setIdBits } = outcome.skipped;
  const notes = [
    devices ? `${devices} device nodes` : "",
    fifos ? `${fifos} FIFOs` : "",
    setIdBits ? `set-id bits of ${setIdBits} files` : "",
  ].filter(Boolean);
  return `${outcome.coopfile}: ${m.image} ${verb} ${m.builtAt}, ${sizeText(m.sizeBytes)}` +
    (m.packages.length ? `, packages: ${m.packages.join(" ")}` : "") +
    (notes.length ? ` (not created: ${notes.join(", ")})` : "");
}
