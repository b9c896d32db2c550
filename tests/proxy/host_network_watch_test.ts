// The proxy lists this host's interfaces again exactly when the kernel announced a change
// (src/sandbox/proxy/host_network_watch.ts): an address added or removed is seen by the next
// decision, and no change means no new listing. Run in a network namespace of its own (a user
// namespace too when not root), where the test may add and remove addresses.
import { assertEquals } from "../assert.ts";

const script = (root: string) => `
import { loadTrampoline } from "${root}/src/sandbox/ffi.ts";
import { watchedHostNetwork } from "${root}/src/sandbox/proxy/host_network_watch.ts";
const lib = await loadTrampoline();
const shown = () => watchedHostNetwork(lib).interfaces
  .map((i) => i.address.toString() + "/" + i.prefixLength).join(",");
const ip = (...args) => new Deno.Command("ip", { args }).outputSync().success;
const out = [];
out.push("start=" + shown());
const first = watchedHostNetwork(lib);
out.push("same=" + (watchedHostNetwork(lib) === first));
out.push("add=" + ip("addr", "add", "10.9.8.7/24", "dev", "lo"));
out.push("added=" + shown());
out.push("again=" + (watchedHostNetwork(lib) === watchedHostNetwork(lib)));
out.push("del=" + ip("addr", "del", "10.9.8.7/24", "dev", "lo"));
out.push("removed=" + shown());
console.log(out.join("\\n"));
`;

Deno.test("host network watch: a new or removed address is seen by the next decision", async () => {
  const root = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");
  const file = await Deno.makeTempFile({ suffix: ".ts" });
  try {
    Deno.writeTextFileSync(file, script(root));
    const unshare = Deno.uid() === 0 ? ["-n"] : ["-rn"];
    const r = await new Deno.Command("unshare", {
      args: [...unshare, Deno.execPath(), "run", "-A", "--config", `${root}/deno.json`, file],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(r.stdout);
    assertEquals(r.success, true, new TextDecoder().decode(r.stderr));
    assertEquals(text.trim().split("\n"), [
      "start=",
      "same=true",
      "add=true",
      "added=10.9.8.7/24",
      "again=true",
      "del=true",
      "removed=",
    ]);
  } finally {
    await Deno.remove(file);
  }
});
