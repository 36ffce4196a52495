import type { ObserveContext } from '../../../../engine/policy';
import { observeTargets } from '../../../../engine/observe-targets';
import { NotFoundError } from '../../../../gitlab/transport/errors';
import type { Observed, TokenUser } from '../../credential-kind';
import { isFinished, type RotationRecord, type SshOwner, sshRotationId } from '../../key-rotation.record';
import { fingerprintOfPublicKey } from '../../openssh';
import type { SshKeysRule, UserRef } from './ssh-keys.schema';
import type { SshKey } from '../../../../gitlab/types/keys';

export interface ObservedSshKey {
  readonly id: number;
  readonly title: string;
  readonly created_at: string;
  readonly expires_at: string | null;
  /** SHA256, computed from the key text; undefined when the forge sent something unreadable. */
  readonly fingerprint: string | undefined;
}

/** Whose keys one `ssh_keys` entry manages, and whether the token may act on them. */
export type SshOwnerSnapshot =
  | { readonly access: 'ok'; readonly owner: SshOwner; readonly keys: readonly ObservedSshKey[] }
  | { readonly access: 'needs_admin'; readonly label: string }
  | { readonly access: 'unknown_user'; readonly label: string }
  /** The user or their keys could not be read this pass (a refusal, a failing answer): recorded as unobserved. */
  | { readonly access: 'unreadable'; readonly label: string };

/** What the forge shows of the keys of a rotation's user whom no `ssh_keys` entry listed this pass. */
export type OwnerKeys =
  | { readonly state: 'listed'; readonly keys: readonly ObservedSshKey[] }
  /** The forge no longer knows the user (deleted). */
  | { readonly state: 'gone' }
  | { readonly state: 'unread'; readonly reason: string };

/** The SSH keys' part of key_rotation's snapshot. */
export interface SshKeysFacts {
  /** One per `ssh_keys` entry, in order. */
  readonly ssh: readonly SshOwnerSnapshot[];
  /** The keys of users with open rotations that no `ssh_keys` entry listed this pass, by user id. */
  readonly owners?: Readonly<Record<string, OwnerKeys>>;
}

/** A user's keys: `/user/keys` for the token's own, `/users/:id/keys` (an administrator's token) for anyone else's. */
export function keysOf(context: Pick<ObserveContext, 'client'>, owner: SshOwner): AsyncIterable<SshKey> {
  return owner.self ? context.client.sshKeys.all() : context.client.sshKeys.allForUser(owner.user_id);
}

const sshTarget = (who: string): string => `SSH keys of ${who}`;

/** The keys of each configured user, each user on its own: one the forge refuses is unobserved, the others go on. */
export async function observeSshKeys(
  rules: readonly SshKeysRule[],
  context: ObserveContext,
  token: TokenUser,
): Promise<Observed<SshKeysFacts>> {
  const read = await observeTargets(
    context,
    rules,
    (rule) => ({ target: sshTarget(rule.user === 'self' ? token.username : String(rule.user)), listed: true }),
    (rule) => readSshEntry(context, rule, token),
  );
  const ssh = read.map(
    (entry, index): SshOwnerSnapshot =>
      entry ?? {
        access: 'unreadable',
        label: rules[index].user === 'self' ? token.username : String(rules[index].user),
      },
  );
  const rotations = ssh.flatMap((entry) =>
    entry.access === 'ok' ? entry.keys.map((key) => sshRotationId(entry.owner.user_id, key.id)) : [],
  );
  return { facts: { ssh }, rotations };
}

/** One `ssh_keys` entry: its user as the forge knows it, and their keys. Anything but a 404 reaches observeTargets. */
async function readSshEntry(context: ObserveContext, rule: SshKeysRule, token: TokenUser): Promise<SshOwnerSnapshot> {
  const owner = await resolveUser(context, rule.user, token);
  if (!owner) return { access: 'unknown_user', label: String(rule.user) };
  if (!owner.self && !token.admin) return { access: 'needs_admin', label: owner.username };
  try {
    return { access: 'ok', owner, keys: await sshKeysOf(context, owner) };
  } catch (error) {
    // Deleted between the two reads.
    if (error instanceof NotFoundError) return { access: 'unknown_user', label: String(rule.user) };
    throw error;
  }
}

