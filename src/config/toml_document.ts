/**
 * A TOML document parsed and validated against a schema, with coop.toml's error shape: a syntax
 * error names its line and column, a schema error every key path at fault.
 * @module
 */
import { parse as parseToml, TomlError } from "smol-toml";
import type { z } from "zod";
import { ConfigError, diagnosticsFromIssues } from "./config_diagnostic.ts";

/** Parses `text` (the contents of `file`) and validates it with `schema`; throws `ConfigError`. */
export function parseTomlDocument<S extends z.ZodType>(
  text: string,
  file: string,
  schema: S,
): z.output<S> {
  let data: unknown;
  try {
    data = parseToml(text);
  } catch (error) {
    if (!(error instanceof TomlError)) throw error;
    // smol-toml's message repeats the source with a caret; keep its first line only.
    const reason = error.message.split("\n")[0].replace(/^Invalid TOML document: /, "");
    throw new ConfigError(file, [{
      severity: "error",
      code: "config.syntax",
      path: `line ${error.line}, column ${error.column}`,
      message: `TOML syntax error: ${reason}`,
    }], { cause: error });
  }
  const result = schema.safeParse(data);
  if (!result.success) {
    throw new ConfigError(file, diagnosticsFromIssues(result.error.issues, data));
  }
  return result.data;
}
