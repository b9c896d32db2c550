/**
 * The base from `oci:<path>`: an OCI image layout directory, or an archive (tar) of one. The
 * index's manifest for this machine's platform names the layers; each is checked against its
 * digest and unpacked in order (`layer_unpack.ts`), tar, tar+gzip or tar+zstd (node:zlib).
 * @module
 */
import { createReadStream, mkdirSync, readFileSync, statSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { createGunzip, createZstdDecompress } from "node:zlib";
import { CoopError, errorMessage } from "../errors/coop_error.ts";
import { LayerUnpacker, type UnpackOptions, type UnpackSkipped } from "./layer_unpack.ts";
import { TarParser } from "./tar_reader.ts";

/** The image is not a readable OCI image (missing file, bad JSON, digest mismatch …). */
export class OciImageError extends CoopError {
  /** `message` names the image file and what is wrong with it. */
  constructor(message: string) {
    super("environment.oci_image", message);
    this.name = "OciImageError";
  }
}

interface Descriptor {
  mediaType?: string;
  digest: string;
  size?: number;
  platform?: { os?: string; architecture?: string };
}

const DIGEST = /^sha256:[a-f0-9]{64}$/;
const INDEX_TYPES = [
  "application/vnd.oci.image.index.v1+json",
  "application/vnd.docker.distribution.manifest.list.v2+json",
];

/** The OCI architecture name of this machine. */
function hostArchitecture(): string {
  return { x86_64: "amd64", aarch64: "arm64" }[Deno.build.arch] ?? Deno.build.arch;
}

function blobPath(layout: string, descriptor: Descriptor): string {
  if (typeof descriptor?.digest !== "string" || !DIGEST.test(descriptor.digest)) {
    throw new OciImageError(
      `${layout}: descriptor digest ${JSON.stringify(descriptor?.digest)} is not sha256:<64 hex>`,
    );
  }
  return join(layout, "blobs", "sha256", descriptor.digest.slice("sha256:".length));
}

function readJson(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new OciImageError(`${path}: cannot read (${errorMessage(error)})`);
  }
  try {
    const value = JSON.parse(text);
    if (typeof value !== "object" || value === null) throw new Error("not an object");
    return value;
  } catch (error) {
    throw new OciImageError(`${path}: not valid JSON (${errorMessage(error)})`);
  }
}

/** A blob's JSON after checking its digest. */
function readBlobJson(layout: string, descriptor: Descriptor): Record<string, unknown> {
  const path = blobPath(layout, descriptor);
  const bytes = (() => {
    try {
      return readFileSync(path);
    } catch (error) {
      throw new OciImageError(`${path}: cannot read (${errorMessage(error)})`);
    }
  })();
  const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
  if (digest !== descriptor.digest) {
    throw new OciImageError(`${path}: content is ${digest}, the index says ${descriptor.digest}`);
  }
  return readJson(path);
}

/** Picks the manifest for linux on this architecture (or the only one). */
function chooseManifest(layout: string, index: Record<string, unknown>, where: string): Descriptor {
  const manifests = index.manifests;
  if (!Array.isArray(manifests) || manifests.length === 0) {
    throw new OciImageError(`${where}: "manifests" is missing or empty`);
  }
  const arch = hostArchitecture();
  const chosen = manifests.length === 1
    ? manifests[0]
    : manifests.find((m: Descriptor) =>
      m.platform?.os === "linux" && m.platform?.architecture === arch
    );
  if (!chosen) throw new OciImageError(`${where}: no manifest for linux/${arch}`);
  if (INDEX_TYPES.includes(chosen.mediaType)) {
    return chooseManifest(layout, readBlobJson(layout, chosen), `${where} → ${chosen.digest}`);
  }
  return chosen;
}

/** The layer descriptors of the image in the layout directory `layout`, bottom first. */
export function imageLayers(layout: string): Descriptor[] {
  const indexPath = join(layout, "index.json");
  const manifest = readBlobJson(layout, chooseManifest(layout, readJson(indexPath), indexPath));
  if (!Array.isArray(manifest.layers)) {
    throw new OciImageError(`${layout}: the image manifest has no "layers" list`);
  }
  return manifest.layers as Descriptor[];
}

