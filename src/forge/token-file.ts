import { readFileSync, statSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { z } from 'zod';
import { SecretFiles } from '../effects/secret-files';

/**
 * `gitlab.token_file`: the daemon's own token, or the pair of tokens it rotates (docs/operations.md, "The daemon's
 * own token"). An operator writes one value, or two, one a line; once the daemon rotates, the file is the JSON below,
 * which the daemon alone writes (0600, atomically, before it does anything else with a new value).
 */

const slotSchema = z.strictObject({
  /** The token's id on the forge; null until the daemon has read it (`GET /personal_access_tokens/self`). */
  id: z.number().int().positive().nullable(),
  value: z.string().min(1),
  name: z.string().nullable(),
  /** `YYYY-MM-DD`, or null: none, or not read yet. */
  expires_at: z.string().nullable(),
  /** When it stopped being the one to authenticate with; null while it is, or before it first was. */
  retired_at: z.string().nullable(),
  /** The file's generation that retired it: every replica must have read that one before it is rotated. */
  retired_generation: z.number().int().nonnegative().nullable(),
  /** Why the daemon will not use it again (revoked by someone, its successor not found); null while usable. */
  lost: z.string().nullable(),
});

const fileSchema = z.strictObject({
  version: z.literal(1),
  /** Grows with every write: a replica says which one it read, so the rotation knows every replica moved on. */
  generation: z.number().int().nonnegative(),
  /** The index of the token every request authenticates with. */
  active: z.number().int().nonnegative(),
  tokens: z.array(slotSchema).min(1).max(2),
  /** A rotation sent whose answer is not written here yet: that token must never be used, its successor is looked for. */
  pending: z
    .strictObject({ slot: z.number().int().nonnegative(), id: z.number().int().positive(), sent_at: z.string() })
    .nullable(),
});

export type TokenSlot = z.output<typeof slotSchema>;
export type TokenFileState = z.output<typeof fileSchema>;

/** A token file that cannot be used, with the reason in words that name the file. */
/** The one atomic 0600 writer the daemon has (a token file is a secret file like a rotated key). */
const SECRET_FILES = new SecretFiles();

export class TokenFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenFileError';
  }
}

export class TokenFile {
  constructor(readonly path: string) {}

  /** At start: the client needs a value before its first request. */
  readSync(): TokenFileState {
    return this.parse(
      this.guard(() => readFileSync(this.path, 'utf8')),
      this.guard(() => statSync(this.path).mode),
    );
  }

  async read(): Promise<TokenFileState> {
    const [text, info] = await Promise.all([
      this.guardAsync(readFile(this.path, 'utf8')),
      this.guardAsync(stat(this.path)),
    ]);
    return this.parse(text, info.mode);
  }

  /** Replaces the file whole, readable by the daemon's user alone; the old file or the new, never a torn one. */
  async write(state: TokenFileState): Promise<void> {
    await SECRET_FILES.write(this.path, `${JSON.stringify(fileSchema.parse(state), null, 2)}\n`, 0o600);
  }

  private parse(text: string, mode: number): TokenFileState {
    if ((mode & 0o077) !== 0) {
      throw new TokenFileError(
        `token file ${this.path} may be read by other users (mode ${(mode & 0o777).toString(8)}): chmod 600 ${this.path}`,
      );
    }
    if (text.trimStart().startsWith('{')) {
      let data: unknown;
      try {
        data = JSON.parse(text);
      } catch (error) {
        throw new TokenFileError(`token file ${this.path} is not valid JSON: ${(error as Error).message}`);
      }
      const result = fileSchema.safeParse(data);
      if (!result.success) {
        const issue = result.error.issues[0];
        throw new TokenFileError(`token file ${this.path}: ${issue.path.join('.') || '(file)'}: ${issue.message}`);
      }
      if (result.data.active >= result.data.tokens.length)
        throw new TokenFileError(`token file ${this.path}: active names no token`);
      return result.data;
    }
    // One value a line, as an operator writes it; lines starting with # are notes.
    const values = text
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'));
    if (values.length === 0) throw new TokenFileError(`token file ${this.path} holds no token`);
    if (values.length > 2)
      throw new TokenFileError(
        `token file ${this.path} holds ${values.length} lines: one token, or the two tokens of a rotating pair`,
      );
    if (values.some((value) => /\s/.test(value)))
      throw new TokenFileError(`token file ${this.path}: a token is one word on its own line`);
    return { version: 1, generation: 0, active: 0, tokens: values.map(freshSlot), pending: null };
  }

  private guard<T>(read: () => T): T {
    try {
      return read();
    } catch (error) {
      throw this.unreadable(error);
    }
  }

  private async guardAsync<T>(read: Promise<T>): Promise<T> {
    try {
      return await read;
    } catch (error) {
      throw this.unreadable(error);
    }
  }

  private unreadable(error: unknown): TokenFileError {
    const code = (error as { code?: unknown }).code;
    const reason =
      code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (error as Error).message;
    return new TokenFileError(`cannot read the token file ${this.path}: ${reason}`);
  }
}

/** A token as an operator wrote it: nothing known of it yet but the value. */
export function freshSlot(value: string): TokenSlot {
  return { id: null, value, name: null, expires_at: null, retired_at: null, retired_generation: null, lost: null };
}
