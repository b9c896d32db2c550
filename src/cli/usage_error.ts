/** A mistake on the command line: printed with the usage text, exit status 2, no stack trace. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}
