// Issue 15, item 1: seeded limits (memory 2 GiB, 512 processes), overridable per user and per
// cron job, shown by `coop check` with where each was set; `allow_network` accepted as the
// owner-role spec's spelling of `network`, with a warning naming the preferred key.
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { parseConfig } from "../../src/config/config.ts";
import { checkConfig } from "../../src/config/config_check.ts";
import { effectiveLimits } from "../../src/config/effective_limits.ts";
import { describeCgroupHost } from "../../src/sandbox/cgroup_host.ts";
import { availableProbe, checkText } from "../fixtures/check_run.ts";

const BASE = `
[agent]
workspace = "ws"
[[users]]
name = "alice"
trust = "owner"
match = ["terminal:default"]
[[users]]
name = "bob"
trust = "inner"
match = ["http:bob"]
`;
const CRON = `
[[cron]]
name = "digest"
schedule = "0 3 * * *"
user = "bob"
message = "go"
`;

/** No cgroups at all: the rlimit path, whatever this machine has. */
const NO_CGROUPS = describeCgroupHost("", "", 1000);

function parse(text: string) {
  return parseConfig(text, "/etc/coop/coop.toml", "/etc/coop");
}

Deno.test("limits: unset means memory 2 GiB and 512 processes, marked as defaults", () => {
  const config = parse(BASE + CRON);
  const bob = effectiveLimits(config, config.users[1], undefined, NO_CGROUPS);
  deepStrictEqual(bob.memoryBytes, { value: 2 * 2 ** 30, source: "default" });
  deepStrictEqual(bob.pidsLimit, { value: 512, source: "default" });
  deepStrictEqual(bob.cpus, { value: null, source: "default" });
  strictEqual(bob.applied?.path, "rlimit");
  strictEqual(bob.applied?.memory?.enforcedBy, "RLIMIT_AS");
  strictEqual(bob.refusal, null);
});

Deno.test("limits: [sandbox], the user and the cron job override in that order", () => {
  const config = parse(
    BASE.replace("[agent]", '[sandbox]\nmemory = "1G"\n[agent]')
      .replace('match = ["http:bob"]', 'match = ["http:bob"]\n[users.sandbox]\npids_limit = 100') +
      CRON + '[cron.sandbox]\nmemory = "4G"\n',
  );
  const bob = effectiveLimits(config, config.users[1], undefined, NO_CGROUPS);
  deepStrictEqual(bob.memoryBytes, { value: 2 ** 30, source: "sandbox" });
  deepStrictEqual(bob.pidsLimit, { value: 100, source: "user" });
  const job = effectiveLimits(config, config.users[1], config.cron[0], NO_CGROUPS);
  deepStrictEqual(job.memoryBytes, { value: 4 * 2 ** 30, source: "cron" });
  deepStrictEqual(job.pidsLimit, { value: 100, source: "user" });
  const stranger = effectiveLimits(config, undefined, undefined, NO_CGROUPS);
  deepStrictEqual(stranger.pidsLimit, { value: 512, source: "default" });
});

Deno.test("limits: cpus with no cgroup path is shown as refused, with the reason", () => {
  const config = parse(BASE.replace("[agent]", "[sandbox]\ncpus = 1\n[agent]"));
  const bob = effectiveLimits(config, config.users[1], undefined, NO_CGROUPS);
  strictEqual(bob.applied, null);
  ok(bob.refusal?.includes("cpus = 1 cannot be enforced here"), bob.refusal ?? "");
});

