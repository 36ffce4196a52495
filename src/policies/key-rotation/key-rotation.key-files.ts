import { readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import { readJsonObject } from '../../engine/json';
import type { RotationRecord } from './key-rotation.record';
import { generateOpenSshKeyPair, readOpenSshPrivateKey } from './openssh';
import { ensurePrivateDirectory, isCode, unusableDirectory, writeFileAtomic } from './secret-file';
import { message } from './key-rotation.step-record';

/**
 * A rotation's key pair on disk: the private half (0600) at the record's path, the public half beside it (`.pub`),
 * and the mark that on_rotate ran for it (`.on_rotate`). What is on disk outlives Redis, so it is what a rotation whose
 * record was lost adopts, and what is uploaded is read back from it.
 */
export class KeyFiles {
  /** Why secrets_dir cannot hold keys (missing, not a directory, not writable), or undefined when it can. */
  unusable(directory: string): Promise<string | undefined> {
    return unusableDirectory(directory);
  }

  /**
   * The key at `path`: the one already there (written by an attempt whose record was lost), else a new pair of
   * `keyType`. A file there that holds no readable OpenSSH private key stops the rotation: it is someone's file.
   */
  async write(path: string, keyType: RotationRecord['key_type'], comment: string): Promise<{ fingerprint: string; detail: string }> {
    await ensurePrivateDirectory(dirname(path));
    const onDisk = await keyFileAt(path);
    if (onDisk) return { fingerprint: onDisk.fingerprint, detail: `adopted the ${onDisk.type} key ${onDisk.fingerprint} already at ${path}` };
    const pair = generateOpenSshKeyPair(keyType, comment);
    // Private half first: a public key must never exist without it. The public key file is a convenience.
    await writeFileAtomic(path, pair.privateKey, 0o600);
    await writeFileAtomic(`${path}.pub`, `${pair.publicKey}\n`, 0o644);
    return { fingerprint: pair.fingerprint, detail: `${keyType} key ${pair.fingerprint} written to ${path}` };
  }

  /** The public half of the private key on disk, when it is the recorded key; else what is wrong with the file. */
  async publicKey(record: RotationRecord): Promise<{ publicKey: string } | { problem: string }> {
    try {
      const info = readOpenSshPrivateKey(await readFile(record.path, 'utf8'));
      if (info.fingerprint === record.fingerprint) return { publicKey: `${info.publicKey} ${info.comment}`.trim() };
      return { problem: `holds ${info.fingerprint}, not the recorded ${record.fingerprint ?? '?'}` };
    } catch (error) {
      return { problem: isCode(error, 'ENOENT') ? 'is missing' : `cannot be read (${message(error)})` };
    }
  }

  /** When on_rotate ran for this very key (the mark's fingerprint is the record's), or undefined. */
  async hookRanFor(record: RotationRecord): Promise<string | undefined> {
    if (!record.fingerprint) return undefined;
    let text: string;
    try {
      text = await readFile(hookMarkPath(record.path), 'utf8');
    } catch (error) {
      if (isCode(error, 'ENOENT')) return undefined;
      throw error;
    }
    const mark = readJsonObject(text);
    // Another key's mark (a closed rotation's, at the same path) or an unreadable one: the hook has not run for this key.
    return mark?.fingerprint === record.fingerprint && typeof mark.ran_at === 'string' ? mark.ran_at : undefined;
  }

  /** Writes that on_rotate ran for the record's key, where it outlives Redis: the forge cannot show that a hook ran. */
  async markHookRan(record: RotationRecord, at: Date): Promise<string> {
    const path = hookMarkPath(record.path);
    await writeFileAtomic(path, `${JSON.stringify({ fingerprint: record.fingerprint, new_key_id: record.new_key_id, ran_at: at.toISOString() })}\n`, 0o600);
    return path;
  }

  /**
   * Moves a closed rotation's key files aside: `<path>.closed-<time>` (and its `.pub` and `.on_rotate`), so the private
   * key is kept (a person may want it) but never adopted by a later rotation. Answers the new path, or undefined when
   * there was no file.
   */
  async moveAside(path: string, now: Date): Promise<string | undefined> {
    const aside = `${path}.closed-${now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}`;
    try {
      await rename(path, aside);
    } catch (error) {
      if (isCode(error, 'ENOENT')) return undefined;
      throw error;
    }
    for (const suffix of ['.pub', '.on_rotate']) {
      await rename(`${path}${suffix}`, `${aside}${suffix}`).catch((error: unknown) => {
        if (!isCode(error, 'ENOENT')) throw error;
      });
    }
    return aside;
  }
}

/** Where the fact that on_rotate ran for a rotation's key is kept: beside its key file. */
export function hookMarkPath(keyPath: string): string {
  return `${keyPath}.on_rotate`;
}

/**
 * The private key already at `path`, or undefined when there is no file. A file that is there but holds no readable
 * OpenSSH private key stops the rotation: it is someone's file, and a person must move it away.
 */
async function keyFileAt(path: string): Promise<{ type: string; fingerprint: string } | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (isCode(error, 'ENOENT')) return undefined;
    throw error;
  }
  try {
    const info = readOpenSshPrivateKey(text);
    return { type: info.type, fingerprint: info.fingerprint };
  } catch (error) {
    throw new Error(`${path} exists but holds no readable OpenSSH private key (${message(error)}); it is never overwritten: move it away to let the rotation write a new key`);
  }
}
