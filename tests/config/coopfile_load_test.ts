// Issue 14, item 1: the Coopfile — strict tables, every key validated with the file, key path
// and expectation; global → project → flags, later wins per key.
import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError } from "../../src/config/config_diagnostic.ts";
import { coopfileHash } from "../../src/config/coopfile_hash.ts";
import {
  applyCoopfileFlags,
  FLAGS_SOURCE,
  globalCoopfilePath,
  loadCoopfile,
} from "../../src/config/coopfile_load.ts";

function withDir(fn: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), "coopfile-"));
  try {
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function write(dir: string, name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** The ConfigError `fn` throws. */
function configErrorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error("no ConfigError thrown");
}

Deno.test("coopfile: a full file resolves every key", () => {
  withDir((dir) => {
    const file = write(
      dir,
      "Coopfile",
      `
[base]
image = "debian:bookworm"
mirror = "http://mirror.example/debian"
[packages]
install = ["jq", "python3", "g++", "libc6=2.36-9"]
[setup]
run = ["echo hi > /etc/motd"]
[agent]
install = ["npm i -g some-agent"]
command = ["some-agent", "--yes"]
[session]
persist = ["/root/.cache/", "//opt//tools"]
upper = "session"
[network]
mode = "proxy"
allow_domains = ["deb.debian.org", "*.npmjs.org:443"]
[env]
LANG = "C.UTF-8"
EDITOR = "vi"
`,
    );
    const c = loadCoopfile({ project: file, global: null });
    deepStrictEqual(c, {
      sources: [file],
      base: { kind: "debian", suite: "bookworm", mirror: "http://mirror.example/debian" },
      packages: ["jq", "python3", "g++", "libc6=2.36-9"],
      setup: ["echo hi > /etc/motd"],
      agent: { install: ["npm i -g some-agent"], command: ["some-agent", "--yes"] },
      session: { persist: ["/root/.cache", "/opt/tools"], upper: "session" },
      network: { mode: "proxy", allowDomains: ["deb.debian.org", "*.npmjs.org:443"] },
      env: { LANG: "C.UTF-8", EDITOR: "vi" },
    });
  });
});

Deno.test("coopfile: defaults; a relative oci path resolves against the Coopfile's directory", () => {
  withDir((dir) => {
    const host = loadCoopfile({
      project: write(dir, "A", '[base]\nimage = "host"\n'),
      global: null,
    });
    deepStrictEqual(host.base, { kind: "host" });
    deepStrictEqual(host.packages, []);
    deepStrictEqual(host.setup, []);
    deepStrictEqual(host.agent, { install: [] });
    deepStrictEqual(host.session, { persist: [], upper: "persistent" });
    deepStrictEqual(host.network, { mode: "none", allowDomains: [] });
    deepStrictEqual(host.env, {});
    const debian = loadCoopfile({
      project: write(dir, "B", '[base]\nimage = "debian:trixie"\n'),
      global: null,
    });
    deepStrictEqual(debian.base, {
      kind: "debian",
      suite: "trixie",
      mirror: "http://deb.debian.org/debian",
    });
    const oci = loadCoopfile({
      project: write(dir, "C", '[base]\nimage = "oci:images/app.tar"\n'),
      global: null,
    });
    deepStrictEqual(oci.base, { kind: "oci", path: join(dir, "images/app.tar") });
  });
});

/** Each row: a Coopfile's text, the key path reported, a fragment of the message. */
const BAD: readonly [text: string, path: string, message: RegExp][] = [
  ["[base]\nimage = 3", "base.image", /expected string, got 3/],
  [
    '[base]\nimage = "ubuntu:22.04"',
    "base.image",
    /must be "host", "debian:<suite>".*got "ubuntu:22.04"/,
  ],
  [
    '[base]\nimage = "debian:Bookworm"',
    "base.image",
    /suite must be lowercase.*got "debian:Bookworm"/,
  ],
  ['[base]\nimage = "debian:"', "base.image", /suite must be lowercase/],
  ['[base]\nimage = "oci:"', "base.image", /path after "oci:"/],
  ['[base]\nimage = "host"\ntag = "x"', "base.tag", /unknown key/],
  [
    '[base]\nimage = "debian:bookworm"\nmirror = "ftp://x"',
    "base.mirror",
    /http:\/\/ or https:\/\/ URL/,
  ],
  ['[base]\nimage = "debian:bookworm"\nmirror = 1', "base.mirror", /expected string, got 1/],
  [
    '[base]\nimage = "host"\nmirror = "http://x/debian"',
    "base.mirror",
    /applies only to image = "debian:<suite>"/,
  ],
  ['base = "host"', "base", /expected object, got "host"/],
  ['[packages]\ninstall = "jq"', "packages.install", /expected array, got "jq"/],
  [
    '[packages]\ninstall = ["jq", "Bad Name"]',
    "packages.install[1]",
    /Debian package name.*got "Bad Name"/,
  ],
  ['[packages]\ninstall = ["-o=evil"]', "packages.install[0]", /Debian package name/],
  ['[packages]\ninstall = ["jq;rm"]', "packages.install[0]", /Debian package name/],
  ["[packages]\nlist = []", "packages.list", /unknown key/],
  ['[setup]\nrun = "make"', "setup.run", /expected array/],
  ['[setup]\nrun = [""]', "setup.run[0]", /must not be empty/],
  ["[setup]\nrun = [1]", "setup.run[0]", /expected string, got 1/],
  ["[setup]\ncommands = []", "setup.commands", /unknown key/],
  ["[agent]\ninstall = [true]", "agent.install[0]", /expected string, got true/],
  ["[agent]\ncommand = []", "agent.command", /must name a program/],
  ['[agent]\ncommand = "claude"', "agent.command", /expected array/],
  ['[agent]\ncommand = [""]', "agent.command[0]", /must not be empty/],
  ['[agent]\nname = "x"', "agent.name", /unknown key/],
  ['[session]\npersist = ["relative/path"]', "session.persist[0]", /must be an absolute path/],
  ['[session]\npersist = ["/"]', "session.persist[0]", /must not be "\/"/],
  ['[session]\npersist = ["/root/../etc"]', "session.persist[0]", /\. or \.\. components/],
  ['[session]\npersist = ["/proc/x"]', "session.persist[0]", /must not be \/proc or under it/],
  ['[session]\npersist = ["/work"]', "session.persist[0]", /must not be \/work/],
  ['[session]\npersist = ["/tmp/cache"]', "session.persist[0]", /must not be \/tmp/],
  ['[session]\npersist = ["/dev"]', "session.persist[0]", /must not be \/dev/],
  ['[session]\npersist = ["/sys/fs"]', "session.persist[0]", /must not be \/sys/],
  ['[session]\npersist = ["/a\\nb"]', "session.persist[0]", /control characters/],
  ['[session]\npersist = ["/opt", "/opt/"]', "session.persist[1]", /repeats entry 0/],
  ['[session]\npersist = ["/opt/x", "/opt"]', "session.persist[0]", /lies inside entry 1/],
  ['[session]\npersist = "/root"', "session.persist", /expected array/],
  [
    '[session]\nupper = "forever"',
    "session.upper",
    /expected one of "persistent", "session", got "forever"/,
  ],
  ['[session]\nlifetime = "session"', "session.lifetime", /unknown key/],
  [
    '[network]\nmode = "host"',
    "network.mode",
    /expected one of "none", "proxy", "public", got "host"/,
  ],
  ['[network]\nallow_domains = ["http://x"]', "network.allow_domains[0]", /.+/],
  ['[network]\nallow_domains = "x.org"', "network.allow_domains", /expected array/],
  ["[network]\nports = []", "network.ports", /unknown key/],
  ['[env]\n"1BAD" = "x"', "env.1BAD", /environment variable name/],
  ['[env]\nCOOP_SESSION = "x"', "env.COOP_SESSION", /must not start with COOP_/],
  ["[env]\nLANG = 5", "env.LANG", /expected string, got 5/],
  ['[env]\nLANG = "a\\u0000b"', "env.LANG", /NUL/],
  ['env = "LANG=C"', "env", /expected record|expected object/],
  ["[volumes]\nx = 1", "volumes", /unknown key/],
];

Deno.test("coopfile: every key's bad value names the file, the key path and the expectation", () => {
  withDir((dir) => {
    for (const [text, path, message] of BAD) {
      const base = text.includes("[base]") || text.startsWith("base")
        ? ""
        : '[base]\nimage = "host"\n';
      // A top-level key must come before the first table.
      const body = text.startsWith("[") ? base + text : text + "\n" + base;
      const file = write(dir, "Coopfile", body + "\n");
      const error = configErrorOf(() => loadCoopfile({ project: file, global: null }));
      strictEqual(error.file, file, text);
      const hit = error.diagnostics.find((d) => d.path === path);
      ok(hit, `${JSON.stringify(text)}: no diagnostic at ${path}: ${error.message}`);
      ok(message.test(hit.message), `${JSON.stringify(text)}: ${hit.message}`);
      ok(error.message.startsWith(`${file}: `), error.message);
    }
  });
});

Deno.test("coopfile: syntax errors, a missing file and a missing image are reported precisely", () => {
  withDir((dir) => {
    const broken = write(dir, "Broken", "[base\nimage = 1\n");
    const syntax = configErrorOf(() => loadCoopfile({ project: broken, global: null }));
    strictEqual(syntax.code, "config.syntax");
    ok(/^line 1, column \d+$/.test(syntax.diagnostics[0].path), syntax.diagnostics[0].path);
    const missing = join(dir, "Nope");
    const absent = configErrorOf(() => loadCoopfile({ project: missing, global: null }));
    strictEqual(absent.code, "config.unreadable");
    ok(absent.message.includes(`${missing}: (file): cannot read Coopfile: file not found`));
    mkdirSync(join(dir, "Dir"));
    const directory = configErrorOf(() =>
      loadCoopfile({ project: join(dir, "Dir"), global: null })
    );
    ok(directory.message.includes("is a directory"), directory.message);
    const empty = write(dir, "Empty", '[packages]\ninstall = ["jq"]\n');
    const noImage = configErrorOf(() => loadCoopfile({ project: empty, global: null }));
    strictEqual(noImage.diagnostics[0].path, "base.image");
    ok(/is required/.test(noImage.diagnostics[0].message), noImage.message);
  });
});

Deno.test("coopfile: global then project, later wins per key; [env] merges per variable", () => {
  withDir((dir) => {
    const global = write(
      dir,
      "global",
      `
[base]
image = "debian:bookworm"
mirror = "http://near.example/debian"
[packages]
install = ["git"]
[session]
persist = ["/root/.cache"]
upper = "session"
[network]
mode = "proxy"
allow_domains = ["deb.debian.org"]
[env]
LANG = "C.UTF-8"
EDITOR = "nano"
`,
    );
    mkdirSync(join(dir, "proj"));
    const project = write(
      dir,
      "proj/Coopfile",
      `
[base]
image = "debian:trixie"
[packages]
install = ["jq"]
[session]
upper = "persistent"
[env]
EDITOR = "vi"
`,
    );
    const c = loadCoopfile({ project, global });
    deepStrictEqual(c.sources, [global, project]);
    // The mirror is its own key: the project's image does not drop the global mirror.
    deepStrictEqual(c.base, {
      kind: "debian",
      suite: "trixie",
      mirror: "http://near.example/debian",
    });
    deepStrictEqual(c.packages, ["jq"]);
    deepStrictEqual(c.session, { persist: ["/root/.cache"], upper: "persistent" });
    deepStrictEqual(c.network, { mode: "proxy", allowDomains: ["deb.debian.org"] });
    deepStrictEqual(c.env, { LANG: "C.UTF-8", EDITOR: "vi" });
    // The image may come from the global file alone; an error in the global file names it.
    const bare = write(dir, "proj/Bare", '[packages]\ninstall = ["curl"]\n');
    strictEqual(loadCoopfile({ project: bare, global }).base.kind, "debian");
    const badGlobal = write(dir, "badglobal", "[session]\nupper = 1\n");
    const error = configErrorOf(() => loadCoopfile({ project, global: badGlobal }));
    strictEqual(error.file, badGlobal);
    strictEqual(error.diagnostics[0].path, "session.upper");
    // No image anywhere: the project file is named, and the global file mentioned.
    const noImageGlobal = write(dir, "noimage", '[env]\nLANG = "C"\n');
    const noImage = configErrorOf(() => loadCoopfile({ project: bare, global: noImageGlobal }));
    strictEqual(noImage.file, bare);
    strictEqual(noImage.diagnostics[0].path, "base.image");
    ok(noImage.diagnostics[0].message.includes(noImageGlobal), noImage.message);
  });
});

Deno.test("coopfile: the global file defaults to ~/.config/coop/Coopfile when it exists", () => {
  withDir((dir) => {
    strictEqual(globalCoopfilePath(dir), join(dir, ".config/coop/Coopfile"));
    const project = write(dir, "Coopfile", '[packages]\ninstall = ["jq"]\n');
    const home = Deno.env.get("HOME");
    Deno.env.set("HOME", dir);
    try {
      // None there: the project must name the image itself.
      throws(() => loadCoopfile({ project }), ConfigError);
      mkdirSync(join(dir, ".config/coop"), { recursive: true });
      write(dir, ".config/coop/Coopfile", '[base]\nimage = "host"\n');
      const c = loadCoopfile({ project });
      deepStrictEqual(c.sources, [join(dir, ".config/coop/Coopfile"), project]);
      deepStrictEqual(c.base, { kind: "host" });
      // null: no global file even when one exists.
      throws(() => loadCoopfile({ project, global: null }), ConfigError);
    } finally {
      if (home === undefined) Deno.env.delete("HOME");
      else Deno.env.set("HOME", home);
    }
  });
});

Deno.test("coopfile: flags override — --image and --network replace, --package adds", () => {
  withDir((dir) => {
    const file = write(
      dir,
      "Coopfile",
      '[base]\nimage = "debian:bookworm"\n[packages]\ninstall = ["jq"]\n[network]\nmode = "none"\n',
    );
    const c = loadCoopfile({ project: file, global: null });
    const out = applyCoopfileFlags(c, {
      image: "oci:img.tar",
      packages: ["curl", "jq"],
      network: "proxy",
    }, "/srv/build");
    deepStrictEqual(out.base, { kind: "oci", path: "/srv/build/img.tar" });
    deepStrictEqual(out.packages, ["jq", "curl"]);
    strictEqual(out.network.mode, "proxy");
    deepStrictEqual(applyCoopfileFlags(c, {}), c);
    const debian = applyCoopfileFlags(c, { image: "debian:trixie" });
    deepStrictEqual(debian.base, {
      kind: "debian",
      suite: "trixie",
      mirror: "http://deb.debian.org/debian",
    });
    const rows: [flags: Parameters<typeof applyCoopfileFlags>[1], path: string, m: RegExp][] = [
      [{ image: "alpine" }, "--image", /must be "host".*got "alpine"/],
      [{ packages: ["ok", "NOT OK"] }, "--package", /Debian package name.*"NOT OK"/],
      [{ network: "host" }, "--network", /expected one of "none", "proxy", "public", got "host"/],
    ];
    for (const [flags, path, message] of rows) {
      const error = configErrorOf(() => applyCoopfileFlags(c, flags));
      strictEqual(error.file, FLAGS_SOURCE);
      strictEqual(error.diagnostics[0].path, path);
      ok(message.test(error.diagnostics[0].message), error.message);
    }
  });
});

Deno.test("coopfile: the base hash changes with what the base is built from, not run-time keys", () => {
  withDir((dir) => {
    const a = loadCoopfile({
      project: write(dir, "A", '[base]\nimage = "host"\n[env]\nA = "1"\nB = "2"\n'),
      global: null,
    });
    const b = loadCoopfile({
      project: write(
        dir,
        "B",
        '[base]\nimage = "host"\n[env]\nB = "2"\nA = "1"\n[session]\nupper = "session"\n' +
          '[agent]\ncommand = ["x"]\n[network]\nmode = "public"\n',
      ),
      global: null,
    });
    strictEqual(coopfileHash(a), coopfileHash(b));
    ok(/^[0-9a-f]{64}$/.test(coopfileHash(a)));
    const withPackage = applyCoopfileFlags(a, { packages: ["jq"] });
    ok(coopfileHash(withPackage) !== coopfileHash(a));
  });
});
