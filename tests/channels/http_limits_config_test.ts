/** `[channels.http]` client limits: defaults, parsing, validation, and the descriptor budget. */
import { assertEquals } from "../assert.ts";
import { parseConfig } from "../../src/config/config.ts";
import { ConfigError } from "../../src/config/config_diagnostic.ts";
import { connectionCap } from "../../src/cli/connection_budget.ts";

function http(extra: string) {
  return parseConfig(`[channels.http]\nenabled = true\n${extra}\n`, "c.toml", "/").channels.http!;
}

function problems(extra: string): string[] {
  try {
    http(extra);
    return [];
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return error.diagnostics.map((d) => `${d.path}: ${d.message}`);
  }
}

Deno.test("defaults: a 10 s head, a 30 s request, 256 connections", () => {
  const h = http("");
  assertEquals([h.headers_timeout, h.request_timeout, h.max_connections], [10_000, 30_000, 256]);
});

Deno.test("durations are written like every other duration", () => {
  const h = http('headers_timeout = "500ms"\nrequest_timeout = "2m"\nmax_connections = 64');
  assertEquals([h.headers_timeout, h.request_timeout, h.max_connections], [500, 120_000, 64]);
});

Deno.test("bad values are errors naming the key", () => {
  assertEquals(problems('headers_timeout = "0s"'), [
    'channels.http.headers_timeout: must be from 1ms to 2147483647ms (the longest a timer holds is about 24.8 days), got "0s"',
  ]);
  assertEquals(problems('headers_timeout = "soon"').length, 1);
  assertEquals(problems('headers_timeout = "20s"\nrequest_timeout = "10s"'), [
    "channels.http.request_timeout: must be at least headers_timeout (the head is part of the request)",
  ]);
  assertEquals(problems("max_connections = 0"), [
    "channels.http.max_connections: must be at least 1, got 0",
  ]);
  assertEquals(problems("max_connections = 1.5").length, 1);
});

Deno.test("the cap keeps half the open-file limit for everything else", () => {
  assertEquals(connectionCap(256, 1024), 256);
  assertEquals(connectionCap(4096, 1024), 512);
  assertEquals(connectionCap(256, undefined), 256);
  assertEquals(connectionCap(256, 1), 1);
});
