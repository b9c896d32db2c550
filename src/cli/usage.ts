/** The command-line surface (DESIGN §5); tests and docs rely on it. */
export const USAGE = `Usage:
  coop sandbox status [--json]
  coop sandbox test   [--json]
  coop sandbox exec [--workspace DIR] [--network none|host] [--timeout DURATION] [--json] -- CMD [ARG...]
  coop check   [--config FILE] [--json]

sandbox exec runs CMD in the sandbox a non-owner gets (no shell unless you ask for one).
Exit status: the command's; 128+N when killed by signal N; 124 on timeout; 125 when the
sandbox itself could not be built (the command did not run).
`;
