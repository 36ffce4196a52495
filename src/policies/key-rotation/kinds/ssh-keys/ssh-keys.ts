import { z } from 'zod';
import { param } from '../../../../engine/action-params';
import type { ActContext } from '../../../../engine/policy';
import { onePage, readFirstPage } from '../../../../engine/probe';
import { count } from '../../../../engine/words';
import type { GitlabClient } from '../../../../gitlab';
import type { CredentialKind, KindView, Leftover, Listing, ManagedKey, Premise } from '../../credential-kind';
import {
  anotherKey,
  createAdopting,
  findByFingerprint,
  ignoreNotFound,
  listKeys,
  newKeyIn,
  oldKeyProblem,
} from '../../key-rotation.listed';
import {
  differs,
  HOLDER,
  REVOKED_FIRST,
  type RotationRecord,
  type SshOwner,
  sshRotationId,
} from '../../key-rotation.record';
import { dueByExpiry } from '../../key-rotation.timing';
import { keysOf, observeSshKeys, observeSshOwners, type OwnerKeys, type SshKeysFacts } from './ssh-keys.observe';
import { type SshKeysRule, sshKeysSchema } from './ssh-keys.schema';

export type { ObservedSshKey, OwnerKeys, SshKeysFacts, SshOwnerSnapshot } from './ssh-keys.observe';
export type { SshKeysRule, UserRef } from './ssh-keys.schema';

/** Users' SSH keys: each on one holder (its user), rotated before it expires; the new one expires `lifetime` later. */
export const sshKeys: CredentialKind<SshKeysRule, SshKeysFacts> = {
  name: 'ssh',
  schema: z
    .array(sshKeysSchema, {
      error: 'expected a list such as [{ user: self, titles: ["^ci"], rotate_before: 14d, lifetime: 90d, grace: 1d }]',
    })
    .default([]),
  holders: 'one',

  observe: observeSshKeys,
  observeRotations: observeSshOwners,
  view: sshView,
  summary: (facts) => {
    const keys = facts.ssh.reduce((sum, owner) => sum + (owner.access === 'ok' ? owner.keys.length : 0), 0);
    return `${count(keys, 'SSH key')} of ${count(facts.ssh.length, 'user')}`;
  },
  probes: (rules) =>
    rules.map((entry) => ({
      target: entry.user === 'self' ? "the token's user's SSH keys" : `SSH keys of user ${entry.user}`,
      needs: entry.user === 'self' ? 'the api scope' : "an administrator's token",
      read: (client: GitlabClient) =>
        readFirstPage(
          entry.user === 'self' ? client.sshKeys.all(onePage()) : client.sshKeys.allForUser(entry.user, onePage()),
        ),
    })),
  needsAdministrator: (rules) => {
    const others = rules.filter((entry) => entry.user !== 'self').map((entry) => String(entry.user));
    return others.length === 0
      ? undefined
      : `it rotates the SSH keys of ${others.join(', ')}, which only an administrator's token may`;
  },

  start: z
    .object({ user_id: param.integer(), username: param.text(), self: param.flag().optional() })
    .transform((start) => ({
      owner: { user_id: start.user_id, username: start.username, self: start.self === true },
      projects: [],
    })),

  async upload(context, record, publicKey, request) {
    const lifetime = request.lifetimeMs ?? record.lifetime_ms;
    if (lifetime === null || lifetime === undefined)
      throw new TypeError(`key_rotation: no lifetime for the new key of rotation ${record.id}`);
    const owner = ownerOf(record);
    const find = () => findByFingerprint(keysOf(context, owner), record.fingerprint);
    const wanted = {
      title: record.title,
      key: publicKey,
      expires_at: new Date(context.now.getTime() + lifetime).toISOString(),
    };
    const listed = await find();
    const { key, adopted } = listed
      ? { key: listed, adopted: true }
      : await createAdopting(
          () =>
            owner.self
              ? context.client.sshKeys.create(wanted)
              : context.client.sshKeys.createForUser(owner.user_id, wanted),
          find,
        );
    const expiresAt = key.expires_at ?? (adopted ? null : wanted.expires_at);
    return {
      recorded: { new_key_id: key.id, expires_at: expiresAt },
      detail: `${adopted ? 'adopted key already on the forge' : 'uploaded'}: key ${key.id} ${record.fingerprint ?? ''}, expires ${expiresAt ?? 'never'}`,
    };
  },

  listedAnywhere: async (context, record) =>
    (await findByFingerprint(keysOf(context, ownerOf(record)), record.fingerprint)) !== undefined,

  async oldKeyHeld(context, record) {
    const whose = ownerOf(record).username;
    return oldKeyProblem(await userKeys(context, record), record, {
      gone: `old key ${record.old_key_id} is gone from the keys of ${whose}`,
      named: `key ${record.old_key_id} of ${whose}`,
    });
  },

  newKeyMissing: async (context, record) => ({
    missing: newKeyIn(await userKeys(context, record), record) ? ['user'] : [],
    on: [],
  }),

  async removeBlocked(context, record) {
    const keys = await userKeys(context, record);
    const whose = ownerOf(record).username;
    const old = keys.find((key) => key.id === record.old_key_id);
    // Gone, and not by the bot (which records its removal before sending it): a person's revocation, which wins.
    if (!old && record.old_removed_on?.includes(HOLDER) !== true)
      return `old key ${record.old_key_id} of ${whose} is gone, not removed by the bot: ${REVOKED_FIRST}`;
    const another = old && anotherKey(`key ${record.old_key_id} of ${whose}`, old, record);
    if (another) return `${another}: not removed`;
    const found = newKeyIn(keys, record);
    return found ? `${found} for ${whose}: old key ${record.old_key_id} is kept` : undefined;
  },

  async newKeyHeld(context, record) {
    const problem = newKeyIn(await userKeys(context, record), record);
    return problem && `${problem} for ${ownerOf(record).username}`;
  },

  async removeNew(context, record) {
    const owner = ownerOf(record);
    const id = record.new_key_id;
    if (id === null) throw new Error(`rotation ${record.id} has no new key`);
    let gone = false;
    await ignoreNotFound(
      () => (owner.self ? context.client.sshKeys.remove(id) : context.client.sshKeys.removeForUser(owner.user_id, id)),
      () => (gone = true),
    );
    return gone;
  },

  async removeOld(context, record) {
    const owner = ownerOf(record);
    const gone: string[] = [];
    await ignoreNotFound(
      () =>
        owner.self
          ? context.client.sshKeys.remove(record.old_key_id)
          : context.client.sshKeys.removeForUser(owner.user_id, record.old_key_id),
      () => gone.push('user'),
    );
    return gone;
  },
};

