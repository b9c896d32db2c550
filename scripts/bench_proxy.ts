/**
 * The cost of network "proxy": `exec(["sh","-c","true"])` p50 with network "proxy" vs "none"
 * (rounds alternate to share the noise), and the throughput of a 100 MB download from a
 * loopback server — curl inside the sandbox through the forwarder and the policy proxy (plain
 * HTTP and a CONNECT tunnel, and `curl --noproxy` through transparent capture) vs curl on the
 * host straight to the server; and the connection setup that capture adds (connect, request,
 * first byte of a tiny response, by name, from Python) over the same on the host. The server
 * runs in its own process so that it does not share the proxy's event loop. Run by `deno task bench`
 * (scripts/bench.ts); informational, never fails.
 * @module
 */
import { fileURLToPath } from "node:url";
import { exec } from "../src/sandbox/mod.ts";

const ROUNDS = 4;
const RUNS_PER_ROUND = 50;
const DOWNLOAD_BYTES = 100 * 2 ** 20;
const DOWNLOADS = 3;
const GOAL_THROUGHPUT_RATIO = 0.5;
const CONNECTS = 200;
const GOAL_SETUP_ADDED_MS = 1;

/** In a child: serves DOWNLOAD_BYTES on 127.0.0.1 and prints the port. */
function serve(): void {
  const chunk = new Uint8Array(1 << 20).fill(120);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    if (new URL(req.url).pathname === "/small") return new Response("ok\n");
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= DOWNLOAD_BYTES) return controller.close();
        controller.enqueue(chunk);
        sent += chunk.length;
      },
    });
    return new Response(body, { headers: { "content-length": String(DOWNLOAD_BYTES) } });
  });
  console.log(server.addr.port);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function execP50(workspace: string, network: "none" | "proxy"): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < RUNS_PER_ROUND + 5; i++) {
    const t = performance.now();
    await exec({ workspace, network }, ["sh", "-c", "true"]);
    if (i >= 5) samples.push(performance.now() - t);
  }
  return median(samples);
}

/** Parses curl's `-w '%{size_download} %{time_total}'` into MB/s (10^6 bytes). */
function throughput(text: string): number {
  const [size, seconds] = text.trim().split(" ").map(Number);
  if (size !== DOWNLOAD_BYTES) throw new Error(`downloaded ${size} bytes, not ${DOWNLOAD_BYTES}`);
  return size / seconds / 1e6;
}

const CURL_OUT = ["-sS", "-o", "/dev/null", "-w", "%{size_download} %{time_total}"];

/** Python: CONNECTS times connect to argv[1]:argv[2] (or, with argv[3] "proxy", through
 * HTTP_PROXY), ask for /small, read the first byte; the p50 in ms. */
const SETUP_PROBE = `import base64, os, socket, sys, time, urllib.parse
host, port = sys.argv[1], int(sys.argv[2])
request = b"GET /small HTTP/1.0\\r\\n\\r\\n"
if sys.argv[3:] == ["proxy"]:
    proxy = urllib.parse.urlsplit(os.environ["HTTP_PROXY"])
    auth = base64.b64encode(("%s:%s" % (proxy.username, proxy.password)).encode()).decode()
    request = ("GET http://%s:%d/small HTTP/1.0\\r\\nProxy-Authorization: Basic %s\\r\\n\\r\\n"
               % (host, port, auth)).encode()
    host, port = proxy.hostname, proxy.port
samples = []
for i in range(${CONNECTS}):
    t = time.perf_counter()
    s = socket.create_connection((host, port))
    s.sendall(request)
    s.recv(1)
    samples.append(time.perf_counter() - t)
    s.close()
samples.sort()
print("%.3f" % (samples[len(samples) // 2] * 1000))`;

