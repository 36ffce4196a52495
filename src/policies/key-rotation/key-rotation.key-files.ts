import { dirname } from 'node:path';
import type { SecretFiles } from '../../effects/secret-files';
import { readJsonObject } from '../../engine/json';
import type { RotationRecord } from './key-rotation.record';
import { message } from './key-rotation.step-record';
import { generateOpenSshKeyPair, readOpenSshPrivateKey } from './openssh';

/**
 * A rotation's key pair on disk: the private half (0600) at the record's path, the public half beside it (`.pub`),
 * and the mark that on_rotate ran for it (`.on_rotate`). What is on disk outlives Redis, so it is what a rotation whose
 * record was lost adopts, and what is uploaded is read back from it.
 */
export class KeyFiles {
  constructor(private readonly files: SecretFiles) {}

  /** Why secrets_dir cannot hold keys (missing, not a directory, not writable), or undefined when it can. */
  unusable(directory: string): Promise<string | undefined> {
    return this.files.unusable(directory);
  }

  /**
   * The key at `path`: the one already there (written by an attempt whose record was lost), else a new pair of
   * `keyType`. A file there that holds no readable OpenSSH private key stops the rotation: it is someone's file, and a
   * person must move it away.
   */
  async write(
    path: string,
    keyType: RotationRecord['key_type'],
    comment: string,
  ): Promise<{ fingerprint: string; detail: string }> {
    await this.files.makePrivateFolder(dirname(path));
    const onDisk = await this.files.read(path);
    if (onDisk !== undefined) {
      const info = keyIn(onDisk, path);
      return {
        fingerprint: info.fingerprint,
        detail: `adopted the ${info.type} key ${info.fingerprint} already at ${path}`,
      };
    }
    const pair = generateOpenSshKeyPair(keyType, comment);
    // Private half first: a public key must never exist without it. The public key file is a convenience.
    await this.files.write(path, pair.privateKey, 0o600);
    await this.files.write(`${path}.pub`, `${pair.publicKey}\n`, 0o644);
    return { fingerprint: pair.fingerprint, detail: `${keyType} key ${pair.fingerprint} written to ${path}` };
  }

  /** The public half of the private key on disk, when it is the recorded key; else what is wrong with the file. */
  async publicKey(record: RotationRecord): Promise<{ publicKey: string } | { problem: string }> {
    try {
      const text = await this.files.read(record.path);
      if (text === undefined) return { problem: 'is missing' };
      const info = readOpenSshPrivateKey(text);
      if (info.fingerprint === record.fingerprint) return { publicKey: `${info.publicKey} ${info.comment}`.trim() };
      return { problem: `holds ${info.fingerprint}, not the recorded ${record.fingerprint ?? '?'}` };
    } catch (error) {
      return { problem: `cannot be read (${message(error)})` };
    }
  }

  /** When on_rotate ran for this very key (the mark's fingerprint is the record's), or undefined. */
  async hookRanFor(record: RotationRecord): Promise<string | undefined> {
    if (!record.fingerprint) return undefined;
    const mark = readJsonObject(await this.files.read(hookMarkPath(record.path)));
    // Another key's mark (a closed rotation's, at the same path) or an unreadable one: the hook has not run for this key.
    return mark?.fingerprint === record.fingerprint && typeof mark.ran_at === 'string' ? mark.ran_at : undefined;
  }

  /** Writes that on_rotate ran for the record's key, where it outlives Redis: the forge cannot show that a hook ran. */
  async markHookRan(record: RotationRecord, at: Date): Promise<void> {
    await this.files.write(
      hookMarkPath(record.path),
      `${JSON.stringify({ fingerprint: record.fingerprint, new_key_id: record.new_key_id, ran_at: at.toISOString() })}\n`,
      0o600,
    );
  }

  /**
   * Moves a closed rotation's key files aside: `<path>.closed-<time>` (and its `.pub` and `.on_rotate`), so the private
   * key is kept (a person may want it) but never adopted by a later rotation. Answers the new path, or undefined when
   * there was no file.
   */
  async moveAside(path: string, now: Date): Promise<string | undefined> {
    return this.moveAsideFile(path, now);
  }

  /** Moves aside a key file written before `since` (the records were dropped for another or a reset forge). */
  async setAsideIfOlder(path: string, since: Date, now: Date): Promise<void> {
    const written = await this.files.modifiedAt(path);
    if (written !== undefined && written < since.getTime()) await this.moveAsideFile(path, now);
  }

  private async moveAsideFile(path: string, now: Date): Promise<string | undefined> {
    const aside = `${path}.closed-${now
      .toISOString()
      .replace(/[-:]/g, '')
      .replace(/\.\d+Z$/, 'Z')}`;
    if (!(await this.files.move(path, aside))) return undefined;
    for (const suffix of ['.pub', '.on_rotate']) await this.files.move(`${path}${suffix}`, `${aside}${suffix}`);
    return aside;
  }
}

/** Where the fact that on_rotate ran for a rotation's key is kept: beside its key file. */
export function hookMarkPath(keyPath: string): string {
  return `${keyPath}.on_rotate`;
}

/** The key a file at `path` holds; anything but a readable OpenSSH private key is never overwritten. */
function keyIn(text: string, path: string): { type: string; fingerprint: string } {
  try {
    const info = readOpenSshPrivateKey(text);
    return { type: info.type, fingerprint: info.fingerprint };
  } catch (error) {
    throw new Error(
      `${path} exists but holds no readable OpenSSH private key (${message(error)}); it is never overwritten: move it away to let the rotation write a new key`,
    );
  }
}
