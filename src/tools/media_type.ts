/**
 * The media type of a file `send_file` sends, from its extension: what a chat client needs to
 * show it (a document, an image). Unknown extensions are `application/octet-stream`.
 * @module
 */
import { extname } from "node:path";

const BY_EXTENSION: Readonly<Record<string, string>> = {
  ".txt": "text/plain",
  ".log": "text/plain",
  ".md": "text/markdown",
  ".csv": "text/csv",
  ".tsv": "text/tab-separated-values",
  ".html": "text/html",
  ".htm": "text/html",
  ".css": "text/css",
  ".xml": "application/xml",
  ".json": "application/json",
  ".yaml": "application/yaml",
  ".yml": "application/yaml",
  ".toml": "application/toml",
  ".js": "text/javascript",
  ".ts": "text/plain",
  ".py": "text/x-python",
  ".sh": "text/x-shellscript",
  ".pdf": "application/pdf",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".svg": "image/svg+xml",
  ".mp3": "audio/mpeg",
  ".ogg": "audio/ogg",
  ".wav": "audio/wav",
  ".mp4": "video/mp4",
  ".webm": "video/webm",
  ".zip": "application/zip",
  ".gz": "application/gzip",
  ".tar": "application/x-tar",
  ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  ".odt": "application/vnd.oasis.opendocument.text",
};

/**
 * Returns the media type for a file name.
 *
 * @example
 * ```ts
 * mediaTypeOf("report.pdf"); // "application/pdf"
 * ```
 */
export function mediaTypeOf(name: string): string {
  return BY_EXTENSION[extname(name).toLowerCase()] ?? "application/octet-stream";
}