/** A rotation's user's keys as the forge lists them now. A 404 (user deleted) reaches the caller. */
function userKeys(context: ActContext, record: RotationRecord) {
  return listKeys(keysOf(context, ownerOf(record)));
}

function ownerOf(record: RotationRecord): SshOwner {
  if (!record.owner) throw new TypeError(`key_rotation: SSH rotation ${record.id} has no owner`);
  return record.owner;
}

function sshView(rules: readonly SshKeysRule[], facts: SshKeysFacts, now: Date): KindView {
  /** A user's keys, from an entry that listed them or as read for an open rotation; undefined: not read. */
  const ownerKeys = (userId: number): OwnerKeys | undefined => {
    for (const entry of facts.ssh)
      if (entry.access === 'ok' && entry.owner.user_id === userId) return { state: 'listed', keys: entry.keys };
    return facts.owners?.[String(userId)];
  };
  return {
    listings: () =>
      rules.flatMap((rule, index): Listing[] => {
        const entry = facts.ssh[index];
        if (!entry) return [];
        if (entry.access !== 'ok')
          return [
            {
              unreadable: {
                target: `SSH keys of ${entry.label}`,
                key: `ssh-user:${entry.label}`,
                reason: unreadableReason(entry),
              },
            },
          ];
        return [
          {
            titles: rule.titles,
            keys: entry.keys.map((key): ManagedKey => ({
              keyId: key.id,
              title: key.title,
              fingerprint: key.fingerprint,
              rotation: sshRotationId(entry.owner.user_id, key.id),
              target: `${entry.owner.username}'s SSH key ${key.id} "${key.title}"`,
              due: dueByExpiry(rule.rotate_before, key.expires_at, now),
              lifetime: rule.lifetime,
              grace: rule.grace,
              owner: entry.owner,
              projects: [],
              holderName: entry.owner.username,
            })),
          },
        ];
      }),
    premise: (record) => sshPremise(ownerKeys, record),
    leftover: (record) => sshLeftover(ownerKeys, record),
    unlisted: (record) => ({
      target: `${record.owner?.username ?? '?'}'s SSH key ${record.old_key_id} "${record.title}" (no longer listed)`,
      // The entry that would manage the key today, else the lifetime the rotation started with.
      lifetime:
        rules.find((rule) => rule.titles.some((p) => p.test(record.title)))?.lifetime ??
        record.lifetime_ms ??
        undefined,
    }),
  };
}

