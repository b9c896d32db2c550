/**
 * Config diagnostics (one problem, one key path, one message) and `ConfigError`.
 * @module
 */
import type { z } from "zod";
import { CoopError } from "../errors/coop_error.ts";
import { showValue } from "./config_units.ts";

/** One problem found in a config file. */
export interface ConfigDiagnostic {
  /** `error` stops Coop from starting; `warning` is worth a look. */
  severity: "error" | "warning";
  /** A stable code, e.g. `config.unknown_key`. */
  code: string;
  /** The key path, e.g. `users[1].trust`, or `(file)` for the whole file. */
  path: string;
  /** What is wrong and what was expected. */
  message: string;
}

/** An error-level diagnostic: the config must not be used as it is. */
export function configError(code: string, path: string, message: string): ConfigDiagnostic {
  return { severity: "error", code, path, message };
}

/** A warning-level diagnostic: worth a look, Coop still starts. */
export function configWarning(code: string, path: string, message: string): ConfigDiagnostic {
  return { severity: "warning", code, path, message };
}

/** Formats a diagnostic as one line: `file: path: message`. */
export function formatDiagnostic(file: string, diagnostic: ConfigDiagnostic): string {
  return `${file}: ${diagnostic.path}: ${diagnostic.message}`;
}

/** The config could not be read or is invalid; `diagnostics` holds every error. */
export class ConfigError extends CoopError {
  /** The config file the errors are about. */
  readonly file: string;
  /** The errors, each naming its key path. */
  readonly diagnostics: readonly ConfigDiagnostic[];
  constructor(file: string, diagnostics: readonly ConfigDiagnostic[], options?: ErrorOptions) {
    super(
      diagnostics[0]?.code ?? "config.invalid",
      diagnostics.map((d) => formatDiagnostic(file, d)).join("\n"),
      options,
    );
    this.name = "ConfigError";
    this.file = file;
    this.diagnostics = diagnostics;
  }
}

/** Renders a key path the way a TOML author reads it: `users[0].trust`. */
export function formatKeyPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else out += out ? `.${String(key)}` : String(key);
  }
  return out || "(top level)";
}

function getAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value = root;
  for (const key of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function issueMessage(issue: z.core.$ZodIssue, value: unknown): string {
  switch (issue.code) {
    case "invalid_type":
      return value === undefined
        ? `is required (expected ${issue.expected})`
        : `expected ${issue.expected}, got ${showValue(value)}`;
    case "invalid_value":
      return `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}, got ${
        showValue(value)
      }`;
    case "invalid_format":
    case "too_small":
    case "too_big":
      return `${issue.message}, got ${showValue(value)}`;
    default:
      return issue.message;
  }
}

/** Turns schema issues into diagnostics: one per problem, unknown keys one per key. */
export function diagnosticsFromIssues(
  issues: readonly z.core.$ZodIssue[],
  input: unknown,
): ConfigDiagnostic[] {
  const out: ConfigDiagnostic[] = [];
  for (const issue of issues) {
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        out.push({
          severity: "error",
          code: "config.unknown_key",
          path: formatKeyPath([...issue.path, key]),
          message: "unknown key",
        });
      }
      continue;
    }
    out.push({
      severity: "error",
      code: "config.invalid_value",
      path: formatKeyPath(issue.path),
      message: issueMessage(issue, getAt(input, issue.path)),
    });
  }
  return out;
}
