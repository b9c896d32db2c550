/**
 * The compiled build's loader without `deno compile` (whose runtime cannot be downloaded
 * here): a copy of the sources with no build/ and no ffi/, plus the embedded-bytes module and
 * entry point `scripts/embed_library.ts` generates for `deno task compile`. The library must
 * come from a sealed memfd, never from a file, and tampered or unrecorded bytes are refused.
 */
import { createHash } from "node:crypto";
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { sandboxTest } from "./harness.ts";
import {
  type EmbeddedRecord,
  entrySource,
  libraryModuleSource,
  recordOf,
} from "../../scripts/embed_library.ts";
import { hashSources } from "../../src/sandbox/source_hash.ts";
import { sealEmbeddedLibrary } from "../../src/sandbox/embedded_library.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const text = new TextDecoder();

const PROBE_MAIN = `import { readFileSync } from "node:fs";
import { probe } from "../mod.ts";
export async function run(): Promise<number> {
  const report = await probe();
  const mapped = readFileSync("/proc/self/maps", "utf8").split("\\n")
    .map((line) => line.split(/\\s+/).slice(5).join(" "))
    .filter((path) => /coop-sandbox|libcoop/.test(path));
  console.log(JSON.stringify({
    available: report.available,
    error: report.error,
    checks: report.checks.length,
    failed: report.checks.filter((c) => !c.ok).map((c) => c.label + ": " + c.evidence),
    mapped: [...new Set(mapped)],
  }));
  return 0;
}
`;

interface Outcome {
  available: boolean;
  error?: string;
  checks: number;
  failed: string[];
  mapped: string[];
}

async function genuineRecord(): Promise<EmbeddedRecord> {
  const bytes = await Deno.readFile(`${ROOT}build/libcoop_sandbox.so`);
  return recordOf(bytes, await hashSources(`${ROOT}ffi`));
}

/** Runs the probe from a copy of the sources without build/ and ffi/, embedding `record`. */
async function probeCompiledLayout(record: EmbeddedRecord): Promise<Outcome> {
  const dir = await Deno.makeTempDir({ prefix: "coop-compiled-layout-" });
  try {
    for (const entry of ["src", "mod.ts", "deno.json", "deno.lock"]) {
      const copy = await new Deno.Command("cp", { args: ["-r", `${ROOT}${entry}`, dir] }).output();
      assertEquals(copy.code, 0, text.decode(copy.stderr));
    }
    await Deno.mkdir(`${dir}/compiled`);
    await Deno.writeTextFile(`${dir}/compiled/library_bytes.ts`, libraryModuleSource(record));
    await Deno.writeTextFile(`${dir}/compiled/probe_main.ts`, PROBE_MAIN);
    await Deno.writeTextFile(
      `${dir}/compiled/main.ts`,
      entrySource("../src/sandbox", "./probe_main.ts", "run"),
    );
    for (const absent of ["build", "ffi"]) {
      assertEquals(await Deno.stat(`${dir}/${absent}`).then(() => true, () => false), false);
    }
    const env = { ...Deno.env.toObject() };
    delete env.COOP_SANDBOX_LIB;
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-all",
        "--quiet",
        "--config",
        `${dir}/deno.json`,
        `${dir}/compiled/main.ts`,
      ],
      clearEnv: true,
      env,
      stdin: "null",
    }).output();
    assertEquals(out.code, 0, text.decode(out.stderr));
    // Nothing of the library was written into the layout (it would be a .so, or its bytes).
    const find = await new Deno.Command("find", { args: [dir, "-name", "*.so*"] }).output();
    assertEquals(text.decode(find.stdout), "");
    return JSON.parse(text.decode(out.stdout).trim().split("\n").pop()!);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

sandboxTest(
  "compiled layout: the embedded library loads from a sealed memfd and the probe passes with no build/ and no ffi/",
  async () => {
    const outcome = await probeCompiledLayout(await genuineRecord());
    assertEquals(outcome.error, undefined);
    assertEquals(outcome.available, true);
    assert(outcome.checks >= 10, `only ${outcome.checks} checks ran`);
    assertEquals(outcome.failed, []);
    // The only mapping of the library is the memfd: no file of it exists on disk.
    assertEquals(outcome.mapped, ["/memfd:coop-sandbox (deleted)"]);
  },
);

sandboxTest(
  "compiled layout: tampered bytes, a missing digest and a foreign source hash are refused",
  async () => {
    const genuine = await genuineRecord();
    const tampered = new Uint8Array(genuine.bytes);
    tampered[tampered.length - 100] ^= 1;
    const cases: [string, EmbeddedRecord, RegExp][] = [
      ["tampered bytes", { ...genuine, bytes: tampered }, /does not match its recorded digest/],
      ["no digest", { ...genuine, sha256: undefined }, /has no recorded digest/],
      ["no source hash", { ...genuine, sourceHash: undefined }, /has no recorded source hash/],
      [
        "foreign sources",
        { ...genuine, sourceHash: "0".repeat(64) },
        /built from other sources than the source hash recorded when this executable was built/,
      ],
    ];
    for (const [label, record, reason] of cases) {
      const outcome = await probeCompiledLayout(record);
      assertEquals(outcome.available, false, label);
      assertMatch(outcome.error ?? "", reason, label);
      assertEquals(outcome.checks, 0, label);
      assert(
        !outcome.mapped.some((path) => /coop-sandbox/.test(path)) || label === "foreign sources",
      );
    }
  },
);

sandboxTest(
  "sealed memfd: every seal is set, so the verified bytes cannot change before dlopen",
  async () => {
    const genuine = await genuineRecord();
    const sealed = await sealEmbeddedLibrary(genuine);
    try {
      assertMatch(sealed.path, /^\/proc\/self\/fd\/\d+$/);
      assertEquals(await Deno.readLink(sealed.path), "/memfd:coop-sandbox (deleted)");
      const bytes = await Deno.readFile(sealed.path);
      assertEquals(createHash("sha256").update(bytes).digest("hex"), genuine.sha256);
      // F_SEAL_WRITE: the kernel refuses any write, even through a descriptor opened for it.
      const file = await Deno.open(sealed.path, { write: true });
      const written = await file.write(new Uint8Array([0])).then(
        (n) => `wrote ${n}`,
        (error) => (error as Error).name,
      );
      file.close();
      assertEquals(written, "PermissionDenied");
      assertEquals(
        createHash("sha256").update(await Deno.readFile(sealed.path)).digest("hex"),
        genuine.sha256,
      );
    } finally {
      sealed.close();
    }
  },
);
