// ATTACKS.md F26 — a set-id file planted on the host. The workspace is nosuid inside, but its
// files are host files: as root it is an idmapped mount whose files belong to host root, so a
// set-uid copy of a shell would be a root shell for any local user. Every route that sets a
// mode is tried; each must be refused (seccomp: EPERM) or harmless, and afterwards no file or
// directory anywhere in the workspace may carry a set-id bit on the host.
import { assert, assertEquals, assertMatch } from "../../assert.ts";
import { exec } from "../../../src/sandbox/mod.ts";
import { sandboxTest, withWorkspace } from "../harness.ts";
import { type Attack, attackSuite, keyValues, python, X86_64 } from "./attack_table.ts";

const HOST_PYTHON = "/usr/bin/python3";
const NOT_X86_64 = X86_64 ? undefined : "x86_64 syscall numbers";
const SET_ID = 0o6000;

/** Every path under `root` (itself included, symlinks not followed) that has a set-id bit. */
function setIdEntries(root: string): string[] {
  const found: string[] = [];
  const visit = (path: string) => {
    const info = Deno.lstatSync(path);
    if ((info.mode ?? 0) & SET_ID) found.push(`${path} ${(info.mode! & 0o7777).toString(8)}`);
    if (info.isDirectory) { for (const e of Deno.readDirSync(path)) visit(`${path}/${e.name}`); }
  };
  visit(root);
  return found;
}

/** The permission bits of a host file, in octal. */
function modeOf(path: string): string {
  return (Deno.lstatSync(path).mode! & 0o7777).toString(8);
}

/** A set-id program of the host that the sandbox can read (its /usr is the host's). */
const HOST_SETID_BINARY = ["su", "passwd", "mount", "chsh", "newgrp", "umount"]
  .map((name) => `/usr/bin/${name}`)
  .find((path) => {
    try {
      return (Deno.statSync(path).mode! & 0o4000) !== 0;
    } catch {
      return false;
    }
  });
const NO_SETID_BINARY = HOST_SETID_BINARY
  ? undefined
  : "no set-uid program in /usr/bin on this host to copy";

/** The row, with the host walk added after its own assertions. */
function f26(attack: Omit<Attack, "id">): Attack {
  return {
    ...attack,
    id: "F26",
    expect: async (r, workspace, prepared) => {
      await attack.expect(r, workspace, prepared);
      assertEquals(setIdEntries(workspace), [], "no set-id file or directory on the host");
    },
  };
}

/** Extended attribute names of a host file (Deno has no xattr API). */
async function hostXattrs(path: string): Promise<string[]> {
  const out = await new Deno.Command(HOST_PYTHON, {
    args: ["-c", "import os, sys; print(' '.join(os.listxattr(sys.argv[1])))", path],
  }).output();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout).trim().split(" ").filter(Boolean);
}

