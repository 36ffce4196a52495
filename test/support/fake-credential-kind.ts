import { z } from 'zod';
import { duration, period, re2List } from '../../src/config/validators';
import { param } from '../../src/engine/action-params';
import type { CredentialKind, Listing, ManagedKey, Premise } from '../../src/policies/key-rotation/credential-kind';
import {
  createAdopting,
  findByFingerprint,
  ignoreNotFound,
  listKeys,
  newKeyIn,
  oldKeyProblem,
  anotherKey,
} from '../../src/policies/key-rotation/key-rotation.listed';
import { differs, HOLDER, type RotationRecord } from '../../src/policies/key-rotation/key-rotation.record';
import { dueByAge } from '../../src/policies/key-rotation/key-rotation.timing';
import { NotFoundError } from '../../src/gitlab';
import { fingerprintOfPublicKey } from '../../src/policies/key-rotation/openssh';

/**
 * A credential kind that is not part of the build, in one file: the SSH signing keys of a signing service's accounts
 * (one holder each, named by the account), rotated once they are `rotate_after` old. The service lives in memory and
 * records every call, so a test sees exactly what the kind was made to do.
 */

export interface SigningKey {
  readonly id: number;
  readonly title: string;
  /** The public key line. */
  readonly key: string;
  readonly created_at: string;
}

/** The signing service: accounts and their keys, and the calls made to it. */
export class SigningService {
  readonly accounts = new Map<string, SigningKey[]>();
  readonly calls: string[] = [];
  private nextId = 500;
  now = new Date();

  async *keys(account: string): AsyncIterable<SigningKey> {
    this.calls.push(`GET ${account}`);
    const keys = this.accounts.get(account);
    if (!keys) throw notFound(account);
    yield* keys;
  }

  async add(account: string, title: string, key: string): Promise<SigningKey> {
    this.calls.push(`POST ${account} ${title}`);
    const created = { id: this.nextId++, title, key, created_at: this.now.toISOString() };
    this.accounts.set(account, [...(this.accounts.get(account) ?? []), created]);
    return created;
  }

  async remove(account: string, id: number): Promise<void> {
    this.calls.push(`DELETE ${account} ${id}`);
    const keys = this.accounts.get(account) ?? [];
    if (!keys.some((key) => key.id === id)) throw notFound(`${account}/${id}`);
    this.accounts.set(
      account,
      keys.filter((key) => key.id !== id),
    );
  }
}

function notFound(what: string): NotFoundError {
  return new NotFoundError({
    status: 404,
    method: 'GET',
    path: `signing/${what}`,
    body: { message: '404 Not Found' },
    message: '404 Not Found',
  });
}

const signingKeysSchema = z.strictObject({
  account: param.text(),
  titles: re2List(),
  rotate_after: period(),
  grace: duration(),
});
type SigningRule = z.output<typeof signingKeysSchema>;

interface SigningFacts {
  /** One per entry: the account's keys with their fingerprints, or undefined when it could not be read. */
  readonly signing: ReadonlyArray<ReadonlyArray<SigningKey & { fingerprint: string | undefined }> | undefined>;
}

const rotationId = (account: string, id: number) => `signing-${account}-${id}`;
const accountOf = (record: RotationRecord): string => String(record.holder);

