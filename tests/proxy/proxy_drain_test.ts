// PolicyProxy.drain(): what a sandbox sent before it ended is decided before its result reads
// the denials (running_sandbox.ts), even when nobody is left to read the answers.
import { assert, assertEquals } from "../assert.ts";
import { startPolicyProxy } from "../../src/sandbox/proxy/policy_proxy.ts";
import { relayThreads, relayThreadsSettleAt } from "../sandbox/harness.ts";

Deno.test({
  name: "proxy: drain() decides every request queued when the clients are gone",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const proxy = await startPolicyProxy({ allowDomains: [] });
    const auth = `Proxy-Authorization: Basic ${btoa(`coop:${proxy.token}`)}\r\n`;
    const encoder = new TextEncoder();
    const hosts = Array.from({ length: 20 }, (_, i) => `denied${i}.test`);
    try {
      // Like a sandbox that ends right after its requests: each is written whole and its
      // client gone before the proxy has read it (most still sit in the listen backlog).
      for (const host of hosts) {
        const conn = await Deno.connect({ transport: "unix", path: proxy.socketPath });
        await conn.write(encoder.encode(`CONNECT ${host}:443 HTTP/1.1\r\n${auth}\r\n`));
        conn.close();
      }
      // A head that never ends: draining does not wait for the rest of it.
      const partial = await Deno.connect({ transport: "unix", path: proxy.socketPath });
      await partial.write(encoder.encode("CONNECT never"));
      partial.close();
      await proxy.drain();
      assertEquals(
        proxy.denials.map((d) => d.host).sort(),
        [...hosts].sort(),
        "one denial per request",
      );
    } finally {
      await proxy.close();
    }
    assert(await relayThreadsSettleAt(0), `close() joins every relay thread: ${relayThreads()}`);
  },
});