attackSuite("§4.1", [
  f26({
    name: "chmod 4755 and u+s of a copied shell",
    needs: ["bash"],
    script: "umask 022; cp /bin/bash /work/x; chmod 4755 /work/x; echo numeric=$?; " +
      "chmod u+s /work/x; echo symbolic=$?; chmod 6755 /work/x; echo both=$?",
    expect: (r, ws) => {
      assertEquals(keyValues(r.stdout), { numeric: "1", symbolic: "1", both: "1" });
      assertMatch(r.stderr, /changing permissions of '\/work\/x': Operation not permitted/);
      assertEquals(modeOf(`${ws}/x`), "755");
    },
  }),
  f26({
    name: "chmod g+s of a file and of a directory",
    script: "umask 022; touch /work/f; mkdir /work/d; chmod g+s /work/f; echo file=$?; " +
      "chmod 2775 /work/d; echo dir=$?; chmod g+s /work/d; echo dir_symbolic=$?",
    expect: (r, ws) => {
      assertEquals(keyValues(r.stdout), { file: "1", dir: "1", dir_symbolic: "1" });
      assertMatch(r.stderr, /Operation not permitted/);
      assertEquals([modeOf(`${ws}/f`), modeOf(`${ws}/d`)], ["644", "755"]);
    },
  }),
  f26({
    name: "install -m 6755 and -m 4755",
    script: "install -m 6755 /bin/sh /work/i6; echo six=$?; install -m 4755 /bin/sh /work/i4; " +
      "echo four=$?",
    expect: (r) => {
      assertEquals(keyValues(r.stdout), { six: "1", four: "1" });
      assertMatch(r.stderr, /install: cannot change permissions of '\/work\/i6': Operation not/);
    },
  }),
  f26({
    name: "mkdir -m 2777 and -m 4755",
    script: "mkdir -m 2777 /work/g; echo setgid=$?; mkdir -m 4755 /work/u; echo setuid=$?",
    expect: (r, ws) => {
      assertEquals(keyValues(r.stdout), { setgid: "1", setuid: "1" });
      assertMatch(r.stderr, /cannot create directory ‘\/work\/g’: Operation not permitted/);
      assertEquals([...Deno.readDirSync(ws)], [], "neither directory was made");
    },
  }),
  f26({
    name: "cp --preserve=mode, cp -p and cp -a of a host set-uid program",
    waitsFor: NO_SETID_BINARY,
    script: `cp --preserve=mode ${HOST_SETID_BINARY} /work/m; echo mode=$?
cp -p ${HOST_SETID_BINARY} /work/p; echo p=$?
cp -a ${HOST_SETID_BINARY} /work/a; echo a=$?`,
    expect: (r, ws) => {
      // Each copy is made, none keeps the bit: --preserve=mode asks fchmod(04755) and is
      // refused; -p and -a first fail to give the copy host root's ownership (unmapped
      // inside), after which cp itself drops the set-id bits.
      assertEquals(keyValues(r.stdout), { mode: "1", p: "1", a: "1" });
      assertMatch(r.stderr, /preserving permissions for .\/work\/m.: Operation not permitted/);
      for (const copy of ["m", "p", "a"]) {
        assertEquals(Number.parseInt(modeOf(`${ws}/${copy}`), 8) & SET_ID, 0, copy);
      }
    },
  }),
  f26({
    name: "tar -xp of an archive holding a set-uid program",
    waitsFor: NO_SETID_BINARY,
    script: `tar -C /usr/bin -cf /tmp/a.tar ${HOST_SETID_BINARY!.slice("/usr/bin/".length)}
mkdir /work/x && tar -C /work/x --no-same-owner -xpf /tmp/a.tar; echo tar=$?; ls /work/x`,
    expect: (r, ws) => {
      assertEquals(keyValues(r.stdout).tar, "2");
      assertMatch(r.stderr, /Cannot change mode to rws.*: Operation not permitted/);
      const [name] = [...Deno.readDirSync(`${ws}/x`)].map((e) => e.name);
      assert(name, "the file itself was extracted");
      assertEquals(Number.parseInt(modeOf(`${ws}/x/${name}`), 8) & SET_ID, 0);
    },
  }),
  f26({
    name: "a hard link of a host set-uid program into the workspace",
    waitsFor: NO_SETID_BINARY,
    needs: ["python3"],
    script: `ln ${HOST_SETID_BINARY} /work/l; echo ln=$?; ${
      python(`attempt("link", lambda: os.link("${HOST_SETID_BINARY}", "/work/l2"))`)
    }`,
    expect: (r, ws) => {
      assertEquals(keyValues(r.stdout), { ln: "1", link: "EXDEV" });
      assertMatch(r.stderr, /Invalid cross-device link/);
      assertEquals([...Deno.readDirSync(ws)], []);
    },
  }),
  f26({
    name: "creating a file, node or directory with a set-id mode (python os)",
    needs: ["python3"],
    script: python(`
open("/work/existing", "w").close()
attempt("open_creat", lambda: os.open("/work/o", os.O_CREAT | os.O_WRONLY, 0o4755))
attempt("open_existing", lambda: os.open("/work/existing", os.O_CREAT | os.O_WRONLY, 0o2755))
attempt("tmpfile", lambda: os.open("/work", os.O_TMPFILE | os.O_WRONLY, 0o4755))
attempt("mknod", lambda: os.mknod("/work/n", 0o100000 | 0o4755))
attempt("mkfifo", lambda: os.mkfifo("/work/q", 0o2755))
attempt("mkdir", lambda: os.mkdir("/work/d", 0o2755))
attempt("chmod", lambda: os.chmod("/work/existing", 0o4755))
fd = os.open("/work/existing", os.O_RDONLY)
attempt("fchmod", lambda: os.fchmod(fd, 0o2711))
attempt("chmod_proc_fd", lambda: os.chmod("/proc/self/fd/%d" % fd, 0o4711))`),
    expect: (r, ws) => {
      const out = keyValues(r.stdout);
      for (const route of Object.keys(out)) assertEquals(out[route], "EPERM", route);
      assertEquals(Object.keys(out).length, 9);
      assertEquals([...Deno.readDirSync(ws)].map((e) => e.name), ["existing"]);
    },
  }),
  f26({
    name: "every mode-setting syscall, raw (fchmodat2 included), with high bits set too",
    needs: ["python3"],
    waitsFor: NOT_X86_64,
    script: rawSyscalls(),
    expect: (r) => {
      const out = keyValues(r.stdout);
      const refused = Object.entries(out).filter(([label]) => !label.startsWith("allowed_"));
      assertEquals(refused.length, 16, r.stdout + r.stderr);
      for (const [label, answer] of refused) {
        assertEquals(answer, label === "openat2" ? "ENOSYS" : "EPERM", label);
      }
      // The filter reads only what the kernel reads: no O_CREAT, no mode; bits above the mode.
      assertEquals(
        [out.allowed_open_without_creat, out.allowed_mode_above_16_bits],
        ["OK", "OK"],
      );
    },
  }),
  f26({
    name: "fchmodat2 through perl's syscall",
    needs: ["perl"],
    waitsFor: NOT_X86_64,
    script:
      `umask 022; touch /work/f; perl -e 'my $path = "/work/f"; my $r = syscall(452, -100, $path, 04755, 0);
print "fchmodat2=", ($r == 0 ? "OK" : $!+0), "\\n"'`,
    expect: (r, ws) => {
      assertEquals(keyValues(r.stdout), { fchmodat2: "1" }); // EPERM
      assertEquals(modeOf(`${ws}/f`), "644");
    },
  }),
  f26({
    name: "file capabilities: setcap and a raw security.capability xattr",
    needs: ["setcap", "python3", "bash"],
    script: `cp /bin/bash /work/x; setcap cap_setuid+ep /work/x; echo setcap=$?; ${
      python(`
import struct
# VFS_CAP_REVISION_2 | effective, with CAP_SETUID (7) permitted.
cap = struct.pack("<IIIII", 0x02000001, 1 << 7, 0, 0, 0)
attempt("setxattr", lambda: os.setxattr("/work/x", "security.capability", cap))`)
    }; grep -E '^Cap(Eff|Prm):' /proc/self/status`,
    expect: async (r, ws) => {
      assertEquals(keyValues(r.stdout).setcap, "1");
      assertEquals(keyValues(r.stdout).setxattr, "EPERM");
      assertMatch(r.stdout, /CapEff:\s+0{16}\n/);
      assertMatch(r.stdout, /CapPrm:\s+0{16}\n/);
      assertEquals(await hostXattrs(`${ws}/x`), [], "no xattr reached the host file");
    },
  }),
  f26({
    name: "chown tricks: take the file, give it away, then set-id",
    needs: ["python3"],
    script:
      `umask 022; touch /work/f; chown 0:0 /work/f; echo own=$?; chmod 6755 /work/f; echo chmod=$?
${
        python(`
attempt("give_away", lambda: os.chown("/work/f", 65534, 65534))
attempt("fchownat_then_mode", lambda: (os.chown("/work/f", 0, 0), os.chmod("/work/f", 0o2755)))`)
      }`,
    expect: (r, ws) => {
      // Only uid/gid 0 are mapped inside: the file is already ours, nobody else's is reachable
      // (EINVAL), and no ownership change makes a set-id chmod pass.
      assertEquals(keyValues(r.stdout), {
        own: "0",
        chmod: "1",
        give_away: "EINVAL",
        fchownat_then_mode: "EPERM",
      });
      assertEquals(modeOf(`${ws}/f`), "644");
      assertEquals(Deno.statSync(`${ws}/f`).uid, Deno.uid(), "the host owner is unchanged");
    },
  }),
  f26({
    name: "a POSIX ACL cannot carry a set-id bit",
    needs: ["python3"],
    script: python(`
import struct
open("/work/f", "w").close()
# ACL v2: USER_OBJ rwx, GROUP_OBJ rwx, OTHER rwx — the kernel derives the mode's rwx from it.
acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, 7, 0xffffffff) for t in (1, 4, 0x20))
attempt("acl", lambda: os.setxattr("/work/f", "system.posix_acl_access", acl))
print("mode=%o" % (os.stat("/work/f").st_mode & 0o7777))`),
    expect: (r, ws) => {
      // Allowed or unsupported by the host filesystem; either way only rwx bits change.
      assertMatch(keyValues(r.stdout).acl, /^(OK|EOPNOTSUPP)$/);
      assertEquals(modeOf(`${ws}/f`), keyValues(r.stdout).mode);
    },
  }),
  f26({
    name: "set-id made in /tmp first, then moved into the workspace",
    needs: ["bash"],
    script:
      "umask 022; cp /bin/bash /tmp/x; chmod 4755 /tmp/x; echo chmod=$?; mv /tmp/x /work/x; echo mv=$?",
    expect: (r, ws) => {
      // The rule is global, not per mount; mv across mounts copies without the bit anyway.
      assertEquals(keyValues(r.stdout), { chmod: "1", mv: "0" });
      assertEquals(modeOf(`${ws}/x`), "755");
    },
  }),
]);

