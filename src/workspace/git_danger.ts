/**
 * Which git config entries a sandboxed user may not leave for the owner (ATTACKS F23, F27): in
 * one table, each class with why. Drawn from git-config(1) (git 2.39 to 2.52): every key that
 * runs a program, names an executable, makes git read another file as config, or redirects
 * where git reads, writes or connects — the owner's git would obey them on the host, as the
 * owner, on an ordinary `git status`, `fetch` or `reset`.
 *
 * The rules look at names the way git names things (`*.cmd`, `*.command`, `*.program`,
 * `*.helper`, `*Path`, `*File`, …), so keys git adds later in the same style are caught too.
 * Whatever no class matches is kept (user, branch and ordinary remote settings, colours …).
 * @module
 */
import type { GitConfigEntry } from "./git_config_parser.ts";

/** One class of dangerous entries. */
export interface GitDangerClass {
  /** A stable id, e.g. `runs-program`. */
  id: string;
  /** Why the class is dangerous, for the owner and the user. */
  why: string;
  /** Whether an entry belongs to the class. */
  matches(entry: GitConfigEntry): boolean;
}

/** Key names (the part after the last dot) that hold a program or a command line. */
const PROGRAM_KEY = new RegExp(
  `(${
    [
      "cmd",
      "command",
      "program",
      "helper",
      "editor",
      "pager",
      "askpass",
      "driver",
      "textconv",
      "external",
      "tunnel",
      "hook",
      "viewer",
      "browser",
      "gitproxy",
    ].join("|")
  })$`,
);
/** Key names that hold a file or directory git reads or writes. */
const PATH_KEY = /(path|file|dir|directory|template|skiplist)$/;
/** Booleans that only look like the above. */
const HARMLESS_KEYS = new Set(["core.quotepath"]);

/** Sections whose every key configures a program git runs (or, for `include`, more config). */
const PROGRAM_SECTIONS = new Set([
  "alias", // `!cmd` aliases run a shell; a repository's alias can shadow the owner's own
  "pager", // pager.<cmd>: the pager command of that git command
  "filter", // clean/smudge/process run on checkout and status, chosen by .gitattributes
  "difftool",
  "mergetool",
  "guitool",
  "man",
  "browser",
  "hook", // hook.<name>.command (git 2.5x config-based hooks)
  "sendemail", // smtpServer may be a program; *Cmd
  "instaweb", // httpd, browser
  "gitcvs", // server-side database files
  "trace2", // trace targets are files git writes
]);

/** Sections that change where git connects, or what it trusts there. */
const NETWORK_SECTIONS = new Set(["url", "protocol", "sideband", "bundle", "promisor"]);

/** `http.*` keys without consequence beyond performance (everything else in `http` goes). */
const HARMLESS_HTTP = new Set([
  "postbuffer",
  "version",
  "lowspeedlimit",
  "lowspeedtime",
  "maxrequests",
  "minsessions",
  "maxretries",
  "maxretrytime",
  "retryafter",
  "useragent",
  "keepalivecount",
  "keepaliveidle",
  "keepaliveinterval",
  "noepsv",
]);

/** Keys whose value git uses as a remote URL, or as a remote name that may be a URL. */
function urlValued(entry: GitConfigEntry): "url" | "name-or-url" | null {
  const { section, subsection, key } = entry;
  if ((section === "remote" || section === "submodule") && subsection !== null) {
    if (key === "url" || key === "pushurl") return "url";
  }
  if (section === "branch" && subsection !== null && (key === "remote" || key === "pushremote")) {
    return "name-or-url";
  }
  if (section === "remote" && subsection === null && key === "pushdefault") return "name-or-url";
  return null;
}

/** A network URL git fetches over its own protocols: http(s), git, ssh, or scp-like ssh. */
export function isNetworkUrl(url: string): boolean {
  if (url.includes("::") || /\s/.test(url)) return false; // transport helpers (`ext::`, `fd::`)
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)/.exec(url);
  if (scheme) {
    const host = scheme[2].replace(/^[^@]*@/, "");
    return /^(https?|git|ssh|git\+ssh|ssh\+git)$/i.test(scheme[1]) && !host.startsWith("-") &&
      host !== "";
  }
  // scp-like `[user@]host:path`: a colon before any slash. A host starting with "-" would be
  // read as an ssh option (CVE-2017-1000117).
  const scp = /^([^/:]+):/.exec(url);
  return scp !== null && !scp[1].replace(/^[^@]*@/, "").startsWith("-") && scp[1] !== "";
}

