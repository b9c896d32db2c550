import { assert, assertEquals } from "../assert.ts";
import { environmentId, environmentPaths } from "../../src/environments/environment_layout.ts";

Deno.test("an environment's id is its Coopfile's name and a hash of its path", () => {
  const id = environmentId("/home/owner/project/Coopfile");
  assert(/^coopfile-[0-9a-f]{12}$/.test(id), id);
  assertEquals(environmentId("/home/owner/project/Coopfile"), id);
  assert(environmentId("/home/owner/other/Coopfile") !== id, "another path, another id");
});

Deno.test("uppers and persist directories are per user, inside the environment", () => {
  const paths = environmentPaths("/var/lib/coop", "/srv/Coopfile.dev");
  assert(paths.root.startsWith("/var/lib/coop/environments/coopfile-dev-"), paths.root);
  assertEquals(paths.rootfs, `${paths.root}/base/rootfs`);
  assertEquals(paths.upper("bob"), {
    upper: `${paths.root}/uppers/bob/upper`,
    work: `${paths.root}/uppers/bob/work`,
  });
  assertEquals(paths.persist("bob", 0), `${paths.root}/persist/bob/0`);
});
