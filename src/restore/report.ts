/**
 * Where a restore says what it does, as it does it: the command prints `say` as its result and `complain` as a
 * problem or a wait. A restore runs for minutes (imports paced to the forge's limit), so it is said at once, not
 * gathered for the end.
 */
export interface RestoreReport {
  say(line: string): void;
  complain(line: string): void;
}
