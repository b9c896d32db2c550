/** The command-line surface (DESIGN §5); tests and docs rely on it. */
export const USAGE = `Usage:
  coop start   [--config FILE]                 run the gateway (HTTP, Telegram, Signal, cron)
  coop chat    [--config FILE]                 terminal chat as the terminal user
  coop check   [--config FILE] [--json]        validate config; exit 1 on errors
  coop pairing list [--json] | approve CODE [--name NAME] [--trust LEVEL] | deny CODE
               | remove NAME [--config FILE]   who may talk to the agent (unknown senders)
  coop usage   [--config FILE] [--json]        each person's consumption against budgets
  coop memory list [--user NAME] [--store S] [--config FILE] [--json]
  coop memory rm ID [--config FILE]           the owner's view of every memory
  coop explain (--user NAME | --channel C --sender ID) [--channel C] [--group G] [--json]
               [--config FILE]                 what that person can do, and why
  coop run     [--config FILE] [--user NAME] [--session CHANNEL:ID] [--timeout DURATION]
               -- CMD [ARG...]                 a program in that person's sandbox (a pty when
                                               stdin is a terminal, else pipes)
  coop shell   [--config FILE] [--user NAME] [--session CHANNEL:ID]
                                               an interactive shell in that person's sandbox
  coop setup apparmor [--runtime PATH] [--print]   (root) let Ubuntu's AppArmor allow the sandbox
  coop sandbox status [--json] [--config FILE]
  coop sandbox ps     [--json] [--config FILE]     live session sandboxes (lifetime = "session")
  coop sandbox stop ID [--config FILE]             end one (its processes are killed)
  coop init    [--config FILE] [--coopfile PATH] [--image IMG] [--package P]... [--network M] [--json]
  coop rebuild [same options]                 build environments' base layers (init skips unchanged)
  coop sandbox reset --user NAME [--persist] [--config FILE] [--json]
  coop sandbox clean [--config FILE] [--json]
  coop sandbox test   [--json]
  coop sandbox exec [--workspace DIR] [--network none|host|proxy|public] [--allow-domain HOST[:PORT]]...
                    [--memory SIZE] [--pids N] [--disk-quota SIZE] [--inode-quota N]
                    [--timeout DURATION] [--json] -- CMD [ARG...]

The config file defaults to ./coop.toml (see coop.example.toml).

sandbox exec runs CMD in the sandbox a non-owner gets (no shell unless you ask for one).
Exit status: the command's; 128+N when killed by signal N; 124 on timeout; 125 when the
sandbox itself could not be built (the command did not run).
run and shell use the sandbox that person's bash tool gets, their environment included (--user
defaults to the terminal's user; the owner has none: their commands run on the host); run with
no command starts the environment's [agent] command. Exit status as for sandbox exec;
125 also when the person or their sandbox cannot be used.
`;
