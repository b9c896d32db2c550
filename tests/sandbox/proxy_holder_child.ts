/**
 * Another process holding a policy proxy, for tests/sandbox/proxy_dir_sweep_test.ts: starts one
 * (its socket directory in `$TMPDIR`), prints its socket path and keeps it until killed.
 * @module
 */
import { startPolicyProxy } from "../../src/sandbox/mod.ts";

const proxy = await startPolicyProxy({ allowDomains: [] });
console.log(proxy.socketPath);
setInterval(() => {}, 60_000); // held until the test kills this process
