/**
 * Coop's public library API: the sandbox (usable alone) and the gateway that runs agent turns.
 *
 * @example
 * ```ts
 * import { exec } from "./mod.ts";
 * const r = await exec({ workspace: "/tmp/ws" }, ["echo", "hello"]);
 * ```
 *
 * @example
 * ```ts
 * import { Gateway, loadConfig } from "./mod.ts";
 * const gateway = Gateway.open(await loadConfig("coop.toml"));
 * const { reply, tools } = await gateway.handle({ channel: "http", sender: "bob", text: "hi" });
 * await gateway.drain();
 * gateway.close();
 * ```
 * @module
 */
export * from "./src/sandbox/mod.ts";
export { Gateway, type GatewayDependencies, GatewayError } from "./src/gateway/gateway.ts";
export { type CoopConfig, loadConfig, parseConfig } from "./src/gateway/config.ts";
export { ConfigError } from "./src/gateway/config_diagnostic.ts";
export type {
  IncomingMessage,
  ToolSummary,
  TurnEvent,
  TurnHandler,
  TurnOutcome,
} from "./src/channels/turn_handler.ts";
export { createHttpHandler, type HttpChannelOptions } from "./src/channels/http_channel.ts";
