import { strictEqual } from "node:assert/strict";
import { isLoopbackHost } from "../../src/config/loopback_host.ts";

Deno.test("isLoopbackHost: loopback in any spelling the URL parser reads, nothing else", () => {
  const table: Array<[string, boolean]> = [
    ["127.0.0.1", true],
    ["127.8.9.10", true],
    ["127.1", true], // the URL parser's short form of 127.0.0.1
    ["0x7f.1", true],
    ["localhost", true],
    ["LOCALHOST", true],
    ["::1", true],
    ["[::1]", true],
    ["0:0:0:0:0:0:0:1", true],
    ["::ffff:127.0.0.1", true], // IPv4-mapped loopback
    ["0.0.0.0", false], // every interface
    ["::", false],
    ["[::]", false],
    ["192.168.1.5", false],
    ["10.0.0.1", false],
    ["128.0.0.1", false],
    ["::ffff:10.0.0.1", false],
    ["localhost.example.com", false],
    ["example.com", false],
    ["", false],
    ["not a host", false],
  ];
  for (const [host, expected] of table) strictEqual(isLoopbackHost(host), expected, host);
});
