/**
 * The https path: the connection counts as up only once TLS is, so a server that takes the TCP
 * connection but never finishes the handshake is a connect timeout. A throwaway certificate for
 * `localhost` is made with openssl for the run.
 */
import net from "node:net";
import tls from "node:tls";
import { runTurn, TurnError } from "../../src/agent/agent_loop.ts";
import type { Dialer } from "../../src/agent/http_transport.ts";
import { ProviderTimeoutError } from "../../src/agent/provider_error.ts";
import { createProvider } from "../../src/agent/provider_registry.ts";
import { assert, assertEquals, assertRejects } from "../assert.ts";
import { turnOptions } from "./turn_fixture.ts";
import { ANTHROPIC } from "./wire_formats.ts";

async function selfSignedLocalhost(): Promise<{ cert: string; key: string }> {
  const dir = await Deno.makeTempDir({ prefix: "coop-tls-" });
  try {
    const { success, stderr } = await new Deno.Command("openssl", {
      args: [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=DNS:localhost",
        "-keyout",
        `${dir}/key.pem`,
        "-out",
        `${dir}/cert.pem`,
      ],
      stdout: "null",
      stderr: "piped",
    }).output();
    assert(
      success,
      `openssl could not make a test certificate: ${new TextDecoder().decode(stderr)}`,
    );
    return {
      cert: await Deno.readTextFile(`${dir}/cert.pem`),
      key: await Deno.readTextFile(`${dir}/key.pem`),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Dials 127.0.0.1 with TLS, trusting `ca` for `localhost` (the real dialer trusts the system). */
const trusting = (ca: string): Dialer => ({ port }) =>
  tls.connect({
    host: "127.0.0.1",
    port,
    servername: "localhost",
    ca,
    ALPNProtocols: ["http/1.1"],
  });

Deno.test("https: a turn streams over TLS with the timeouts armed", async () => {
  const { cert, key } = await selfSignedLocalhost();
  const reply = ANTHROPIC.text(["over ", "TLS"]);
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, cert, key, onListen: () => {} },
    async (request) => {
      await request.text();
      return new Response(reply.chunks!.join(""), { headers: reply.headers });
    },
  );
  try {
    const provider = createProvider(
      {
        name: "tls",
        kind: "anthropic",
        base_url: `https://localhost:${server.addr.port}`,
        connect_timeout: 2000,
        first_byte_timeout: 2000,
        idle_timeout: 2000,
      },
      { http: { dial: trusting(cert) } },
    );
    const result = await runTurn(turnOptions(provider));
    assertEquals(result.reply, "over TLS");
  } finally {
    await server.shutdown();
  }
});

Deno.test("https: a TCP connection whose TLS handshake never finishes is a connect timeout", async () => {
  const { cert } = await selfSignedLocalhost();
  // Takes the connection, reads the ClientHello, never answers it.
  const sockets = new Set<net.Socket>();
  const silent = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("data", () => {});
  });
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  const port = (silent.address() as net.AddressInfo).port;
  try {
    const provider = createProvider(
      {
        name: "tls",
        kind: "anthropic",
        base_url: `https://localhost:${port}`,
        connect_timeout: 300,
      },
      { retry: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 }, http: { dial: trusting(cert) } },
    );
    const started = performance.now();
    const error = await assertRejects(() => runTurn(turnOptions(provider)), TurnError);
    const elapsedMs = performance.now() - started;
    assert(error.cause instanceof ProviderTimeoutError, `cause: ${error.cause}`);
    assertEquals(error.cause.phase, "connect");
    assert(elapsedMs >= 300 && elapsedMs < 3300, `took ${elapsedMs} ms`);
    // The server may see its connection only now: after a stall, the client's due timer ran
    // before the accept waiting in the same process.
    if (sockets.size === 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        new Promise((resolve) => silent.once("connection", resolve)),
        new Promise((resolve) => timer = setTimeout(resolve, 5000)),
      ]);
      clearTimeout(timer);
    }
    assert(sockets.size === 1, "the TCP connection itself was made");
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  }
});
