import {
  Http1FramingError,
  Http1Parser,
  MAX_HEAD_BYTES,
  type ResponseHead,
} from "../../src/agent/http1_parser.ts";
import { assert, assertEquals, assertMatch, assertThrows } from "../assert.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

/** What a parser delivered: the heads, the body as text, how often it ended. */
interface Parsed {
  heads: ResponseHead[];
  body: string;
  ends: number;
  parser: Http1Parser;
}

/** Feeds `pieces` to a new parser, copying each body chunk (views are only valid at once). */
function parse(pieces: readonly Uint8Array[]): Parsed {
  const out: Parsed = { heads: [], body: "", ends: 0, parser: undefined! };
  const decoder = new TextDecoder();
  out.parser = new Http1Parser({
    head: (head) => out.heads.push(head),
    body: (chunk) => out.body += decoder.decode(chunk, { stream: true }),
    end: () => out.ends++,
  });
  for (const piece of pieces) out.parser.push(piece);
  return out;
}

const CHUNKED = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n" +
  "transfer-encoding: chunked\r\n\r\n" +
  "6;name=value\r\ndata: \r\n" + 'b\r\n{"é": 1}\n\n\r\n' + "0\r\nx-trailer: dropped\r\n\r\n";
const CHUNKED_BODY = 'data: {"é": 1}\n\n';

Deno.test("chunked: split at every byte boundary, the body, one head and one end", () => {
  const all = bytes(CHUNKED);
  for (let at = 0; at <= all.length; at++) {
    const { heads, body, ends, parser } = parse([all.subarray(0, at), all.subarray(at)]);
    assertEquals(heads.length, 1, `split at ${at}`);
    assertEquals(heads[0].status, 200);
    assertEquals(body, CHUNKED_BODY, `split at ${at}`);
    assertEquals(ends, 1, `split at ${at}`);
    assert(parser.reusable, `split at ${at}`);
  }
  const oneByOne = parse([...all].map((b) => new Uint8Array([b])));
  assertEquals(oneByOne.body, CHUNKED_BODY);
  assertEquals(oneByOne.ends, 1);
});

Deno.test("content-length delimits the body; a byte after it forbids reuse", () => {
  const head = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
  const exact = parse([bytes(head + "hel"), bytes("lo")]);
  assertEquals([exact.body, exact.ends, exact.parser.reusable], ["hello", 1, true]);
  const extra = parse([bytes(head + "helloX")]);
  assertEquals([extra.body, extra.ends, extra.parser.reusable], ["hello", 1, false]);
  const empty = parse([bytes("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")]);
  assertEquals([empty.body, empty.ends, empty.parser.reusable], ["", 1, true]);
  const noBody = parse([bytes("HTTP/1.1 204 No Content\r\n\r\n")]);
  assertEquals([noBody.heads[0].status, noBody.ends, noBody.parser.reusable], [204, 1, true]);
});

Deno.test("no length: the body runs to the connection's close, which is never reused", () => {
  const parsed = parse([bytes("HTTP/1.1 200 OK\r\n\r\nsome "), bytes("text")]);
  assertEquals([parsed.body, parsed.ends], ["some text", 0]);
  assert(parsed.parser.finish(), "the close ends the body");
  assertEquals(parsed.ends, 1);
  assert(!parsed.parser.reusable);
});

Deno.test("a close before the body's end, or before any byte, leaves the response incomplete", () => {
  const cut = parse([bytes("HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc")]);
  assert(!cut.parser.finish());
  assertEquals(cut.ends, 0);
  const chunkCut = parse([bytes("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab")]);
  assert(!chunkCut.parser.finish());
  const headCut = parse([bytes("HTTP/1.1 200 OK\r\ncontent-")]);
  assert(!headCut.parser.finish());
  assertEquals(headCut.heads.length, 0);
  const nothing = parse([]);
  assert(!nothing.parser.finish());
  assert(!nothing.parser.received);
});

Deno.test("interim 1xx responses are skipped; 101 is delivered to be refused", () => {
  const parsed = parse([
    bytes("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n"),
    bytes("HTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok"),
  ]);
  assertEquals(parsed.heads.map((h) => h.status), [201]);
  assertEquals(parsed.body, "ok");
  const upgrade = parse([bytes("HTTP/1.1 101 Switching Protocols\r\nupgrade: x\r\n\r\n")]);
  assertEquals(upgrade.heads[0].status, 101);
  assert(!upgrade.parser.reusable);
});

Deno.test("repeated headers are kept in order and read as the web Headers would", () => {
  const { heads } = parse([
    bytes(
      "HTTP/1.1 200 OK\r\nX-A: 1\r\nset-cookie: a=1\r\nx-a:   2  \r\nSet-Cookie: b=2\r\n" +
        "content-length: 0\r\n\r\n",
    ),
  ]);
  const headers = new Headers();
  const raw = heads[0].rawHeaders;
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i], raw[i + 1]);
  assertEquals(headers.get("x-a"), "1, 2");
  assertEquals(headers.getSetCookie(), ["a=1", "b=2"]);
});

Deno.test("connection: close and HTTP/1.0 forbid reuse", () => {
  const close = parse([bytes("HTTP/1.1 200 OK\r\nConnection: Close\r\ncontent-length: 0\r\n\r\n")]);
  assertEquals([close.ends, close.parser.reusable], [1, false]);
  const old = parse([bytes("HTTP/1.0 200 OK\r\ncontent-length: 1\r\n\r\nx")]);
  assertEquals([old.body, old.ends, old.parser.reusable], ["x", 1, false]);
});

Deno.test("a header block over 64 KiB is refused, whole or still arriving", () => {
  const big = `HTTP/1.1 200 OK\r\nx-big: ${"a".repeat(MAX_HEAD_BYTES)}\r\n`;
  for (const pieces of [[bytes(big)], [bytes(big + "\r\n")]]) {
    const error = assertThrows(() => parse(pieces), Http1FramingError);
    assertMatch(error.message, /header block is larger than 64 KiB/);
  }
  const trailer = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\n" +
    `x-t: ${"b".repeat(MAX_HEAD_BYTES)}\r\n\r\n`;
  const error = assertThrows(() => parse([bytes(trailer)]), Http1FramingError);
  assertMatch(error.message, /trailer block is larger than 64 KiB/);
});

Deno.test("malformed framing is an Http1FramingError saying what was wrong", () => {
  const cases: [string, RegExp][] = [
    ["SSH-2.0-OpenSSH_9.6\r\n\r\n", /not an HTTP\/1.x status line: "SSH-2.0-OpenSSH_9.6"/],
    ["HTTP/2 200\r\n\r\n", /not an HTTP\/1.x status line/],
    ["HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", /not a header line: "no colon here"/],
    ["HTTP/1.1 200 OK\r\n folded: x\r\n\r\n", /not a header line/],
    ["HTTP/1.1 200 OK\r\ncontent-length: 1x\r\n\r\n", /invalid content-length: "1x"/],
    ["HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n", /content-length/],
    ["HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n", /invalid chunk size: "zz"/],
    ["HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabc\r\n", /longer than its size/],
    ["HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\nab", /not ending in CRLF/],
  ];
  for (const [text, message] of cases) {
    const error = assertThrows(() => parse([bytes(text)]), Http1FramingError);
    assertMatch(error.message, message);
  }
});