export function signingKeysKind(service: SigningService): CredentialKind<SigningRule, SigningFacts> {
  return {
    name: 'signing',
    schema: z.array(signingKeysSchema).default([]),
    holders: 'one',

    async observe(rules) {
      const signing = await Promise.all(
        rules.map(async (rule) => {
          const keys = [];
          for await (const key of service.keys(rule.account))
            keys.push({ ...key, fingerprint: fingerprintOfPublicKey(key.key) });
          return keys;
        }),
      );
      return {
        facts: { signing },
        rotations: rules.flatMap((rule, index) =>
          (signing[index] ?? []).map((key) => rotationId(rule.account, key.id)),
        ),
      };
    },
    view: (rules, facts, now) => ({
      listings: () =>
        rules.map((rule, index): Listing => ({
          titles: rule.titles,
          keys: (facts.signing[index] ?? []).map((key): ManagedKey => ({
            keyId: key.id,
            title: key.title,
            fingerprint: key.fingerprint,
            rotation: rotationId(rule.account, key.id),
            target: `signing key ${key.id} of ${rule.account}`,
            due: dueByAge(rule.rotate_after, key.created_at, now),
            lifetime: undefined,
            grace: rule.grace,
            owner: null,
            holder: rule.account,
            projects: [],
            holderName: rule.account,
          })),
        })),
      premise: (record): Premise => {
        const keys = rules.flatMap((rule, index) =>
          rule.account === accountOf(record) ? (facts.signing[index] ?? []) : [],
        );
        const old = keys.find((key) => key.id === record.old_key_id);
        if (old && differs(old.fingerprint, record.old_fingerprint))
          return { close: `key ${record.old_key_id} of ${accountOf(record)} is another key` };
        if (record.new_key_id === null)
          return old
            ? { oldOn: [], newOn: new Map(), unreadable: [], revoked: [] }
            : { close: `old key ${record.old_key_id} is gone` };
        if (!keys.some((key) => key.id === record.new_key_id)) return { close: `new key ${record.new_key_id} is gone` };
        // The old key gone, and not by the bot's own removal: a person's revocation, which the new key follows.
        const revoked = !old && !record.old_removed_on?.includes(HOLDER) ? [{}] : [];
        return { oldOn: old ? [] : null, newOn: new Map(), unreadable: [], revoked };
      },
      unlisted: (record) => ({
        target: `signing key ${record.old_key_id} of ${accountOf(record)} (no longer listed)`,
        lifetime: undefined,
      }),
      leftover: (record) => {
        const keys = rules.flatMap((rule, index) =>
          rule.account === accountOf(record) ? (facts.signing[index] ?? []) : [],
        );
        return {
          from: keys.some((key) => key.id === record.new_key_id && key.fingerprint === record.fingerprint) ? [{}] : [],
        };
      },
    }),
    summary: (facts) => `${facts.signing.flat().length} signing keys`,
    probes: () => [],

    start: z
      .object({ holder: param.text() })
      .transform((start) => ({ owner: null, projects: [], holder: start.holder })),
    async upload(_context, record, publicKey) {
      const find = () => findByFingerprint(service.keys(accountOf(record)), record.fingerprint);
      const listed = await find();
      const made = listed
        ? { key: listed, adopted: true }
        : await createAdopting(() => service.add(accountOf(record), record.title, publicKey), find);
      return {
        recorded: { new_key_id: made.key.id },
        detail: `${made.adopted ? 'adopted' : 'added'} signing key ${made.key.id} to ${accountOf(record)}`,
      };
    },
    listedAnywhere: async (_context, record) =>
      (await findByFingerprint(service.keys(accountOf(record)), record.fingerprint)) !== undefined,
    oldKeyHeld: async (_context, record) =>
      oldKeyProblem(await listKeys(service.keys(accountOf(record))), record, {
        gone: `old key ${record.old_key_id} is gone from ${accountOf(record)}`,
        named: `key ${record.old_key_id} of ${accountOf(record)}`,
      }),
    newKeyMissing: async (_context, record) => ({
      missing: newKeyIn(await listKeys(service.keys(accountOf(record))), record) ? [accountOf(record)] : [],
      on: [],
    }),
    async removeBlocked(_context, record) {
      const keys = await listKeys(service.keys(accountOf(record)));
      const old = keys.find((key) => key.id === record.old_key_id);
      const another = old && anotherKey(`key ${record.old_key_id} of ${accountOf(record)}`, old, record);
      return another ? `${another}: not removed` : newKeyIn(keys, record);
    },
    newKeyHeld: async (_context, record) => newKeyIn(await listKeys(service.keys(accountOf(record))), record),
    async removeNew(_context, record) {
      let gone = false;
      await ignoreNotFound(
        () => service.remove(accountOf(record), record.new_key_id ?? -1),
        () => (gone = true),
      );
      return gone;
    },
    async removeOld(_context, record) {
      const gone: string[] = [];
      await ignoreNotFound(
        () => service.remove(accountOf(record), record.old_key_id),
        () => gone.push(accountOf(record)),
      );
      return gone;
    },
  };
}
