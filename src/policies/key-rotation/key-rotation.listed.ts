import { NotFoundError, ValidationError } from '../../gitlab/transport/errors';
import { differs, type RotationRecord } from './key-rotation.record';
import { fingerprintOfPublicKey } from './openssh';

/** Keys as the forge lists them, compared with what a rotation recorded: what every kind's reads have in common. */

/** A key the forge lists now, with the fingerprint of its public text; `can_push` where the listing has it. */
export interface ListedKey {
  readonly id: number;
  readonly fingerprint: string | undefined;
  readonly can_push?: boolean;
}

/** A listing read whole, each key with its fingerprint. */
export async function listKeys(
  listing: AsyncIterable<{ id: number; key: string; can_push?: boolean }>,
): Promise<ListedKey[]> {
  const keys: ListedKey[] = [];
  for await (const key of listing)
    keys.push({ id: key.id, fingerprint: fingerprintOfPublicKey(key.key), can_push: key.can_push });
  return keys;
}

/** The first key whose public text has `fingerprint`; the listing is read no further than that key. */
export async function findByFingerprint<Key extends { key: string }>(
  listing: AsyncIterable<Key>,
  fingerprint: string | null,
): Promise<Key | undefined> {
  for await (const key of listing) if (fingerprintOfPublicKey(key.key) === fingerprint) return key;
  return undefined;
}

/**
 * Creates a key, or adopts it when the forge refuses it as "fingerprint has already been taken": a concurrent or lost
 * upload of this very key, which `find` then lists.
 */
export async function createAdopting<Key>(
  create: () => Promise<Key>,
  find: () => Promise<Key | undefined>,
): Promise<{ key: Key; adopted: boolean }> {
  try {
    return { key: await create(), adopted: false };
  } catch (error) {
    const again = error instanceof ValidationError ? await find() : undefined;
    if (again === undefined) throw error;
    return { key: again, adopted: true };
  }
}

/** What is wrong with the new key among `keys`: `new key 51 is not listed`, another key under its id; or undefined. */
export function newKeyIn(keys: readonly ListedKey[], record: RotationRecord): string | undefined {
  const fresh = keys.find((key) => key.id === record.new_key_id);
  if (!fresh) return `new key ${record.new_key_id ?? '?'} is not listed`;
  if (differs(fresh.fingerprint, record.fingerprint))
    return `key ${record.new_key_id ?? '?'} is not the new key ${record.fingerprint ?? '?'} (it is ${fresh.fingerprint ?? '?'})`;
  return undefined;
}

/**
 * Why `keys` do not hold the old key as recorded: `gone` when its id is not listed, `<named> is another key now` when
 * another key has its id; or undefined.
 */
export function oldKeyProblem(
  keys: readonly ListedKey[],
  record: RotationRecord,
  words: { gone: string; named: string },
): string | undefined {
  const old = keys.find((key) => key.id === record.old_key_id);
  if (!old) return words.gone;
  return anotherKey(words.named, old, record);
}

/** `<named> is another key now (<fingerprint>)` when the key listed under the old id is not the recorded old key. */
export function anotherKey(named: string, old: ListedKey, record: RotationRecord): string | undefined {
  return differs(old.fingerprint, record.old_fingerprint)
    ? `${named} is another key now (${old.fingerprint ?? '?'})`
    : undefined;
}

/** Runs a removal; a key (or holder) the forge no longer knows counts as removed already. */
export async function ignoreNotFound(call: () => Promise<void>, onGone: () => void): Promise<void> {
  try {
    await call();
  } catch (error) {
    if (error instanceof NotFoundError) onGone();
    else throw error;
  }
}
