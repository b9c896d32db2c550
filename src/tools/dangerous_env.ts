/**
 * Environment variables `exec` refuses to set: each one makes a program run code or load
 * libraries it was not asked to (the dynamic linker, shells' start-up files, interpreters'
 * start-up and module paths, git's and other tools' helper commands), or sends secrets
 * elsewhere (`SSLKEYLOGFILE`). The list is a floor: the sandbox still confines whatever runs.
 * @module
 */

/** Whole names, each with why it is refused (shown to the model). */
export const DANGEROUS_ENV_NAMES: Readonly<Record<string, string>> = {
  // glibc's own "unsecure" list (unsecvars.h) beyond the LD_ prefix.
  GCONV_PATH: "loads character-set modules from any directory",
  GLIBC_TUNABLES: "changes the C library's behaviour (CVE-2023-4911)",
  GETCONF_DIR: "points getconf at other programs",
  HOSTALIASES: "redirects host name lookups",
  LOCPATH: "loads locale data from any directory",
  MALLOC_TRACE: "makes every program write a file",
  NLSPATH: "loads message catalogs from any directory",
  RESOLV_HOST_CONF: "redirects host name lookups",
  RES_OPTIONS: "changes the resolver's behaviour",
  LOCALDOMAIN: "changes the resolver's behaviour",
  // Shells run these before the command.
  BASH_ENV: "bash runs this file before the command",
  ENV: "sh and bash run this file before the command",
  SHELLOPTS: "turns on shell options in every bash",
  BASHOPTS: "turns on shell options in every bash",
  PS4: "expanded (and run) by shells tracing commands",
  PROMPT_COMMAND: "bash runs it",
  IFS: "changes how shells split words",
  CDPATH: "changes where shells' cd goes",
  GLOBIGNORE: "changes what shells' globs match",
  ZDOTDIR: "zsh runs start-up files from this directory",
  // Interpreters load code from these at start-up.
  PYTHONSTARTUP: "python runs this file",
  PYTHONPATH: "python imports modules from it first",
  PYTHONHOME: "python loads its standard library from it",
  PYTHONINSPECT: "python enters interactive mode",
  PYTHONUSERBASE: "python imports modules from it",
  PYTHONWARNINGS: "python imports the warning categories it names",
  PYTHONBREAKPOINT: "python imports and calls what it names",
  NODE_OPTIONS: "node takes options from it (--require, --import)",
  NODE_PATH: "node resolves modules from it",
  NODE_REPL_EXTERNAL_MODULE: "node loads this module instead of its REPL",
  PERL5OPT: "perl takes options from it (-M loads modules)",
  PERL5LIB: "perl loads modules from it first",
  PERLLIB: "perl loads modules from it first",
  PERL5DB: "perl runs it as its debugger",
  RUBYOPT: "ruby takes options from it (-r loads code)",
  RUBYLIB: "ruby loads code from it first",
  JAVA_TOOL_OPTIONS: "every JVM takes options from it (-javaagent loads code)",
  _JAVA_OPTIONS: "every JVM takes options from it",
  JDK_JAVA_OPTIONS: "java takes options from it",
  CLASSPATH: "java loads classes from it",
  LUA_INIT: "lua runs it",
  LUA_PATH: "lua loads modules from it",
  LUA_CPATH: "lua loads native modules from it",
  TCLLIBPATH: "tcl loads packages from it",
  PHPRC: "php reads its configuration (auto_prepend_file) from it",
  PHP_INI_SCAN_DIR: "php reads configuration from it",
  R_PROFILE: "R runs it",
  R_PROFILE_USER: "R runs it",
  // Tools that run helper commands named by the environment.
  GIT_SSH: "git runs it",
  GIT_SSH_COMMAND: "git runs it",
  GIT_ASKPASS: "git runs it",
  GIT_EDITOR: "git runs it",
  GIT_PAGER: "git runs it",
  GIT_EXTERNAL_DIFF: "git runs it",
  GIT_PROXY_COMMAND: "git runs it",
  GIT_EXEC_PATH: "git runs its subcommands from it",
  GIT_TEMPLATE_DIR: "git copies hooks from it",
  GIT_CONFIG: "git reads configuration (and so commands) from it",
  GIT_CONFIG_GLOBAL: "git reads configuration (and so commands) from it",
  GIT_CONFIG_SYSTEM: "git reads configuration (and so commands) from it",
  GIT_CONFIG_PARAMETERS: "git takes configuration (and so commands) from it",
  GIT_CONFIG_COUNT: "git takes configuration (and so commands) from it",
  SSH_ASKPASS: "ssh runs it",
  SUDO_ASKPASS: "sudo runs it",
  EDITOR: "many tools run it",
  VISUAL: "many tools run it",
  PAGER: "many tools run it",
  MANPAGER: "man runs it",
  LESSOPEN: "less runs it on every file",
  LESSCLOSE: "less runs it",
  BROWSER: "many tools run it",
  OPENSSL_CONF: "openssl loads engines and modules named in it",
  OPENSSL_ENGINES: "openssl loads engines from it",
  OPENSSL_MODULES: "openssl loads providers from it",
  SSLKEYLOGFILE: "TLS libraries write session keys to it",
};

/** Prefixes refused whatever follows, each with why. */
export const DANGEROUS_ENV_PREFIXES: readonly (readonly [string, string])[] = [
  ["LD_", "the dynamic linker reads LD_* (LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT load code)"],
  ["DYLD_", "the macOS dynamic linker reads DYLD_* (DYLD_INSERT_LIBRARIES loads code)"],
  ["BASH_FUNC_", "bash imports it as a function definition"],
  ["GIT_CONFIG_KEY_", "git takes configuration (and so commands) from it"],
  ["GIT_CONFIG_VALUE_", "git takes configuration (and so commands) from it"],
];

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Why `exec` refuses to set `name`, or null when it may. Names are compared in upper case:
 * some programs read their variables case-insensitively.
 *
 * @example
 * ```ts
 * dangerousEnvProblem("LD_PRELOAD"); // "the dynamic linker reads LD_* (…)"
 * dangerousEnvProblem("LANG"); // null
 * ```
 */
export function dangerousEnvProblem(name: string): string | null {
  if (!ENV_NAME.test(name)) return "is not an environment variable name (A-Z, a-z, 0-9, _)";
  const upper = name.toUpperCase();
  if (Object.hasOwn(DANGEROUS_ENV_NAMES, upper)) return DANGEROUS_ENV_NAMES[upper];
  for (const [prefix, why] of DANGEROUS_ENV_PREFIXES) if (upper.startsWith(prefix)) return why;
  return null;
}
