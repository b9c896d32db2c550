// The build sandbox of `coop init` (issue 14, item 2) runs the Coopfile's commands through the
// policy proxy like every other sandbox, and like every other sandbox its proxy never dials the
// gateway's own sockets (docs/network.md "Never lifted") — not even for an IP-literal entry of the
// Coopfile's `allow_domains`. Attacked from inside: a setup command's curl.
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeTree } from "../../src/environments/sandbox_tree.ts";
import { environmentPaths } from "../../src/environments/environment_layout.ts";
import { assertEquals } from "../assert.ts";
import { coopArgv } from "../e2e/gateway_process.ts";
import { runCommand } from "../fixtures/run_command.ts";
import { buildMiniRootfs, MINI_ROOTFS_PROGRAMS } from "../fixtures/mini_rootfs.ts";
import { entriesOf, writeOciLayout } from "../fixtures/oci_image.ts";
import { sandboxTest } from "../sandbox/harness.ts";

/** An HTTP server on loopback that answers every request with 200 and `name`. */
async function serve(name: string): Promise<{ server: Server; port: number }> {
  const server = createServer((_request, response) => response.end(name));
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
  return { server, port: (server.address() as AddressInfo).port };
}

sandboxTest(
  "coop init: the build sandbox's proxy never dials the gateway's socket, not even for an IP literal",
  async () => {
    const dir = mkdtempSync(join(tmpdir(), "coop-init-net-"));
    // As a state directory must be for a root invoker: searchable by the sandbox's host uid.
    chmodSync(dir, 0o711);
    // One stands for the running gateway's HTTP channel, the other for a service the owner
    // allowed the build: the proxy reaches the second, so the first's 403 is the rule's.
    const gateway = await serve("gateway");
    const service = await serve("service");
    try {
      const mini = join(dir, "mini");
      buildMiniRootfs(mini, [...MINI_ROOTFS_PROGRAMS, "curl"]);
      writeOciLayout(join(dir, "image"), [entriesOf(mini)]);
      const config = join(dir, "coop.toml");
      writeFileSync(
        config,
        `[agent]\nstate_dir = "${dir}/state"\n` +
          `[channels.http]\nenabled = true\nlisten = "127.0.0.1:${gateway.port}"\n`,
      );
      const probe = (name: string, port: number) =>
        `curl -sS -o /dev/null -w '${name}=%{http_code}\\n' http://127.0.0.1:${port}/ ` +
        `>> /usr/local/codes 2>&1`;
      writeFileSync(
        join(dir, "Coopfile"),
        `[base]\nimage = "oci:${dir}/image"\n` +
          `[network]\nmode = "proxy"\n` +
          `allow_domains = ["127.0.0.1:${gateway.port}", "127.0.0.1:${service.port}"]\n` +
          `[setup]\nrun = ["mkdir -p /usr/local", ${
            JSON.stringify(`${probe("gateway", gateway.port)}; ${probe("service", service.port)}`)
          }]\n`,
      );
      const [cmd, ...args] = coopArgv("init", "--config", config);
      const init = await runCommand(cmd, args);
      assertEquals(init.code, 0, init.stderr);
      const rootfs = environmentPaths(join(dir, "state"), join(dir, "Coopfile")).rootfs;
      assertEquals(
        readFileSync(join(rootfs, "usr/local/codes"), "utf8"),
        "gateway=403\nservice=200\n",
      );
    } finally {
      gateway.server.close();
      service.server.close();
      removeTree(dir);
    }
  },
);
