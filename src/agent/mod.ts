/**
 * The agent runtime: LLM providers and the agent loop.
 * @module
 */
export * from "./agent_loop.ts";
export * from "./anthropic.ts";
export * from "./http_retry.ts";
export * from "./http_transport.ts";
export * from "./openai.ts";
export * from "./provider.ts";
export * from "./provider_error.ts";
export * from "./provider_registry.ts";
export * from "./sse.ts";
export * from "./sse_provider.ts";
export * from "./system_prompt.ts";
export * from "./tool_call_accumulator.ts";
export * from "./tool_calls.ts";