Deno.test("coop check prints each non-owner's limits and the path, --json has them", async () => {
  const { output } = await checkText(BASE + CRON, [], availableProbe);
  const lines = output.split("\n").filter((l) => l.startsWith("limits: "));
  deepStrictEqual(lines.map((l) => l.split(":")[1].trim()), [
    "unknown senders",
    'user "bob"',
    'cron job "digest"',
  ]);
  ok(lines.every((l) => l.includes("memory 2G (default), pids 512 (default), cpus unlimited")));
  ok(lines.every((l) => /enforced by (cgroup-v2|cgroup-v1|rlimit) \(/.test(l)), lines[0]);
  const json = JSON.parse((await checkText(BASE, ["--json"], availableProbe)).output);
  strictEqual(json.limits[1].who, 'user "bob"');
  strictEqual(json.limits[1].pidsLimit.value, 512);
});

Deno.test("allow_network = false is network none, with a warning naming the preferred key", () => {
  const config = parse(
    BASE.replace(
      'match = ["http:bob"]',
      'match = ["http:bob"]\n[users.sandbox]\nallow_network = false',
    ),
  );
  strictEqual(config.users[1].sandbox.network, "none");
  const diagnostics = checkConfig(config, () => "k").filter((d) =>
    d.code.includes("allow_network")
  );
  deepStrictEqual(diagnostics.map((d) => [d.severity, d.code, d.path]), [
    ["warning", "config.allow_network_alias", "users[1].sandbox.allow_network"],
  ]);
  ok(diagnostics[0].message.includes('write network = "none" instead'));
});

Deno.test("allow_network = true is network public, with a warning; with network, a conflict", () => {
  const config = parse(
    BASE.replace("[agent]", "[sandbox]\nallow_network = true\n[agent]")
      .replace(
        'match = ["http:bob"]',
        'match = ["http:bob"]\n[users.sandbox]\nallow_network = false\nnetwork = "proxy"',
      ),
  );
  // "The internet, not the LAN": public unicast only (docs/network.md).
  strictEqual(config.sandbox.defaults.network, "public");
  const diagnostics = checkConfig(config, () => "k").filter((d) =>
    d.code.includes("allow_network")
  );
  deepStrictEqual(diagnostics.map((d) => [d.severity, d.code]), [
    ["warning", "config.allow_network_alias"],
    ["error", "config.allow_network_conflict"],
  ]);
  ok(diagnostics[0].message.includes('write network = "public" instead'));
});

Deno.test("disk_quota and inode_quota: per user and cron job, shown with their enforcement", () => {
  const config = parse(
    BASE.replace("[agent]", '[sandbox]\ndisk_quota = "1G"\n[agent]')
      .replace(
        'match = ["http:bob"]',
        'match = ["http:bob"]\n[users.sandbox]\ninode_quota = 5000',
      ) +
      CRON + '[cron.sandbox]\ndisk_quota = "100M"\n',
  );
  const bob = effectiveLimits(config, config.users[1], undefined, NO_CGROUPS, 1000);
  deepStrictEqual(bob.diskQuotaBytes, { value: 2 ** 30, source: "sandbox" });
  deepStrictEqual(bob.inodeQuota, { value: 5000, source: "user" });
  strictEqual(bob.quotaEnforcement, "accounting");
  strictEqual(
    effectiveLimits(config, config.users[1], undefined, NO_CGROUPS, 0).quotaEnforcement,
    "loop-image",
  );
  const job = effectiveLimits(config, config.users[1], config.cron[0], NO_CGROUPS);
  deepStrictEqual(job.diskQuotaBytes, { value: 100 * 2 ** 20, source: "cron" });
  const none = effectiveLimits(parse(BASE), undefined, undefined, NO_CGROUPS);
  deepStrictEqual([none.diskQuotaBytes.value, none.quotaEnforcement], [null, null]);
});

Deno.test("disk_quota below 1M and inode_quota below 16 are config errors naming the key", () => {
  for (
    const [line, key] of [['disk_quota = "10k"', "disk_quota"], ["inode_quota = 3", "inode_quota"]]
  ) {
    let message = "";
    try {
      parse(BASE.replace("[agent]", `[sandbox]\n${line}\n[agent]`));
    } catch (error) {
      message = JSON.stringify((error as { diagnostics?: unknown }).diagnostics);
    }
    ok(message.includes(`sandbox.${key}`), message);
  }
});
