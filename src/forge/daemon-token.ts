import type { GitlabConfig } from '../config/schema';
import type { TokenSource } from '../gitlab';
import { redactor } from '../logging/redact';
import { TokenFile, type TokenFileState, type TokenSlot } from './token-file';

/**
 * The token the daemon's own requests carry: `gitlab.token`, or the active token of `gitlab.token_file`, read at
 * start, again after a 401, and at every look at the forge (another replica may have rotated it). Every value it reads
 * is given to the redactor before anything could log it.
 */
export class DaemonToken implements TokenSource {
  private state: TokenFileState | undefined;

  private constructor(
    private readonly fixed: string | undefined,
    readonly file: TokenFile | undefined,
  ) {
    redactor.addSecret(fixed);
  }

  /** Reads the token file now (the first request needs a value); a TokenFileError says what is wrong with it. */
  static of(gitlab: Pick<GitlabConfig, 'token' | 'token_file'>): DaemonToken {
    if (gitlab.token_file === undefined) return new DaemonToken(gitlab.token ?? '', undefined);
    const token = new DaemonToken(undefined, new TokenFile(gitlab.token_file));
    token.take(token.file!.readSync());
    return token;
  }

  current(): string {
    return this.fixed ?? this.active().value;
  }

  /** After a 401: the file again; true when it now names another value. */
  async refresh(rejected: string): Promise<boolean> {
    if (!this.file) return false;
    await this.reload();
    return this.current() !== rejected;
  }

  /** Reads the file again; a file that cannot be read now leaves the value in use as it was (and says why). */
  async reload(): Promise<void> {
    if (this.file) this.take(await this.file.read());
  }

  /** What the file held at the last read; undefined for a token given in the configuration. */
  fileState(): TokenFileState | undefined {
    return this.state;
  }

  /** The state this process has just written (a rotation): used at once, without waiting for the next read. */
  take(state: TokenFileState): void {
    for (const slot of state.tokens) redactor.addSecret(slot.value);
    this.state = state;
  }

  private active(): TokenSlot {
    return this.state!.tokens[this.state!.active];
  }
}
