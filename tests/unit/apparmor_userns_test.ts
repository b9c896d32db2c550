// Issue 15, item 4: Ubuntu's AppArmor restriction of unprivileged user namespaces. This kernel
// has no such sysctl, so detection runs against stand-in /proc trees, and the profile that
// `coop setup apparmor` writes is held to AppArmor's documented syntax (apparmor.d(5), and the
// shape of the upstream profiles that grant userns, e.g. profiles/apparmor.d/chrome:
// `abi <abi/N>,`, `include <tunables/global>`, `profile NAME PATH flags=(unconfined) {`,
// `userns,`, `include if exists <local/NAME>`). apparmor_parser is not installed here, so the
// text was not compiled by it.
import { assert, assertEquals, assertMatch, assertThrows } from "../assert.ts";
import {
  appArmorProfile,
  detectAppArmorUserns,
  looksLikeAppArmorDenial,
  RESTRICT_SYSCTL,
} from "../../src/sandbox/apparmor_userns.ts";
import { ERRNO } from "../../src/sandbox/errno.ts";
import { renderStatus } from "../../src/cli/sandbox_command.ts";
import { setupCommand, type SetupDependencies } from "../../src/cli/setup_command.ts";

const DENO = "/home/me/.deno/bin/deno";

/** A stand-in /proc with the sysctl (absent when null) and this process's AppArmor label. */
async function standInProc(sysctl: string | null, label = "unconfined"): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "coop-proc-" });
  await Deno.mkdir(`${root}/sys/kernel`, { recursive: true });
  await Deno.mkdir(`${root}/self/attr/apparmor`, { recursive: true });
  if (sysctl !== null) await Deno.writeTextFile(`${root}/${RESTRICT_SYSCTL}`, `${sysctl}\n`);
  await Deno.writeTextFile(`${root}/self/attr/apparmor/current`, `${label}\n`);
  return root;
}

Deno.test("AppArmor: restricted + unconfined + unprivileged is detected, with the exact fix", async () => {
  const proc = await standInProc("1");
  try {
    const found = detectAppArmorUserns(proc, 1000, DENO);
    assertEquals([found.restricted, found.ok, found.profile], [true, false, null]);
    assertMatch(
      found.evidence,
      /apparmor_restrict_unprivileged_userns = 1; uid 1000; AppArmor label unconfined/,
    );
    assertMatch(
      found.fix!,
      /Run `sudo coop setup apparmor` once: .* grants userns to \/home\/me\/\.deno\/bin\/deno/,
    );
    // The failure pattern: EPERM/EACCES where the namespace's capabilities are needed.
    assert(looksLikeAppArmorDenial("clone", ERRNO.EPERM, found));
    assert(looksLikeAppArmorDenial("mount-proc", ERRNO.EACCES, found));
    assert(looksLikeAppArmorDenial("id-map", ERRNO.EPERM, found));
    assert(!looksLikeAppArmorDenial("mount-workspace", ERRNO.ENOENT, found));
    assert(!looksLikeAppArmorDenial("seccomp", ERRNO.EPERM, found));
  } finally {
    await Deno.remove(proc, { recursive: true });
  }
});

Deno.test("AppArmor: no restriction when off, absent, for root, or under Coop's profile", async () => {
  const cases: Array<[string | null, string, number]> = [
    ["0", "unconfined", 1000],
    [null, "unconfined", 1000],
    ["1", "unconfined", 0],
    ["1", "coop-deno (unconfined)", 1000],
  ];
  for (const [sysctl, label, uid] of cases) {
    const proc = await standInProc(sysctl, label);
    try {
      const found = detectAppArmorUserns(proc, uid, DENO);
      assertEquals([found.ok, found.fix], [true, null], `${sysctl} ${label} ${uid}`);
      assert(!looksLikeAppArmorDenial("clone", ERRNO.EPERM, found));
    } finally {
      await Deno.remove(proc, { recursive: true });
    }
  }
  const proc = await standInProc(null);
  assertMatch(detectAppArmorUserns(proc, 1000, DENO).evidence, /absent/);
  await Deno.remove(proc, { recursive: true });
});

Deno.test("AppArmor: coop sandbox status shows ✗ with the fix when the sandbox cannot start", () => {
  const text = renderStatus({
    available: false,
    error: 'sandbox setup failed at step "mount-proc": EACCES (permission denied)',
    platform: { os: "linux", arch: "x86_64", kernel: "6.8.0-45-generic", uid: 1000 },
    checks: [{
      id: "apparmor-userns",
      label: "user namespaces allowed (AppArmor)",
      ok: false,
      evidence:
        "kernel.apparmor_restrict_unprivileged_userns = 1. Fix: Run `sudo coop setup apparmor`",
    }],
  });
  assertMatch(text, /✗ unavailable: .*mount-proc/);
  assertMatch(
    text,
    /✗ user namespaces allowed \(AppArmor\): .*Fix: Run `sudo coop setup apparmor`/,
  );
});

Deno.test("AppArmor profile: the documented syntax, granting userns to the runtime only", () => {
  assertEquals(
    appArmorProfile(DENO).split("\n").filter((l) => l && !l.trim().startsWith("#")),
    [
      "abi <abi/4.0>,",
      "include <tunables/global>",
      `profile coop-deno ${DENO} flags=(unconfined) {`,
      "  userns,",
      "  include if exists <local/coop-deno>",
      "}",
    ],
  );
  // A path AppArmor would read as a pattern, or relative, is refused rather than mis-attached.
  for (const bad of ["deno", "/opt/my deno", "/opt/deno*", "/opt/{a,b}/deno", '/opt/"x"']) {
    assertMatch(
      assertThrows(() => appArmorProfile(bad), Error).message,
      /cannot write an AppArmor profile/,
    );
  }
});

function deps(uid: number, log: string[], code = 0): SetupDependencies {
  return {
    uid,
    runtime: DENO,
    run: (program, args) => {
      log.push([program, ...args].join(" "));
      return Promise.resolve({ code, stderr: code ? "syntax error" : "" });
    },
    out: (t) => log.push(`out: ${t}`),
    err: (t) => log.push(`err: ${t}`),
  };
}

Deno.test("coop setup apparmor: as root writes the profile and loads it with apparmor_parser -r", async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-apparmor-" });
  try {
    const log: string[] = [];
    assertEquals(await setupCommand(["apparmor", "--dir", dir], deps(0, log)), 0);
    assertEquals(await Deno.readTextFile(`${dir}/coop-deno`), appArmorProfile(DENO));
    assertEquals(log[0], `apparmor_parser -r ${dir}/coop-deno`);
    assertMatch(log[1], /out: Loaded AppArmor profile coop-deno/);
    const failing: string[] = [];
    assertEquals(await setupCommand(["apparmor", "--dir", dir], deps(0, failing, 1)), 1);
    assertMatch(failing[1], /err: coop: apparmor_parser could not load .*syntax error/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("coop setup apparmor: unprivileged is refused (nothing written) unless --print", async () => {
  const log: string[] = [];
  assertEquals(await setupCommand(["apparmor", "--dir", "/nonexistent"], deps(1000, log)), 1);
  assertMatch(log[0], /err: coop: setup apparmor .* run it as root \(sudo coop setup apparmor\)/);
  const printed: string[] = [];
  assertEquals(
    await setupCommand(
      ["apparmor", "--print", "--runtime", "/usr/local/bin/coop"],
      deps(1000, printed),
    ),
    0,
  );
  assertMatch(
    printed[0],
    /profile coop-coop \/usr\/local\/bin\/coop flags=\(unconfined\) \{\n {2}userns,/,
  );
});