/** How a layer is compressed, from its media type (or its first bytes when that says nothing). */
function compressionOf(path: string, descriptor: Descriptor): "none" | "gzip" | "zstd" {
  const type = descriptor.mediaType ?? "";
  if (/zstd$/.test(type)) return "zstd";
  if (/gzip$/.test(type)) return "gzip";
  if (/tar$/.test(type)) return "none";
  const head = new Uint8Array(4);
  const fd = Deno.openSync(path);
  try {
    fd.readSync(head);
  } finally {
    fd.close();
  }
  if (head[0] === 0x1f && head[1] === 0x8b) return "gzip";
  if (head[0] === 0x28 && head[1] === 0xb5 && head[2] === 0x2f && head[3] === 0xfd) return "zstd";
  return "none";
}

/** Streams the tar at `path` (compressed or not) into `unpacker`, hashing what is read. */
export async function unpackTarFile(
  path: string,
  unpacker: LayerUnpacker,
  compression: "none" | "gzip" | "zstd",
): Promise<string> {
  const hash = createHash("sha256");
  const parser = new TarParser(unpacker);
  try {
    // Plain events rather than stream/promises pipeline(): Deno's pipeline ends a zstd stream
    // with an AbortError after its last byte.
    await new Promise<void>((resolvePromise, reject) => {
      const input = createReadStream(path);
      const decoder = compression === "gzip"
        ? createGunzip()
        : compression === "zstd"
        ? createZstdDecompress()
        : new PassThrough();
      let failed = false;
      const fail = (error: unknown) => {
        if (failed) return;
        failed = true;
        input.destroy();
        decoder.destroy();
        reject(error);
      };
      input.on("error", fail);
      decoder.on("error", fail);
      input.on("data", (chunk) => hash.update(chunk));
      decoder.on("data", (chunk: Uint8Array) => {
        if (failed) return; // nothing more is written once an entry was refused
        try {
          parser.push(chunk);
        } catch (error) {
          fail(error);
        }
      });
      decoder.on("end", () => {
        try {
          parser.finish();
          resolvePromise();
        } catch (error) {
          fail(error);
        }
      });
      input.pipe(decoder);
    });
  } finally {
    unpacker.abort();
  }
  return `sha256:${hash.digest("hex")}`;
}

/** Unpacks the image's layers into `rootfs`; returns what was skipped on purpose. */
export async function unpackOciImage(
  source: string,
  rootfs: string,
  scratch: string,
  options: UnpackOptions & { onLayer?: (index: number, count: number) => void },
): Promise<UnpackSkipped> {
  let layout = source;
  let stat;
  try {
    stat = statSync(source);
  } catch (error) {
    throw new OciImageError(`${source}: cannot read the image (${errorMessage(error)})`);
  }
  if (!stat.isDirectory()) {
    // An archive of a layout: unpack it (with the same refusals) into scratch space first.
    layout = join(scratch, "oci-layout");
    mkdirSync(layout, { recursive: true });
    const outer = new LayerUnpacker(layout);
    await unpackTarFile(source, outer, "none");
    outer.finishDirectories();
  }
  const layers = imageLayers(layout);
  mkdirSync(rootfs, { recursive: true });
  let unpacker = new LayerUnpacker(rootfs, options);
  for (const [i, layer] of layers.entries()) {
    options.onLayer?.(i + 1, layers.length);
    const path = blobPath(layout, layer);
    const digest = await unpackTarFile(path, unpacker, compressionOf(path, layer));
    if (digest !== layer.digest) {
      throw new OciImageError(
        `layer ${i + 1} (${path}): content is ${digest}, the manifest says ${layer.digest}`,
      );
    }
    unpacker = new LayerUnpacker(rootfs, options, unpacker.shared());
  }
  unpacker.finishDirectories();
  return unpacker.skipped;
}
