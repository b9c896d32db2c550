import { assertEquals, assertMatch, assertThrows } from "../assert.ts";
import {
  assertHostIdsFree,
  DEFAULT_SANDBOX_HOST_ID,
  hostIdClashes,
  type HostIdFiles,
  SandboxHostIdError,
} from "../../src/sandbox/host_ids.ts";
import { resolvePolicy } from "../../src/sandbox/policy.ts";

const PASSWD = `root:x:0:0:root:/root:/bin/bash
#old:x:7:3000000000::/:/bin/sh
sync:x:4:65534:sync:/bin:/bin/sync
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
alice:x:1000:1000::/home/alice:/bin/bash
+@netgroup::::::
`;
const GROUP = "root:x:0:\nnogroup:x:65534:\nalice:x:1000:\nodd:x:3000000000:\n";
const SUBUID = "alice:100000:65536\nbig:1999990000:20000\n";
const SUBGID = "alice:100000:65536\n";

const scratch = Deno.makeTempDirSync({ prefix: "coop-host-ids-" });
globalThis.addEventListener("unload", () => Deno.removeSync(scratch, { recursive: true }));

/** Stand-in account files in a fresh directory; `files` maps a name to its content. */
function standIns(files: Partial<Record<keyof HostIdFiles, string>>): HostIdFiles {
  const dir = Deno.makeTempDirSync({ dir: scratch });
  const paths: HostIdFiles = {
    passwd: `${dir}/passwd`,
    group: `${dir}/group`,
    subuid: `${dir}/subuid`,
    subgid: `${dir}/subgid`,
  };
  for (const [name, text] of Object.entries(files)) {
    Deno.writeTextFileSync(paths[name as keyof HostIdFiles], text);
  }
  return paths;
}

const HOST = standIns({ passwd: PASSWD, group: GROUP, subuid: SUBUID, subgid: SUBGID });

Deno.test("the policy's default host ids are the dedicated id, not nobody's 65534", () => {
  const policy = resolvePolicy({ workspace: "/srv/ws" });
  assertEquals([policy.sandboxUid, policy.sandboxGid], [2_000_000_000, 2_000_000_000]);
  assertEquals(DEFAULT_SANDBOX_HOST_ID, 2_000_000_000);
});

Deno.test("free ids clash with nothing", () => {
  assertEquals(hostIdClashes(1_500_000_000, 1_500_000_000, HOST), []);
});

Deno.test("nobody's ids clash by uid, group and another account's primary gid", () => {
  assertEquals(hostIdClashes(65534, 65534, HOST), [
    `uid 65534 belongs to account "nobody" (${HOST.passwd})`,
    `gid 65534 belongs to group "nogroup" (${HOST.group})`,
    `gid 65534 is the primary group of account "sync" (${HOST.passwd})`,
    `gid 65534 is the primary group of account "nobody" (${HOST.passwd})`,
  ]);
});

Deno.test("an id inside a subordinate range clashes; its bounds are exact", () => {
  assertEquals(hostIdClashes(100000, 5, HOST), [
    `uid 100000 lies in the subordinate uid range 100000–165535 of "alice" (${HOST.subuid})`,
  ]);
  assertEquals(hostIdClashes(165535, 165535, HOST), [
    `uid 165535 lies in the subordinate uid range 100000–165535 of "alice" (${HOST.subuid})`,
    `gid 165535 lies in the subordinate gid range 100000–165535 of "alice" (${HOST.subgid})`,
  ]);
  assertEquals(hostIdClashes(165536, 165536, HOST), []);
  assertEquals(hostIdClashes(99999, 99999, HOST), []);
  // The default id itself, on a host that handed out subordinate ids up to it.
  assertEquals(hostIdClashes(DEFAULT_SANDBOX_HOST_ID, 7, HOST), [
    `uid 2000000000 lies in the subordinate uid range 1999990000–2000009999 of "big" ` +
    `(${HOST.subuid})`,
  ]);
});

Deno.test("a group-only clash is found by gid; ids in NIS lines and comments are ignored", () => {
  assertEquals(hostIdClashes(7, 3_000_000_000, HOST), [
    `gid 3000000000 belongs to group "odd" (${HOST.group})`,
  ]);
});

Deno.test("missing files list no ids; an unreadable one fails closed", () => {
  const none = standIns({});
  assertEquals(hostIdClashes(65534, 65534, none), []);
  const unreadable = standIns({ passwd: PASSWD });
  Deno.removeSync(unreadable.passwd);
  Deno.mkdirSync(unreadable.passwd); // reading a directory fails (EISDIR), even as root
  const error = assertThrows(() => hostIdClashes(1, 1, unreadable), SandboxHostIdError);
  assertEquals(error.code, "sandbox.host_id");
  assertMatch(error.message, new RegExp(`cannot read ${unreadable.passwd}`));
});

Deno.test("assertHostIdsFree names every clash and the policy keys to change", () => {
  const error = assertThrows(() => assertHostIdsFree(65534, 65534, HOST), SandboxHostIdError);
  assertMatch(error.message, /^sandbox root would run on the host as uid 65534, gid 65534, but /);
  assertMatch(error.message, /uid 65534 belongs to account "nobody"/);
  assertMatch(error.message, /gid 65534 belongs to group "nogroup"/);
  assertMatch(error.message, /Set the policy's sandboxUid\/sandboxGid/);
});

Deno.test("assertHostIdsFree remembers free ids, and checks a clash again each time", () => {
  const files = standIns({ passwd: PASSWD });
  assertHostIdsFree(1_234_567_890, 1_234_567_890, files);
  Deno.writeTextFileSync(files.passwd, "late:x:1234567890:1::/:/bin/sh\n", { append: true });
  assertHostIdsFree(1_234_567_890, 1_234_567_890, files); // cached: not read again
  assertThrows(() => assertHostIdsFree(1000, 5, files), SandboxHostIdError);
  Deno.writeTextFileSync(files.passwd, "root:x:0:0::/:/bin/sh\n");
  assertHostIdsFree(1000, 5, files); // the clash was fixed: no restart needed
});
