import { assertEquals } from "../assert.ts";
import { formatByteSize, parseByteSize } from "../../src/sandbox/byte_size.ts";

const KiB = 2 ** 10, MiB = 2 ** 20, GiB = 2 ** 30;

Deno.test("parseByteSize: binary units in either case, bare bytes, and garbage", () => {
  const table: Array<[string | number, number | null]> = [
    ["65536", 65536],
    [65536, 65536],
    ["64k", 64 * KiB],
    ["64K", 64 * KiB],
    ["64KiB", 64 * KiB],
    ["64kb", 64 * KiB],
    ["512M", 512 * MiB],
    ["512 MiB", 512 * MiB],
    ["2G", 2 * GiB],
    ["1t", 2 ** 40],
    ["1.5K", 1536],
    ["0.5k", 512],
    ["10B", 10],
    ["1.9", 1],
    ["0", 0],
    [0, 0],
    ["lots", null],
    ["", null],
    ["-1M", null],
    ["1P", null],
    ["1 M B", null],
    [1.5, null],
    [-1, null],
    [Number.NaN, null],
    ["9".repeat(20) + "T", null],
  ];
  for (const [input, expected] of table) {
    assertEquals(parseByteSize(input), expected, JSON.stringify(input));
  }
});

Deno.test("formatByteSize writes what parseByteSize reads back, in the largest exact unit", () => {
  const table: Array<[number, string]> = [
    [0, "0"],
    [1536, "1536"],
    [64 * KiB, "64K"],
    [16 * MiB, "16M"],
    [1536 * MiB, "1536M"],
    [64 * GiB, "64G"],
    [2 ** 50, "1024T"],
  ];
  for (const [bytes, text] of table) {
    assertEquals(formatByteSize(bytes), text);
    assertEquals(parseByteSize(text), bytes, text);
  }
});