async function main(): Promise<void> {
  const workspace = await Deno.makeTempDir({ prefix: "coop-bench-proxy-" });
  const none: number[] = [], proxy: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    none.push(await execP50(workspace, "none"));
    proxy.push(await execP50(workspace, "proxy"));
  }
  const noneP50 = median(none), proxyP50 = median(proxy);
  console.log(
    `network proxy vs none: exec() p50 over ${ROUNDS} alternating rounds of ` +
      `${RUNS_PER_ROUND}`,
  );
  console.log(`  none   ${noneP50.toFixed(2)} ms`);
  console.log(
    `  proxy  ${proxyP50.toFixed(2)} ms   (+${(proxyP50 - noneP50).toFixed(2)} ms: ` +
      "the proxy's socket, the forwarder's fork)",
  );

  const server = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-net", "--quiet", fileURLToPath(new URL(import.meta.url)), "--serve"],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = server.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const port = Number((await reader.read()).value?.trim());
  const url = `http://bench.test:${port}/`;
  const options = {
    proxy: { resolve: () => Promise.resolve(["127.0.0.1"]), allowPrivateAddresses: true },
  };
  const policy = { workspace, network: "proxy" as const, allowDomains: [`bench.test:${port}`] };
  const direct: number[] = [], plain: number[] = [], tunnel: number[] = [], captured: number[] = [];
  let setupDirect = 0, setupCaptured = 0, setupProxied = 0;
  try {
    for (let i = 0; i < DOWNLOADS; i++) {
      const out = await new Deno.Command("curl", {
        args: [...CURL_OUT, `http://127.0.0.1:${port}/`],
      }).output();
      direct.push(throughput(new TextDecoder().decode(out.stdout)));
      const p = await exec(policy, ["curl", ...CURL_OUT, url], options);
      plain.push(throughput(p.stdout));
      const t = await exec(policy, ["curl", "-p", ...CURL_OUT, url], options);
      tunnel.push(throughput(t.stdout));
      const c = await exec(policy, ["curl", "--noproxy", "*", ...CURL_OUT, url], options);
      captured.push(throughput(c.stdout));
    }
    const probe = ["python3", "-c", SETUP_PROBE];
    const host = await new Deno.Command(probe[0], {
      args: [...probe.slice(1), "127.0.0.1", `${port}`],
    })
      .output();
    setupDirect = Number(new TextDecoder().decode(host.stdout));
    const inside = async (...args: string[]) =>
      Number((await exec(policy, [...probe, "bench.test", `${port}`, ...args], options)).stdout);
    setupCaptured = await inside();
    setupProxied = await inside("proxy");
  } finally {
    server.kill();
    await server.status;
    await Deno.remove(workspace, { recursive: true });
  }
  const d = median(direct), pl = median(plain), tu = median(tunnel), ca = median(captured);
  const mark = (ratio: number) => (ratio >= GOAL_THROUGHPUT_RATIO ? "ok" : "MISSED");
  console.log(
    `100 MB from a loopback server, median of ${DOWNLOADS} (goal: proxy ≥ ` +
      `${GOAL_THROUGHPUT_RATIO * 100} % of direct)`,
  );
  console.log(`  direct (curl on the host)        ${d.toFixed(0).padStart(6)} MB/s`);
  console.log(
    `  proxy, plain HTTP                ${pl.toFixed(0).padStart(6)} MB/s  ` +
      `${(pl / d * 100).toFixed(0)} %  ${mark(pl / d)}`,
  );
  console.log(
    `  proxy, CONNECT tunnel            ${tu.toFixed(0).padStart(6)} MB/s  ` +
      `${(tu / d * 100).toFixed(0)} %  ${mark(tu / d)}`,
  );
  console.log(
    `  transparent capture (--noproxy)  ${ca.toFixed(0).padStart(6)} MB/s  ` +
      `${(ca / d * 100).toFixed(0)} %  ${mark(ca / d)}`,
  );
  const added = setupCaptured - setupDirect;
  console.log(
    `connection setup by name, p50 of ${CONNECTS} (connect, request, first byte; goal: ≤ ` +
      `${GOAL_SETUP_ADDED_MS} ms added)`,
  );
  console.log(`  direct (Python on the host)      ${setupDirect.toFixed(3)} ms`);
  console.log(`  through HTTP_PROXY (reference)   ${setupProxied.toFixed(3)} ms`);
  console.log(
    `  transparent capture              ${setupCaptured.toFixed(3)} ms  (+${
      added.toFixed(3)
    } ms) ` +
      `${added <= GOAL_SETUP_ADDED_MS ? "ok" : "MISSED"}`,
  );
}

if (Deno.args.includes("--serve")) serve();
else if (import.meta.main) await main();
