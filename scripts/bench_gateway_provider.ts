/**
 * The scripted model server of `bench_gateway.ts`, run as its own process: a real provider is
 * remote, so its work (reading the request, answering) must not run on the gateway's event loop
 * and be counted as the gateway's. The Messages API on 127.0.0.1, answering at once: a turn's
 * request holds the user's message and then one call and one result per step so far, so its
 * length says which reply is next — `calls` replies with one `bash` call each, then `final`.
 * Prints its port on the first line of stdout; exits when stdin closes (the bench ended).
 *
 * Usage: `deno run --allow-net=127.0.0.1 bench_gateway_provider.ts <calls> <command> <final>`
 * @module
 */
import type { ScriptedReply } from "../tests/agent/scripted_server.ts";
import { ANTHROPIC } from "../tests/agent/wire_formats.ts";

const [callsArg, command, finalText] = Deno.args;
const calls = Number(callsArg);
if (!Number.isInteger(calls) || calls < 0 || command === undefined || finalText === undefined) {
  console.error("usage: bench_gateway_provider.ts <calls> <command> <final text>");
  Deno.exit(2);
}

const body = (reply: ScriptedReply) => (reply.chunks ?? []).join("");
const args = JSON.stringify({ command });
const toolCalls = Array.from(
  { length: calls },
  (_, step) => body(ANTHROPIC.toolCall(`toolu_${step}`, "bash", [args])),
);
const final = body(ANTHROPIC.text([finalText]));
const headers = { "content-type": "text/event-stream" };

const server = Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  onListen: ({ port }) => console.log(port),
}, async (request) => {
  const { messages } = await request.json() as { messages: unknown[] };
  const step = (messages.length - 1) / 2;
  if (!Number.isInteger(step) || step > calls) {
    return Response.json({ type: "error", error: { message: "unexpected request" } }, {
      status: 400,
    });
  }
  return new Response(step < calls ? toolCalls[step] : final, { headers });
});

// The bench holds our stdin open for as long as it runs; its end (or the bench's) ends us.
for await (const _ of Deno.stdin.readable) { /* nothing is sent; wait for the end */ }
await server.shutdown();
