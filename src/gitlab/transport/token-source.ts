/**
 * Where the client takes the token of each request from. A fixed value for most uses; the daemon's own token may be
 * rotated while it runs (`gitlab.token_file`), so every request reads the current value, and a 401 asks the source
 * whether another value is to be tried.
 */
export interface TokenSource {
  /** The value the next request authenticates with. */
  current(): string;
  /**
   * Called when the forge answered 401 to a request made with `rejected`: true when the source now holds another
   * value (a token file rewritten since it was read), so a repeatable request is sent once more with it.
   */
  refresh(rejected: string): Promise<boolean>;
}

/** A token that never changes: a 401 is final. */
export function fixedToken(value: string): TokenSource {
  return { current: () => value, refresh: () => Promise.resolve(false) };
}
