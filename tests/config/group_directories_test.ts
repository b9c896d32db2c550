/** Group workspace directories: by name, else by channel and id, never two chats in one. */
import { assertEquals, assertMatch, assertNotEquals } from "../assert.ts";
import { groupDirectoryName } from "../../src/config/group_directories.ts";

Deno.test("group directory: the group's name, else its channel and id made safe", () => {
  assertEquals(
    groupDirectoryName({ channel: "telegram", id: "-1001234", name: "family" }),
    "group-family",
  );
  assertEquals(
    groupDirectoryName({ channel: "telegram", id: "-1001234" }),
    "group-telegram--1001234",
  );
  const signal = groupDirectoryName({ channel: "signal", id: "group:ab/c+d=" });
  assertMatch(signal, /^group-signal-group_ab_c_d_-[0-9a-f]{8}$/);
  // Base64 ids differing only in characters that are replaced still get two directories.
  assertNotEquals(signal, groupDirectoryName({ channel: "signal", id: "group:ab+c/d=" }));
  assertMatch(
    groupDirectoryName({ channel: "telegram", id: "1", name: "Family Chat" }),
    /^group-Family_Chat-[0-9a-f]{8}$/,
  );
  assertMatch(
    groupDirectoryName({ channel: "telegram", id: "1", name: "../x" }),
    /^group-_x-[0-9a-f]{8}$/,
  );
});
