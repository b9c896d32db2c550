// ATTACKS.md §4.1 next to F9/F10 — what /proc tells about the host kernel and its users.
//
// The sandbox's /proc is fresh (its own pid namespace), but some of its files are the host's:
// the kernel command line, the boot id, keys, kernel symbols, host-wide timers and interrupt
// counts, hardware. ffi/init/mounts.c hides each behind an empty, read-only file or directory.
import { existsSync } from "node:fs";
import { assert, assertEquals, assertMatch, assertNotIncludes } from "../../assert.ts";
import { attackSuite } from "./attack_table.ts";

/** The paths that must show nothing of the host, and what each is (file or directory). */
const MASKED: ReadonlyArray<[string, "file" | "dir"]> = [
  ["/proc/cmdline", "file"],
  ["/proc/sys/kernel/random/boot_id", "file"],
  ["/proc/keys", "file"],
  ["/proc/kcore", "file"],
  ["/proc/kallsyms", "file"],
  ["/proc/timer_list", "file"],
  ["/proc/sched_debug", "file"],
  ["/proc/latency_stats", "file"],
  ["/proc/interrupts", "file"],
  ["/proc/acpi", "dir"],
  ["/proc/scsi", "dir"],
  ["/proc/asound", "dir"],
];

/**
 * For each path: its kind and size (bytes, or entries) inside, a write attempt, and the
 * options of the mount on it.
 */
const PROBE = MASKED.map(([path]) => path).map((p) =>
  `if [ -d ${p} ]; then echo "${p} dir $(ls -A ${p} | wc -l)"
  err=$( (touch ${p}/planted) 2>&1 ); echo "write ${p} $? $err"
elif [ -e ${p} ]; then echo "${p} file $(cat ${p} 2>&1 | wc -c)"
  err=$( (echo x > ${p}) 2>&1 ); echo "write ${p} $? $err"
else echo "${p} absent"; fi
echo "mount ${p} $(grep " ${p} " /proc/self/mountinfo | cut -d' ' -f6)"`
).join("\n");

attackSuite("§4.1", [
  {
    id: "F10-mask",
    name: "host kernel information in /proc (cmdline, boot id, keys, symbols, timers, hardware)",
    // The host's own values, read by the test on the host: none of their bytes may appear.
    prepare: () =>
      JSON.stringify({
        cmdline: Deno.readTextFileSync("/proc/cmdline").trim(),
        bootId: Deno.readTextFileSync("/proc/sys/kernel/random/boot_id").trim(),
      }),
    script: `${PROBE}
cat ${MASKED.filter(([p, kind]) => kind === "file" && existsSync(p)).map(([p]) => p).join(" ")}`,
    expect: (r, _ws, prepared) => {
      const host = JSON.parse(prepared) as { cmdline: string; bootId: string };
      assert(host.cmdline.length > 0 && host.bootId.length === 36, "the host's values were read");
      assertNotIncludes(r.stdout + r.stderr, host.cmdline, "the host's kernel command line");
      assertNotIncludes(r.stdout + r.stderr, host.bootId, "the host's boot id");
      const lines = r.stdout.split("\n");
      let masked = 0;
      for (const [path, kind] of MASKED) {
        if (!existsSync(path)) {
          // Skipped, not failed: this kernel has no such entry, inside or out.
          assert(lines.includes(`${path} absent`), `${path} is absent inside too`);
          continue;
        }
        masked++;
        assert(lines.includes(`${path} ${kind} 0`), `${path}: empty ${kind} inside`);
        assertMatch(lines.find((l) => l.startsWith(`mount ${path} `)) ?? "", / ro,.*noexec/);
        // A masked directory is a removed one, so nothing can be created in it (ENOENT).
        const refused = kind === "file"
          ? /(Read-only file system|Permission denied)/
          : /(Read-only file system|Permission denied|No such file or directory)/;
        const write = lines.find((l) => l.startsWith(`write ${path} `)) ?? "";
        assertMatch(write, / [12] /, `${path}: the write failed`);
        assertMatch(write, refused, path);
      }
      // cmdline, boot_id and keys exist on every kernel this runs on; the rest vary.
      assert(masked >= 3, `${masked} masked paths checked`);
      assertEquals(r.exitCode, 0, "the final cat read every masked file this kernel has");
    },
  },
]);
