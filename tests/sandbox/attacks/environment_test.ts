// ATTACKS.md §4.7 — environment and secrets. Rows that plant secrets put them in the gateway's
// own environment (this test process), where a careless sandbox would pick them up.
import { fileURLToPath } from "node:url";
import { assert, assertEquals, assertMatch, assertNotIncludes } from "../../assert.ts";
import { type Attack, attackSuite, keyValues, python } from "./attack_table.ts";

const SECRET = `coop-e-secret-${crypto.randomUUID()}`;

/** The only names a sandbox's environment may hold (environment.ts's allowlist). */
const ALLOWED_ENV = ["PATH", "HOME", "USER", "TMPDIR", "LANG", "TERM", "TZ"];

/** Sets gateway environment variables; returns the function that restores them. */
function setGatewayEnv(vars: Record<string, string>): () => void {
  const saved = Object.keys(vars).map((name) => [name, Deno.env.get(name)] as const);
  for (const [name, value] of Object.entries(vars)) Deno.env.set(name, value);
  return () => {
    for (const [name, value] of saved) {
      if (value === undefined) Deno.env.delete(name);
      else Deno.env.set(name, value);
    }
  };
}

/** A row's `prepare`/`teardown` that plant `vars` in the gateway's environment. */
function gatewayEnv(vars: Record<string, string>): Pick<Attack, "prepare" | "teardown"> {
  let restore = () => {};
  return {
    prepare: () => {
      restore = setGatewayEnv(vars);
      return SECRET;
    },
    teardown: () => restore(),
  };
}

attackSuite("§4.7", [
  {
    id: "E1",
    name: "environment secrets",
    ...gatewayEnv({
      COOP_ATTACK_API_KEY: SECRET,
      AWS_SECRET_ACCESS_KEY: SECRET,
      ANTHROPIC_API_KEY: SECRET,
      DB_PASSWORD: SECRET,
      LD_PRELOAD: `/tmp/${SECRET}.so`,
    }),
    argv: ["env"],
    expect: (r) => {
      assertNotIncludes(r.stdout, SECRET);
      const names = r.stdout.trim().split("\n").map((l) => l.slice(0, l.indexOf("=")));
      for (const name of names) assert(ALLOWED_ENV.includes(name), `${name} leaked`);
      for (const name of ["PATH", "HOME", "USER", "TMPDIR"]) assert(names.includes(name), name);
    },
  },
  gatewayEnviron(),
  coopState(),
  {
    id: "E4",
    name: "credential injection stays host-side",
    waitsFor: "credential injection: the proxy adds no credentials and does not terminate TLS " +
      "(docs/network.md, residual risks)",
    expect: () => {},
  },
  agentSockets(),
  {
    id: "E6",
    name: "desktop and D-Bus sockets",
    needs: ["python3", "dbus-send"],
    ...gatewayEnv({
      DISPLAY: ":0",
      WAYLAND_DISPLAY: "wayland-0",
      DBUS_SESSION_BUS_ADDRESS: "unix:abstract=/tmp/dbus-coop-attack",
      XDG_RUNTIME_DIR: `/run/user/${Deno.uid()}`,
    }),
    script: `env | grep -E '^(DISPLAY|WAYLAND_DISPLAY|DBUS_SESSION_BUS_ADDRESS|XDG_RUNTIME_DIR)='
ls /tmp/.X11-unix /run/user 2>&1
dbus-send --session --dest=org.freedesktop.DBus / org.freedesktop.DBus.ListNames; echo session=$?
${
      python(`
attempt("x11_abstract", lambda: socket.socket(socket.AF_UNIX).connect("\\0/tmp/.X11-unix/X0"))
attempt("x11_path", lambda: socket.socket(socket.AF_UNIX).connect("/tmp/.X11-unix/X0"))
attempt("dbus_abstract", lambda: socket.socket(socket.AF_UNIX).connect("\\0/tmp/dbus-coop-attack"))`)
    }`,
    expect: (r) => {
      const out = keyValues(r.stdout);
      assertMatch(r.stdout, /^ls: cannot access '\/tmp\/.X11-unix': No such file/m);
      assertMatch(r.stdout, /^ls: cannot access '\/run\/user': No such file/m);
      assertEquals(out.session, "1");
      assertEquals(out.x11_abstract, "ECONNREFUSED");
      assertEquals(out.x11_path, "ENOENT");
      assertEquals(out.dbus_abstract, "ECONNREFUSED");
      // None of the gateway's desktop variables reached the command.
      for (
        const name of ["DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME"]
      ) {
        assertNotIncludes(r.stdout, `${name}`);
      }
    },
  },
]);

