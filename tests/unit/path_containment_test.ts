import { assertEquals } from "../assert.ts";
import { isInside } from "../../src/sandbox/path_containment.ts";
import { describeCgroupHost } from "../../src/sandbox/cgroup_host.ts";

Deno.test("isInside: the directory itself and what lies below it, compared by component", () => {
  const table: Array<[string, string, boolean, string]> = [
    ["/srv/ws", "/srv/ws", true, "the directory itself"],
    ["/srv/ws/", "/srv/ws", true, "a trailing slash"],
    ["/srv/ws", "/srv/ws/", true, "a trailing slash on the directory"],
    ["/srv/ws/bob/notes.md", "/srv/ws", true, "two levels down"],
    [
      "/srv/ws/..cache",
      "/srv/ws",
      true,
      "a child named ..cache (the old config_check copy said no)",
    ],
    ["/srv/ws/...", "/srv/ws", true, "a child named ..."],
    ["/srv/ws/.", "/srv/ws", true, "."],
    ["/srv//ws///bob", "/srv/ws", true, "repeated slashes"],
    ["/srv/wsx", "/srv/ws", false, "a sibling sharing the prefix"],
    ["/srv/ws-old/x", "/srv/ws", false, "a sibling sharing the prefix, deeper"],
    ["/srv/ws/../etc", "/srv/ws", false, ".. out of it"],
    ["/srv/ws/bob/../../ws/x", "/srv/ws", true, ".. out and back in"],
    ["/srv", "/srv/ws", false, "the parent"],
    ["/", "/srv/ws", false, "the root"],
    ["/anything", "/", true, "everything is inside /"],
    ["/", "/", true, "/ itself"],
  ];
  for (const [path, dir, expected, note] of table) {
    assertEquals(isInside(path, dir), expected, `isInside(${path}, ${dir}): ${note}`);
  }
});

Deno.test("isInside resolves relative paths against the current directory", () => {
  const cwd = Deno.cwd();
  assertEquals(isInside("notes/a.md", cwd), true);
  assertEquals(isInside(".", cwd), true);
  assertEquals(isInside("..", cwd), cwd === "/");
  assertEquals(isInside(cwd, "sub"), false);
});

Deno.test("a cgroup mount rooted at /docker/abc does not claim the sibling /docker/abcdef", () => {
  const mountinfo = "34 25 0:30 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory";
  const below = describeCgroupHost(mountinfo, "4:memory:/docker/abc/coop\n", 0, () => null);
  assertEquals(below.v1.dirs.memory, "/sys/fs/cgroup/memory/coop");
  const sibling = describeCgroupHost(mountinfo, "4:memory:/docker/abcdef\n", 0, () => null);
  assertEquals(sibling.v1.dirs.memory, "/sys/fs/cgroup/memory/docker/abcdef");
});
