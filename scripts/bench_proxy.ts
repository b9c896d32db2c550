/**
 * The cost of network "proxy": `exec(["sh","-c","true"])` p50 with network "proxy" vs "none"
 * (rounds alternate to share the noise), and the throughput of a 100 MB download from a
 * loopback server — curl inside the sandbox through the forwarder and the policy proxy (plain
 * HTTP and a CONNECT tunnel) vs curl on the host straight to the server. The server runs in its
 * own process so that it does not share the proxy's event loop. Run by `deno task bench`
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

/** In a child: serves DOWNLOAD_BYTES on 127.0.0.1 and prints the port. */
function serve(): void {
  const chunk = new Uint8Array(1 << 20).fill(120);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
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
  const direct: number[] = [], plain: number[] = [], tunnel: number[] = [];
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
    }
  } finally {
    server.kill();
    await server.status;
    await Deno.remove(workspace, { recursive: true });
  }
  const d = median(direct), pl = median(plain), tu = median(tunnel);
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
}

if (Deno.args.includes("--serve")) serve();
else if (import.meta.main) await main();
