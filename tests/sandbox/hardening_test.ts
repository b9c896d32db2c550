import { assertEquals, assertMatch, assertNotIncludes } from "../assert.ts";
import { sandboxTest, sh } from "./harness.ts";

sandboxTest("seccomp is installed (Seccomp: 2) and refuses user-namespace creation", async () => {
  const r = await sh("grep -E '^Seccomp:' /proc/self/status; unshare -U true; echo rc=$?");
  assertMatch(r.stdout, /^Seccomp:\s+2$/m);
  assertMatch(r.stderr, /unshare failed: Operation not permitted/);
  assertMatch(r.stdout, /rc=1/);
});

sandboxTest("Landlock refuses a loopback TCP connect with EACCES (not ECONNREFUSED)", async () => {
  const r = await sh("bash -c 'exec 3<>/dev/tcp/127.0.0.1/9'; echo rc=$?");
  assertMatch(r.stderr, /Permission denied/);
  assertNotIncludes(r.stderr, "Connection refused");
  assertMatch(r.stdout, /rc=1/);
});

sandboxTest("the init reports the hardening it applied", async () => {
  const r = await sh("true");
  assertEquals(r.hardening.seccomp, true);
  assertEquals(r.hardening.landlockAbi > 0, true);
});

sandboxTest("every capability set is 0, NoNewPrivs 1, Seccomp 2 (the P9/P11 grep)", async () => {
  const r = await sh("grep -E 'Cap(Eff|Prm|Bnd|Amb)|NoNewPrivs|Seccomp' /proc/self/status");
  assertMatch(
    r.stdout,
    /CapPrm:\s+0{16}\nCapEff:\s+0{16}\nCapBnd:\s+0{16}\nCapAmb:\s+0{16}\nNoNewPrivs:\s+1\nSeccomp:\s+2\n/,
  );
});
