// ATTACKS.md §4.8 — file-descriptor leaks. The gateway here deliberately holds fds without
// O_CLOEXEC (a secret file, a unix socket pair), as a native addon or a careless library
// would: the init closes everything above 2 before it applies Landlock, so none reach the command.
import { assert, assertEquals, assertMatch, assertNotIncludes } from "../../assert.ts";
import { type Attack, attackSuite, keyValues, python } from "./attack_table.ts";

const SECRET = `coop-d-secret-${crypto.randomUUID()}`;

/** Fds opened through libc without O_CLOEXEC, as the gateway's leak. */
function leakyGatewayFds(): Pick<Attack, "prepare" | "teardown"> {
  let libc: Deno.DynamicLibrary<typeof LIBC> | undefined;
  let dir = "";
  let fds: number[] = [];
  return {
    prepare: async () => {
      dir = await Deno.makeTempDir({ prefix: "coop-canary-" });
      await Deno.writeTextFile(`${dir}/secret`, SECRET);
      libc = Deno.dlopen("libc.so.6", LIBC);
      const file = libc.symbols.open(new TextEncoder().encode(`${dir}/secret\0`), 0);
      const pair = new Int32Array(2);
      const r = libc.symbols.socketpair(1, 1, 0, new Uint8Array(pair.buffer)); // AF_UNIX, STREAM
      assert(file >= 0 && r === 0, "the leaky fds were opened");
      fds = [file, pair[0], pair[1]];
      for (const fd of fds) {
        assert(Deno.readLinkSync(`/proc/self/fd/${fd}`), `fd ${fd} is open in the gateway`);
      }
      return fds.join(" ");
    },
    teardown: async () => {
      for (const fd of fds) libc?.symbols.close(fd);
      libc?.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

const LIBC = {
  open: { parameters: ["buffer", "i32"], result: "i32" },
  socketpair: { parameters: ["i32", "i32", "i32", "buffer"], result: "i32" },
  close: { parameters: ["i32"], result: "i32" },
} as const;

/** Python that prints `open_fds=` with every fd open in the python process. */
const LIST_FDS = `
import resource
open_fds = []
for fd in range(min(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 1 << 16)):
    try:
        os.fstat(fd)
        open_fds.append(fd)
    except OSError as e:
        assert e.errno == errno.EBADF
print("open_fds=" + ",".join(map(str, open_fds)))`;

attackSuite("§4.8", [
  {
    id: "D1",
    name: "inherited fds",
    needs: ["python3"],
    ...leakyGatewayFds(),
    // No pipeline after ls: the shell would hold the pipe's fds while ls looks.
    script: `ls /proc/$$/fd
for fd in $1; do cat /proc/self/fd/$fd 2>&1; done
${
      python(`${LIST_FDS}
for fd in map(int, sys.argv[1].split()):
    attempt("read_%d" % fd, lambda: os.read(fd, 100))`)
    }`,
    expect: (r, _ws, leaked) => {
      const out = keyValues(r.stdout);
      const [first] = leaked.split(" ");
      assertEquals(
        r.stdout.split("\n").slice(0, 4),
        ["0", "1", "2", `cat: /proc/self/fd/${first}: No such file or directory`],
        "the shell's fds, then the first leaked fd's absence",
      );
      assertEquals(out.open_fds, "0,1,2");
      for (const fd of leaked.split(" ")) {
        assertMatch(r.stdout, new RegExp(`/proc/self/fd/${fd}: No such file`));
        assertEquals(out[`read_${fd}`], "EBADF", `fd ${fd}`);
      }
      assertNotIncludes(r.stdout, SECRET);
    },
  },
  {
    id: "D3",
    name: "inherited sockets and SCM_RIGHTS to the gateway",
    needs: ["python3"],
    ...leakyGatewayFds(),
    script: python(`${LIST_FDS}
import array, stat
modes = [os.fstat(fd).st_mode for fd in range(3)]
print("stdio=" + ",".join("fifo" if stat.S_ISFIFO(m) else oct(m) for m in modes))
# Try to pass our stdout to each fd number the gateway holds, as if it were its control socket.
for fd in map(int, sys.argv[1].split()):
    s_fds = array.array("i", [1])
    attempt("sendmsg_%d" % fd, lambda: socket.socket(fileno=fd).sendmsg(
        [b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, s_fds)]))`),
    expect: (r, _ws, leaked) => {
      const out = keyValues(r.stdout);
      assertEquals(out.stdio, "fifo,fifo,fifo", "stdio are pipes, not sockets");
      assertEquals(out.open_fds, "0,1,2");
      for (const fd of leaked.split(" ")) assertEquals(out[`sendmsg_${fd}`], "EBADF", `fd ${fd}`);
    },
  },
  {
    id: "D4",
    name: "fds opened before Landlock",
    needs: ["python3"],
    // The init closes its copies of the command's stdio just after the fork, then only waits
    // for signals (state S): look once it waits, or a stalled init still shows 0 1 2.
    script: `until read -r _ _ s _ < /proc/1/stat && [ "$s" = S ]; do :; done
ls /proc/1/fd | tr '\\n' ' '; echo
${
      python(`
for fd in os.listdir("/proc/1/fd"):
    attempt("readlink_%s" % fd, lambda: os.readlink("/proc/1/fd/" + fd))
    attempt("open_%s" % fd, lambda: os.open("/proc/1/fd/" + fd, os.O_WRONLY))
for fd in range(3):
    print("fd%d=%s" % (fd, os.readlink("/proc/self/fd/%d" % fd).split(":")[0]))`)
    }`,
    expect: (r) => {
      const out = keyValues(r.stdout);
      // The init keeps exactly one fd, its status pipe to the gateway; non-dumpable, it is
      // neither readable nor openable through procfs.
      assertEquals(r.stdout.split("\n")[0], "3 ");
      assertEquals([out.readlink_3, out.open_3], ["EACCES", "EACCES"]);
      // The command's own fds are the three pipes created for it: no path-based fd exists
      // that Landlock would not have checked.
      assertEquals([out.fd0, out.fd1, out.fd2], ["pipe", "pipe", "pipe"]);
    },
  },
]);