/** Every mode-setting x86_64 syscall with a set-id mode, and two that must stay allowed. */
function rawSyscalls(): string {
  return python(`
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def sc(nr, *args):
    conv = [ctypes.c_char_p(a) if isinstance(a, bytes) else ctypes.c_long(a) for a in args]
    r = libc.syscall(ctypes.c_long(nr), *conv)
    if r < 0: raise OSError(ctypes.get_errno(), "")
    if nr in (2, 85, 257) and r > 2: os.close(r)
AT = -100
O_CREAT, O_WRONLY, O_TMPFILE = 0o100, 0o1, 0o20200000
HIGH = 1 << 32  # above the low word the kernel reads: must not hide the mode from the filter
open("/work/f", "w").close()
fd = os.open("/work/f", os.O_RDONLY)
for label, call in [
    ("chmod", lambda: sc(90, b"/work/f", 0o4755)),
    ("fchmod", lambda: sc(91, fd, 0o2755)),
    ("fchmodat", lambda: sc(268, AT, b"/work/f", 0o6755)),
    ("fchmodat2", lambda: sc(452, AT, b"/work/f", 0o4755, 0)),
    ("fchmodat2_high", lambda: sc(452, AT, b"/work/f", HIGH | 0o4755, 0)),
    ("creat", lambda: sc(85, b"/work/c", 0o4755)),
    ("open", lambda: sc(2, b"/work/o", O_CREAT | O_WRONLY, 0o4755)),
    ("open_tmpfile", lambda: sc(2, b"/work", O_TMPFILE | O_WRONLY, 0o2700)),
    ("openat", lambda: sc(257, AT, b"/work/o", O_CREAT | O_WRONLY, 0o4755)),
    ("openat_high_flags", lambda: sc(257, AT, b"/work/o", HIGH | O_CREAT | O_WRONLY, 0o4755)),
    ("openat_tmpfile", lambda: sc(257, AT, b"/work", O_TMPFILE | O_WRONLY, 0o4700)),
    ("mkdir", lambda: sc(83, b"/work/d", 0o2755)),
    ("mkdirat", lambda: sc(258, AT, b"/work/d", 0o4755)),
    ("mknod", lambda: sc(133, b"/work/n", 0o100000 | 0o4755, 0)),
    ("mknodat", lambda: sc(259, AT, b"/work/n", 0o010000 | 0o2644, 0)),
    ("openat2", lambda: sc(437, AT, b"/work/f", ctypes.addressof(ctypes.create_string_buffer(24)), 24)),
    ("allowed_open_without_creat", lambda: sc(257, AT, b"/work/f", 0, 0o4755)),
    ("allowed_mode_above_16_bits", lambda: sc(90, b"/work/f", (1 << 16) | 0o644)),
]:
    attempt(label, call)`);
}

