/**
 * Leak scan cost (issue 13): `LeakDetector.redact` over 64 KiB of tool output, with the secrets
 * a gateway typically holds (two provider keys, three channel tokens) and every credential shape
 * of the table. Three texts: command output (`ls -l` lines), random printable ASCII, and base64
 * (as a tool's output arrives: decoded from bytes). Run by `deno task bench`; informational.
 * @module
 */
import { Buffer } from "node:buffer";
import { LeakDetector } from "../src/leaks/leak_detector.ts";

const SIZE = 64 * 1024;
const WARMUP = 300;
const RUNS = 1000;
/** Goal from issue 13, per 64 KiB scanned, at p50. */
const GOAL_MS = 0.2;

/** Nearest-rank percentile (p in 0..100) of sorted samples. */
function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** `n` characters of deterministic pseudo-random printable ASCII. */
function printable(n: number, seed = 7): string {
  let x = seed;
  const bytes = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    bytes[i] = 32 + ((x >>> 16) % 95);
  }
  return new TextDecoder().decode(bytes);
}

const decoded = (text: string) => new TextDecoder().decode(new TextEncoder().encode(text));

function texts(): Array<[string, string]> {
  const line = "-rw-r--r-- 1 bob bob  4096 Nov 24 08:45 report_2026_11_24.csv\n";
  const ls = decoded(line.repeat(Math.ceil(SIZE / line.length)).slice(0, SIZE));
  const base64 = decoded(Buffer.from(printable(SIZE, 3)).toString("base64").slice(0, SIZE));
  return [["command output (ls -l)", ls], ["random printable", printable(SIZE)], [
    "base64",
    base64,
  ]];
}

function main(): void {
  const secrets = [
    ["provider_key", `sk-ant-api03-${printable(80, 1).replace(/[^A-Za-z0-9]/g, "x")}`],
    ["provider_key", `sk-proj-${printable(48, 2).replace(/[^A-Za-z0-9]/g, "y")}`],
    ["channel_token", "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"],
    ["channel_token", "http-token-bob-4f9a2c7e1d88"],
    ["channel_token", "http-token-carol-0b7e55aa91c3"],
  ].map(([kind, value]) => ({ kind, value, label: kind }));
  const compileStart = performance.now();
  const detector = new LeakDetector(secrets);
  const compileMs = performance.now() - compileStart;
  console.log(
    `leak scan: ${secrets.length} held secrets (each in 8–12 forms) and the credential-shape ` +
      `table, compiled in ${compileMs.toFixed(1)} ms; ${RUNS} scans of 64 KiB after ${WARMUP}`,
  );
  for (const [name, text] of texts()) {
    for (let i = 0; i < WARMUP; i++) detector.redact(text);
    const samples: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const start = performance.now();
      detector.redact(text);
      samples.push(performance.now() - start);
    }
    samples.sort((a, b) => a - b);
    const p50 = percentile(samples, 50);
    const mark = p50 <= GOAL_MS ? "✓ met" : "✗ not met";
    console.log(
      `  ${name.padEnd(26)} min ${samples[0].toFixed(3)}  p50 ${p50.toFixed(3)}  p90 ` +
        `${percentile(samples, 90).toFixed(3)} ms   goal ≤ ${GOAL_MS} ms per 64 KiB  ${mark}`,
    );
  }
}

if (import.meta.main) main();