const name = (e: GitConfigEntry) => `${e.section}.${e.key}`;

/**
 * The classes, in the order reports name them. Each is tested on its own in
 * tests/workspace/git_danger_test.ts.
 */
export const GIT_DANGER_CLASSES: readonly GitDangerClass[] = [
  {
    id: "fsmonitor",
    why: "core.fsmonitor runs a program on every git status",
    matches: (e) => name(e) === "core.fsmonitor",
  },
  {
    id: "worktree",
    why: "core.worktree makes git read and write files in another directory",
    matches: (e) => name(e) === "core.worktree",
  },
  {
    id: "include",
    why: "include.path and includeIf make git read another file as config",
    matches: (e) => e.section === "include" || e.section === "includeif",
  },
  {
    id: "program-section",
    why: "aliases, pagers, filters, diff and merge tools, hooks and helpers run programs",
    matches: (e) => PROGRAM_SECTIONS.has(e.section),
  },
  {
    id: "credential",
    why: "credential helpers run programs and receive your passwords",
    matches: (e) => e.section === "credential" && e.key !== "username" && e.key !== "usehttppath",
  },
  {
    id: "runs-program",
    why: "names a program or command line git runs (*.cmd, *.command, *.program, editor, " +
      "pager, askpass, diff/merge drivers, textconv …)",
    matches: (e) =>
      e.section !== "color" && !HARMLESS_KEYS.has(name(e)) &&
      (PROGRAM_KEY.test(e.key) || ["clean", "smudge", "process"].includes(e.key) ||
        name(e) === "interactive.difffilter"),
  },
  {
    id: "transport-program",
    why: "remote.*.uploadpack, receivepack and vcs name the programs a fetch or push runs",
    matches: (e) => ["uploadpack", "receivepack", "vcs"].includes(e.key) && e.section === "remote",
  },
  {
    id: "path",
    why: "names a file or directory outside git's own that git reads or writes (hooksPath, " +
      "*File, *Dir, commit.template …)",
    matches: (e) =>
      !HARMLESS_KEYS.has(name(e)) && (PATH_KEY.test(e.key) || name(e) === "gc.repackfilterto"),
  },
  {
    id: "network",
    why: "changes where git connects or what it trusts there (url.*.insteadOf, protocol.*, " +
      "proxies, TLS settings, bundle URIs)",
    matches: (e) =>
      NETWORK_SECTIONS.has(e.section) || e.key.endsWith("proxy") ||
      e.key.endsWith("proxyauthmethod") || (e.section === "http" && !HARMLESS_HTTP.has(e.key)) ||
      name(e) === "fetch.bundleuri",
  },
  {
    id: "remote-url",
    why: "a remote that is a local path or a transport helper (ext::) reads your files or runs " +
      "a program",
    matches: (e) => {
      const kind = urlValued(e);
      if (kind === null || e.value === null) return kind !== null;
      if (kind === "name-or-url" && !/[/:\\]/.test(e.value)) return false; // a remote's name
      return !isNetworkUrl(e.value);
    },
  },
  {
    id: "submodule-update",
    why: "submodule.*.update = !command runs a shell command on git submodule update",
    matches: (e) =>
      e.section === "submodule" && e.key === "update" && (e.value ?? "").trimStart()
        .startsWith("!"),
  },
  {
    id: "protection-off",
    why: "turns off a protection git has for you",
    matches: (e) =>
      ["core.protecthfs", "core.protectntfs"].includes(name(e)) || e.section === "safe",
  },
];

/** The classes an entry belongs to (empty: safe to keep). */
export function dangerClassesOf(entry: GitConfigEntry): GitDangerClass[] {
  return GIT_DANGER_CLASSES.filter((c) => c.matches(entry));
}

/** Whether an entry is safe to keep. */
export function isSafeGitEntry(entry: GitConfigEntry): boolean {
  return GIT_DANGER_CLASSES.every((c) => !c.matches(entry));
}