sandboxTest("F26: ordinary modes, sticky directories and the umask still work", async () => {
  await withWorkspace(async (ws) => {
    const r = await exec({ workspace: ws }, [
      "sh",
      "-c",
      `umask 022; touch /work/f644; mkdir /work/d755; mkdir -m 1777 /work/sticky
install -m 0755 /bin/true /work/i755; cp -p /work/i755 /work/cp755
chmod 0600 /work/f644; chmod 0640 /work/f644; chmod 01777 /work/d755; chmod 0755 /work/d755
umask 027; touch /work/f640; mkdir /work/d750; mkfifo /work/fifo
chmod u+x,g-r /work/f640; echo rc=$?`,
    ]);
    assertEquals([r.exitCode, r.stderr, r.stdout], [0, "", "rc=0\n"]);
    const modes = Object.fromEntries(
      [...Deno.readDirSync(ws)].map((e) => [e.name, modeOf(`${ws}/${e.name}`)]),
    );
    assertEquals(modes, {
      f644: "640",
      d755: "755",
      sticky: "1777",
      i755: "755",
      cp755: "755",
      f640: "700",
      d750: "750",
      fifo: "640",
    });
  });
});

const NO_PYTHON = (() => {
  try {
    return Deno.statSync(HOST_PYTHON).isFile ? "" : " — skipped: needs /usr/bin/python3";
  } catch {
    return " — skipped: needs /usr/bin/python3";
  }
})();

sandboxTest(
  {
    name: "F26: O_TMPFILE and O_CREAT with plain modes work; a plain open's mode is unused" +
      NO_PYTHON,
    ignore: NO_PYTHON !== "",
  },
  async () => {
    await withWorkspace(async (ws) => {
      const r = await exec({ workspace: ws }, [
        "python3",
        "-c",
        `import os
os.umask(0o022)
fd = os.open("/work", os.O_TMPFILE | os.O_WRONLY, 0o600)
print("tmpfile=%o" % (os.fstat(fd).st_mode & 0o7777))
os.close(os.open("/work/made", os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o666))
os.close(os.open("/work/made", os.O_RDONLY, 0o4755))  # no O_CREAT: the mode is unused
os.mkdir("/work/sticky", 0o1777)
print("ok")`,
      ]);
      assertEquals([r.stdout, r.stderr], ["tmpfile=600\nok\n", ""]);
      assertEquals(
        [modeOf(`${ws}/made`), modeOf(`${ws}/sticky`)],
        ["644", "1755"], // mkdir keeps the sticky bit, minus the umask
      );
      assertEquals(setIdEntries(ws), []);
    });
  },
);
