/**
 * The contract between the agent loop and a tool: arguments in, text out, errors as values.
 * @module
 */
import { z } from "zod";
import type { ExecResult, WorkspaceQuotas } from "../sandbox/mod.ts";
import { CoopError, errorMessage } from "../errors/coop_error.ts";
import type { MemoryHit } from "../state/memory_store.ts";
import type { MemoryStoreName } from "../trust/trust_level.ts";

/** The outcome of one command run by `bash`, wherever it ran (the sandbox's result shape);
 * the limit fields are present when it ran in the sandbox. */
export type CommandResult =
  & Omit<ExecResult, "hardening" | SandboxOnly>
  & Partial<Pick<ExecResult, SandboxOnly>>;

/** Result fields only a sandboxed command has. */
type SandboxOnly =
  | "cpu"
  | "limits"
  | "oomKilled"
  | "pidsLimitHit"
  | "proxyDenials"
  | "proxyRefusedConnections"
  | "disk";

/** How one command runs, besides what it runs. */
export interface CommandOptions {
  /** Wall-clock limit. */
  timeoutMs: number;
  /** Kills the command when aborted. */
  signal?: AbortSignal;
  /**
   * The working directory as a path below the scope root (`""` or absent: the root itself),
   * already resolved and checked by `resolveWorkingDir`.
   */
  workingDir?: string;
  /** Extra environment variables (`exec`), names already checked by `dangerousEnvProblem`. */
  env?: Record<string, string>;
}

/** Runs a shell command where the caller's trust says it must run (host or sandbox). */
export type CommandRunner = (command: string, options: CommandOptions) => Promise<CommandResult>;

/** Runs a program with its arguments, no shell, where the caller's trust says it must run. */
export type ArgvRunner = (
  argv: readonly string[],
  options: CommandOptions,
) => Promise<CommandResult>;

/** The memory stores as one tool call may use them; every method is already authorized. */
export interface MemoryAccess {
  /** Saves `text` in `store`; throws `ToolError` when this turn may not write there. */
  write(store: MemoryStoreName, text: string): { id: number };
  /** Searches every store this turn may read; `searched` lists them. */
  search(
    query: string,
    limit: number,
  ): { searched: readonly MemoryStoreName[]; hits: MemoryHit[] };
  /** Returns memory `id`; throws `ToolError` when there is none this turn may read. */
  get(id: number): MemoryHit;
  /** Deletes memory `id`; throws `ToolError` unless this turn may forget it (its own entry). */
  forget(id: number): void;
}

/** The directory a tool call may see: its real location and the name the principal uses for it. */
export interface PathScope {
  /** Absolute host directory; file tools never leave it. */
  hostRoot: string;
  /** The same directory as the principal's `bash` sees it (`/work` inside the sandbox). */
  visibleRoot: string;
  /**
   * For a non-owner: directory names the owner's tools trust (`protected_names`, e.g. `.git`),
   * read-only in the sandbox. File tools then refuse to write beneath any of them, at any
   * depth, and follow no symlink when writing. Absent for the owner.
   */
  protectedNames?: readonly string[];
  /**
   * For a non-owner with a `disk_quota` or `inode_quota`: the quotas their sandboxed commands
   * run under. File tools then see the workspace as those commands do (its quota image mounted)
   * and refuse a write that would take it past either (file_quota.ts). Absent: no quota.
   */
  quota?: WorkspaceQuotas;
}

/** Everything a tool needs for one call, built by the executor after authorization. */
export interface ToolContext {
  /** The directory this call is confined to. */
  scope: PathScope;
  /** Runs `bash` commands in the right place; absent for principals without `bash`. */
  runCommand?: CommandRunner;
  /** Runs `exec` programs in the right place; absent for principals without `exec`. */
  runArgv?: ArgvRunner;
  /** Largest file `send_file` sends (`[agent] max_send_file_size`); default 10 MiB. */
  maxSendFileBytes?: number;
  /** The memory stores, gated for this turn; absent when memory is not configured. */
  memory?: MemoryAccess;
  /** Default `bash` timeout when the model gives none. */
  defaultTimeoutMs: number;
  /** Largest `bash` timeout the model may ask for. */
  maxTimeoutMs: number;
  /** Cap on the text returned to the model. */
  maxOutputChars: number;
  /** Aborted when the turn is cancelled; tools stop their work (bash kills its command). */
  signal?: AbortSignal;
}

/** What a tool returns to the model: text, flagged when it describes a failure. */
export interface ToolResult {
  /** True when `content` explains why the call failed. */
  isError: boolean;
  /** The text the model sees. */
  content: string;
  /** The command's exit code, for tools that run one (`bash`). */
  exitCode?: number;
  /** A file to send to the caller's chat after the reply (`send_file`). */
  file?: ToolFile;
}

/** A file a tool hands to the gateway for the chat (the gateway's `OutgoingFile`). */
export interface ToolFile {
  /** The file's name without its directory. */
  name: string;
  /** Its media type, e.g. `text/plain`. */
  mediaType: string;
  /** Its content. */
  bytes: Uint8Array;
}

/** A tool the agent can call. */
export interface Tool {
  /** The name the model calls it by, e.g. `read_file`. */
  readonly name: string;
  /** One paragraph for the model. */
  readonly description: string;
  /** JSON Schema of the arguments, for the provider. */
  readonly parameters: Record<string, unknown>;
  /** True when the tool only reads (allowed for `familiar`). */
  readonly readOnly: boolean;
  /** Runs the tool; throws `ToolError` for anything the model should be told. */
  run(args: unknown, context: ToolContext): Promise<ToolResult>;
}

/** A failure the model should read and can fix: bad arguments, a path outside the scope, … */
export class ToolError extends CoopError {
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.name = "ToolError";
  }
}

/** Parses tool arguments with `schema`, turning every problem into a `ToolError`. */
export function parseToolArguments<T extends z.ZodType>(
  tool: string,
  schema: T,
  args: unknown,
): z.output<T> {
  const result = schema.safeParse(args);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue.path.length ? `"${issue.path.join(".")}"` : "arguments";
  const detail = issue.code === "unrecognized_keys"
    ? `unknown argument ${issue.keys.map((k) => `"${k}"`).join(", ")}`
    : `${where}: ${issue.message}`;
  throw new ToolError("tool.invalid_arguments", `${tool}: invalid arguments: ${detail}`);
}

/** Runs `tool` and never throws: every failure becomes a `ToolResult` with `isError`. */
export async function runTool(
  tool: Tool,
  args: unknown,
  context: ToolContext,
): Promise<ToolResult> {
  try {
    return await tool.run(args, context);
  } catch (error) {
    if (error instanceof CoopError) return { isError: true, content: error.message };
    // Anything else is a bug or an OS error; the model still gets a reply, not a crash.
    const message = errorMessage(error);
    return { isError: true, content: `${tool.name} failed: ${message}` };
  }
}