function unreadableReason(entry: Exclude<SshKeysFacts['ssh'][number], { access: 'ok' }>): string {
  if (entry.access === 'needs_admin') return "skip: another user's keys need an administrator's token";
  if (entry.access === 'unknown_user') return `skip: no user ${entry.label} on the forge`;
  return `skip: the keys of ${entry.label} could not be read this pass; the other users and projects go on`;
}

/**
 * Whether an SSH rotation still rests on what the forge shows: its user is there, the key with the old id is the old
 * key, and once uploaded the new key is listed with the recorded id and fingerprint. Before the upload, an old key
 * that is gone (a person removed it, maybe to take the access away) is not replaced; after it, the new key leaves too
 * (a person's revocation wins), unless the bot removed the old key itself. A contradicted rotation withdraws its new key
 * first, if the user still holds it.
 */
function sshPremise(ownerKeys: (userId: number) => OwnerKeys | undefined, record: RotationRecord): Premise {
  const owner = record.owner;
  const name = owner ? `${owner.username} (user ${owner.user_id})` : 'its user';
  const listing = owner ? ownerKeys(owner.user_id) : undefined;
  if (!listing) return { wait: `skip: the keys of ${name} were not read this pass; the rotation waits` };
  if (listing.state === 'gone') return { close: `user ${name} is gone from the forge` };
  if (listing.state === 'unread')
    return { wait: `skip: the keys of ${name} could not be read (${listing.reason}); the rotation waits` };
  const old = listing.keys.find((key) => key.id === record.old_key_id);
  const contradicted =
    old && differs(old.fingerprint, record.old_fingerprint)
      ? `key ${record.old_key_id} of ${name} is another key than the one this rotation replaces (${old.fingerprint ?? '?'}, not ${record.old_fingerprint ?? '?'})`
      : undefined;
  if (record.new_key_id === null) {
    if (contradicted) return { close: contradicted };
    // An upload whose answer was lost made the key already: it is adopted first, so that the revocation takes it away.
    if (!old && !listing.keys.some((key) => record.fingerprint !== null && key.fingerprint === record.fingerprint)) {
      return {
        close: `old key ${record.old_key_id} is gone from the keys of ${name} (removed by someone else): no new key is uploaded`,
      };
    }
    return { oldOn: [], newOn: new Map(), unreadable: [], revoked: [] };
  }
  const fresh = listing.keys.find((key) => key.id === record.new_key_id);
  if (fresh && differs(fresh.fingerprint, record.fingerprint)) {
    return {
      close: `key ${record.new_key_id} of ${name} is not the new key ${record.fingerprint ?? '?'} (it is ${fresh.fingerprint ?? '?'})`,
    };
  }
  if (contradicted) return fresh ? { withdraw: contradicted, from: [{}] } : { close: contradicted };
  if (!fresh) {
    if (record.revoked_on?.includes(HOLDER)) {
      return {
        close: `a person took old key ${record.old_key_id} away from ${name} during the rotation, and new key ${record.new_key_id} left with it (a person's revocation wins)`,
      };
    }
    return { close: `new key ${record.new_key_id} is gone from the forge` };
  }
  if (old) return { oldOn: [], newOn: new Map(), unreadable: [], revoked: [] };
  // The old key is gone: removed by the bot (an attempt cut before it recorded so), or by a person during the rotation.
  const byBot = record.old_removed_on?.includes(HOLDER) === true;
  return { oldOn: null, newOn: new Map(), unreadable: [], revoked: byBot ? [] : [{}] };
}

/** The new key of a closed rotation, when its user still lists it, or when the user's keys cannot be read now. */
function sshLeftover(ownerKeys: (userId: number) => OwnerKeys | undefined, record: RotationRecord): Leftover {
  const owner = record.owner;
  if (!owner || record.new_key_id === null) return { from: [] };
  const listing = ownerKeys(owner.user_id);
  if (!listing || listing.state === 'unread')
    return {
      from: [],
      outOfSight: `new key ${record.new_key_id} may still be listed for ${owner.username}, whose keys cannot be read now`,
    };
  if (listing.state === 'gone') return { from: [] };
  const fresh = listing.keys.find((key) => key.id === record.new_key_id);
  return fresh && !differs(fresh.fingerprint, record.fingerprint) ? { from: [{}] } : { from: [] };
}
