/**
 * The table of dangerous git config entries (src/workspace/git_danger.ts): each class with the
 * entries it must catch, and the harmless settings a user needs that no class may take.
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import { GIT_DANGER_CLASSES, isNetworkUrl } from "../../src/workspace/git_danger.ts";
import { type GitConfigEntry, parseGitConfig } from "../../src/workspace/git_config_parser.ts";

function entry(line: string): GitConfigEntry {
  // "section.sub.key=value" or "section.key" (no value)
  const [name, ...rest] = line.split("=");
  const parts = name.split(".");
  const header = parts.length > 2
    ? `[${parts[0]} "${parts.slice(1, -1).join(".")}"]`
    : `[${parts[0]}]`;
  const key = parts[parts.length - 1];
  const body = rest.length ? `${key} = "${rest.join("=").replace(/[\\"]/g, "\\$&")}"` : key;
  const parsed = parseGitConfig(new TextEncoder().encode(`${header}\n${body}\n`));
  ok(parsed.error === null && parsed.entries.length === 1, line);
  return parsed.entries[0];
}

const CATCHES: Record<string, string[]> = {
  "fsmonitor": ["core.fsmonitor=touch /tmp/x", "core.fsMonitor=true"],
  "worktree": ["core.worktree=/home/owner", "core.worktree=../.."],
  "include": [
    "include.path=evil.inc",
    "includeIf.gitdir:/.path=x",
    "includeif.onbranch:main.path=y",
  ],
  "program-section": [
    "alias.st=!touch /tmp/x",
    "alias.co=checkout",
    "alias.x.command=touch /tmp/x",
    "pager.log=touch /tmp/x",
    "filter.lfs.clean=touch /tmp/x",
    "filter.x.smudge=touch /tmp/x",
    "filter.x.process=touch /tmp/x",
    "filter.x.required",
    "difftool.x.cmd=touch /tmp/x",
    "mergetool.x.path=/tmp/x",
    "guitool.x.cmd=x",
    "man.x.cmd=x",
    "man.viewer=x",
    "browser.x.path=/tmp/x",
    "hook.pre-commit.command=x",
    "sendemail.smtpServer=/tmp/x",
    "sendemail.toCmd=x",
    "instaweb.httpd=x",
    "gitcvs.dbName=/tmp/x",
    "trace2.normalTarget=/home/owner/.bashrc",
  ],
  "credential": [
    "credential.helper=!touch /tmp/x",
    "credential.https://x.helper=y",
    "credential.protectProtocol=false",
  ],
  "runs-program": [
    "core.pager=touch /tmp/x",
    "core.editor=x",
    "core.sshCommand=x",
    "core.askPass=x",
    "core.gitProxy=x",
    "core.alternateRefsCommand=x",
    "sequence.editor=x",
    "gpg.program=x",
    "gpg.ssh.program=x",
    "gpg.ssh.defaultKeyCommand=x",
    "diff.external=x",
    "diff.x.textconv=x",
    "diff.x.command=x",
    "merge.x.driver=x",
    "trailer.x.cmd=x",
    "trailer.x.command=x",
    "tar.tgz.command=x",
    "uploadpack.packObjectsHook=x",
    "gc.recentObjectsHook=x",
    "imap.tunnel=x",
    "web.browser=x",
    "help.browser=x",
    "interactive.diffFilter=x",
    "lfs.extension.x.clean=x",
  ],
  "transport-program": [
    "remote.origin.uploadpack=x",
    "remote.origin.receivepack=x",
    "remote.origin.vcs=x",
  ],
  "path": [
    "core.hooksPath=/tmp/h",
    "core.attributesFile=/home/owner/a",
    "core.excludesFile=x",
    "commit.template=/home/owner/.ssh/id_ed25519",
    "init.templateDir=/home/owner/.ssh",
    "format.outputDirectory=/home/owner",
    "blame.ignoreRevsFile=x",
    "mailmap.file=x",
    "diff.orderFile=x",
    "fsck.skipList=x",
    "submodule.x.gitdir=/home/owner/r",
    "gc.repackFilterTo=/home/owner/x",
    "gpg.ssh.allowedSignersFile=x",
    "lfs.customtransfer.x.path=x",
  ],
  "network": [
    "url.ext::sh -c touch% /tmp/x.insteadOf=https://",
    "url.x.pushInsteadOf=y",
    "protocol.ext.allow=always",
    "protocol.allow=always",
    "http.proxy=http://evil",
    "http.https://github.com.proxy=x",
    "http.sslVerify=false",
    "http.sslCAInfo=/work/ca.pem",
    "http.cookieFile=/home/owner/.bashrc",
    "http.saveCookies=true",
    "http.extraHeader=X: y",
    "http.curloptResolve=github.com:443:1.2.3.4",
    "remote.origin.proxy=x",
    "sideband.allowControlCharacters=true",
    "bundle.x.uri=file:///home/owner/b",
    "fetch.bundleURI=x",
    "promisor.acceptFromServer=all",
  ],
  "remote-url": [
    "remote.origin.url=ext::sh -c touch% /tmp/x",
    "remote.origin.url=/home/owner/private",
    "remote.origin.url=file:///home/owner/private",
    "remote.origin.url=../../elsewhere",
    "remote.origin.url=~owner/repo",
    "remote.origin.pushurl=fd::3",
    "remote.origin.url=ssh://-oProxyCommand=x/y",
    "remote.origin.url=-oProxyCommand=x:y",
    "submodule.x.url=/home/owner/r",
    "branch.main.remote=/home/owner/private",
    "branch.main.pushRemote=ext::x",
    "remote.pushDefault=../x",
  ],
  "submodule-update": ["submodule.x.update=!touch /tmp/x", "submodule.x.update=  !x"],
  "protection-off": ["core.protectNTFS=false", "core.protectHFS=false", "safe.directory=*"],
};

/** What a user's repository normally holds: none of it may be taken. */
const SAFE = [
  "core.repositoryformatversion=0",
  "core.filemode=true",
  "core.bare=false",
  "core.logallrefupdates=true",
  "core.quotePath=off",
  "core.autocrlf=input",
  "core.ignorecase=false",
  "user.name=Bob",
  "user.email=bob@example.org",
  "user.signingKey=ABCD",
  "remote.origin.url=https://github.com/bob/app.git",
  "remote.origin.url=git@github.com:bob/app.git",
  "remote.origin.url=ssh://git@example.org:2222/app.git",
  "remote.origin.url=git://example.org/app.git",
  "remote.origin.fetch=+refs/heads/*:refs/remotes/origin/*",
  "remote.origin.pushurl=https://example.org/app.git",
  "remote.origin.prune=true",
  "branch.main.remote=origin",
  "branch.main.remote=.",
  "branch.main.merge=refs/heads/main",
  "branch.main.rebase=true",
  "pull.rebase=false",
  "push.default=simple",
  "init.defaultBranch=main",
  "color.ui=auto",
  "color.pager=true",
  "diff.renames=true",
  "diff.tool=vimdiff",
  "merge.conflictStyle=zdiff3",
  "fetch.prune=true",
  "extensions.worktreeConfig=true",
  "submodule.lib.url=https://example.org/lib.git",
  "submodule.lib.active=true",
  "submodule.lib.update=rebase",
  "http.postBuffer=524288000",
  "credential.username=bob",
  "gc.auto=0",
  "commit.gpgSign=false",
  "log.decorate=short",
];

for (const c of GIT_DANGER_CLASSES) {
  Deno.test(`git danger class ${c.id}: catches what it names`, () => {
    const examples = CATCHES[c.id];
    ok(examples?.length, `class ${c.id} has examples in this test`);
    for (const line of examples) ok(c.matches(entry(line)), `${c.id} must catch ${line}`);
  });
}

Deno.test("git danger classes: a user's ordinary settings are all kept", () => {
  const taken = SAFE.filter((line) => GIT_DANGER_CLASSES.some((c) => c.matches(entry(line))));
  deepStrictEqual(taken, []);
});

Deno.test("isNetworkUrl: git's own network protocols only", () => {
  for (const url of ["https://x/y", "http://x/y", "git://x/y", "ssh://x/y", "git@x:y", "x:y"]) {
    ok(isNetworkUrl(url), url);
  }
  for (const url of ["/abs", "./rel", "rel", "file:///x", "ext::sh", "fd::1", "ssh://-o/x", ""]) {
    ok(!isNetworkUrl(url), url);
  }
});