/** E2: the environ of the init, the gateway and a host process holding a secret. */
function gatewayEnviron(): Attack {
  let holder: Deno.ChildProcess | undefined;
  return {
    id: "E2",
    name: "gateway environ via procfs",
    prepare: () => {
      holder = new Deno.Command("sleep", {
        args: ["30"],
        env: { COOP_HOLDER_SECRET: SECRET },
        stdout: "null",
        stderr: "null",
      }).spawn();
      return `${Deno.pid} ${holder.pid}`;
    },
    script: `set -- $1; cat /proc/1/environ; echo init=$?; cat /proc/$1/environ; echo gateway=$?
cat /proc/$2/environ; echo holder=$?; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'`,
    expect: async (r, _ws, pids) => {
      const out = keyValues(r.stdout);
      assertNotIncludes(r.stdout, SECRET);
      assertEquals([out.init, out.gateway, out.holder], ["1", "1", "1"]);
      // The init is non-dumpable; the gateway and the host process are outside the pid ns.
      assertMatch(r.stderr, /\/proc\/1\/environ: Permission denied/);
      const [gateway, host] = pids.split(" ");
      assertMatch(r.stderr, new RegExp(`/proc/${gateway}/environ: No such file`));
      assertMatch(r.stderr, new RegExp(`/proc/${host}/environ: No such file`));
      // The control: the host can read the secret there.
      const environ = await Deno.readTextFile(`/proc/${host}/environ`);
      assert(environ.includes(SECRET), "the holder process has the secret");
    },
    teardown: async () => {
      holder?.kill("SIGKILL");
      await holder?.status;
    },
  };
}

/** E3: Coop's configuration and state are nowhere in the sandbox's filesystem. */
function coopState(): Attack {
  const home = Deno.env.get("HOME") ?? "/root";
  const repo = fileURLToPath(new URL("../../../", import.meta.url)).replace(/\/$/, "");
  let state = "";
  return {
    id: "E3",
    name: "gateway config and database",
    // It walks the whole root, /usr included: seconds on a fresh machine's cold cache.
    timeoutMs: 120_000,
    prepare: async () => {
      // A canary state directory the way a gateway would keep one, outside any workspace.
      state = await Deno.makeTempDir({ prefix: "coop-state-canary-" });
      await Deno.writeTextFile(`${state}/coop.toml`, `token = "${SECRET}"\n`);
      await Deno.writeTextFile(`${state}/coop.db`, SECRET);
      return state;
    },
    script:
      `find / -path /proc -prune -o \\( -name '*.db' -o -name '*.sqlite*' -o -name 'coop*.toml' \\
  -o -name 'coop-state-*' \\) -print 2>/dev/null
for p in "$1" ${repo} ${home}/.local/state/coop ${home}/.config/coop /var/lib/coop /etc/coop; do
  test -e "$p" && echo "visible: $p"
done; echo done`,
    expect: (r) => {
      assertNotIncludes(r.stdout, SECRET);
      assertNotIncludes(r.stdout, "visible:");
      assertEquals(r.stdout.split("\n").at(-2), "done");
      // What find does see is the read-only system's own files (e.g. avahi's service-types.db).
      for (const hit of r.stdout.split("\n").slice(0, -2)) {
        assertMatch(hit, /^\/usr\//, `unexpected file ${hit}`);
        assert(!/coop/i.test(hit), `Coop file visible: ${hit}`);
      }
    },
    teardown: () => Deno.remove(state, { recursive: true }),
  };
}

/** E5: no SSH or GPG agent is reachable, even when the gateway has one. */
function agentSockets(): Attack {
  let agent: Deno.Listener | undefined;
  let dir = "";
  let restore = () => {};
  return {
    id: "E5",
    name: "ssh and gpg agent sockets",
    needs: ["ssh-add", "gpg"],
    prepare: async () => {
      dir = await Deno.makeTempDir({ prefix: "coop-canary-" });
      agent = Deno.listen({ transport: "unix", path: `${dir}/agent.sock` });
      restore = setGatewayEnv({ SSH_AUTH_SOCK: `${dir}/agent.sock` });
      return `${dir}/agent.sock`;
    },
    script: `echo "sock=$SSH_AUTH_SOCK"; ssh-add -l; echo plain=$?
SSH_AUTH_SOCK="$1" ssh-add -l; echo explicit=$?
gpg --card-status >/dev/null 2>&1; echo gpg=$?
ls /run/user 2>&1`,
    expect: (r) => {
      const out = keyValues(r.stdout);
      assertEquals(out.sock, "");
      assertEquals([out.plain, out.explicit, out.gpg], ["2", "2", "2"]);
      assertMatch(r.stderr, /Could not open a connection to your authentication agent/);
      assertMatch(r.stderr, /Error connecting to agent: No such file or directory/);
      assertMatch(r.stdout, /cannot access '\/run\/user': No such file/);
    },
    teardown: async () => {
      restore();
      agent?.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}