async function sshKeysOf(context: ObserveContext, owner: SshOwner): Promise<ObservedSshKey[]> {
  const keys: ObservedSshKey[] = [];
  for await (const key of keysOf(context, owner)) {
    keys.push({
      id: key.id,
      title: key.title,
      created_at: key.created_at,
      expires_at: key.expires_at ?? null,
      fingerprint: fingerprintOfPublicKey(key.key),
    });
  }
  return keys;
}

/**
 * The keys of each user an open SSH rotation concerns whom no entry listed this pass: a user deleted since (the forge
 * answers 404: the rotation is closed), one the file no longer names (the rotation finishes), or one whose entry could
 * not be read (not read twice). Each on its own, as the entries are.
 */
export async function observeSshOwners(
  _rules: readonly SshKeysRule[],
  facts: SshKeysFacts,
  records: readonly RotationRecord[],
  context: ObserveContext,
  token: TokenUser,
): Promise<Pick<SshKeysFacts, 'owners'>> {
  const listed = new Set(facts.ssh.flatMap((entry) => (entry.access === 'ok' ? [entry.owner.user_id] : [])));
  const unreadable = new Set(
    facts.ssh.flatMap((entry) => (entry.access === 'unreadable' ? [entry.label.toLowerCase()] : [])),
  );
  const wanted = new Map<number, SshOwner>();
  for (const record of records) {
    if (record.owner && !isFinished(record) && !listed.has(record.owner.user_id))
      wanted.set(record.owner.user_id, record.owner);
  }
  const owners: Record<string, OwnerKeys> = {};
  const toRead: SshOwner[] = [];
  for (const owner of wanted.values()) {
    if (unreadable.has(owner.username.toLowerCase()) || unreadable.has(String(owner.user_id)))
      owners[String(owner.user_id)] = { state: 'unread', reason: 'its entry could not be read' };
    else if (owner.user_id !== token.id && !token.admin)
      owners[String(owner.user_id)] = { state: 'unread', reason: "another user's keys need an administrator's token" };
    else toRead.push(owner);
  }
  const read = await observeTargets(
    context,
    toRead,
    (owner) => ({ target: sshTarget(owner.username), listed: true }),
    async (owner): Promise<OwnerKeys> => {
      try {
        return { state: 'listed', keys: await sshKeysOf(context, { ...owner, self: owner.user_id === token.id }) };
      } catch (error) {
        if (error instanceof NotFoundError) return { state: 'gone' };
        throw error;
      }
    },
  );
  toRead.forEach((owner, index) => {
    owners[String(owner.user_id)] = read[index] ?? {
      state: 'unread',
      reason: 'the forge did not answer as expected (see the unobserved targets)',
    };
  });
  return { owners };
}

/** `self`, an id or a username, as the forge knows it; the token's own user by any name is `self`. */
async function resolveUser(context: ObserveContext, ref: UserRef, token: TokenUser): Promise<SshOwner | undefined> {
  if (
    ref === 'self' ||
    ref === token.id ||
    (typeof ref === 'string' && ref.toLowerCase() === token.username.toLowerCase())
  ) {
    return { user_id: token.id, username: token.username, self: true };
  }
  if (typeof ref === 'number') {
    try {
      const user = await context.client.users.show(ref);
      return { user_id: user.id, username: user.username, self: false };
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }
  // The forge matches `username` exactly and case-insensitively; one page is all there can be.
  for await (const user of context.client.users.all({ username: ref }, { maxPages: 1, onPageLimit: 'stop' })) {
    if (user.username.toLowerCase() === ref.toLowerCase())
      return { user_id: user.id, username: user.username, self: false };
  }
  return undefined;
}
