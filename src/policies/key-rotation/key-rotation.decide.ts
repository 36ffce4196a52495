import { formatDuration } from '../../config/duration';
import { type ActionParams, type Decision, type JsonValue, SKIP } from '../../engine/policy';
import {
  type DeployProject,
  deployRotationId,
  differs,
  generationOf,
  isFinished,
  keyPath,
  placedOn,
  refKey,
  type RotationRecord,
  type SshOwner,
  sshRotationId,
} from './key-rotation.record';
import type { DeployKeysRule, KeyRotationConfig, SshKeysRule } from './key-rotation.schema';

/**
 * Deciding what to do with each managed key: pure, no I/O, no clock. A key not yet under rotation is rotated or
 * skipped with its reason; a key under rotation gets the remaining steps of its state machine (see
 * key-rotation.record.ts), each a separate action keyed by rotation, generation, step and attempt. Every step re-reads
 * the record before acting, so a step decided in the same pass after one that failed does nothing.
 *
 * The record says what the bot did; the snapshot says what the forge holds now, and wins. A rotation goes on only while
 * the forge still shows its premise (the old key as recorded, the new key where the bot put it, its user or projects);
 * otherwise it is closed, and the key is decided afresh by the next pass. A deploy key's projects are the ones that
 * hold it now, within the policy's selection: a project that lost the old key gets no new one, one that gained it gets
 * the new key and loses the old one like the others.
 */

export const WRITE_KEY = 'write_key';
export const UPLOAD_KEY = 'upload_key';
export const ENABLE_KEY = 'enable_key';
export const VERIFY_KEY = 'verify_key';
export const RUN_ON_ROTATE = 'run_on_rotate';
export const REMOVE_OLD_KEY = 'remove_old_key';
export const CLOSE_ROTATION = 'close_rotation';

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

export interface ObservedDeployKey {
  readonly id: number;
  readonly title: string;
  readonly created_at: string;
  readonly fingerprint: string | undefined;
  /** The configured projects the key is on, in the configured order. */
  readonly projects: readonly DeployProject[];
}

/** A selected project whose deploy keys are not known this pass. */
export interface UnreadProject {
  readonly project: string | number;
  /** The forge answered 404: deleted, moved, or hidden from the token (which it answers alike). Else refused or failing. */
  readonly gone: boolean;
}

export interface KeyRotationSnapshot {
  /** One per `ssh_keys` entry, in order. */
  readonly ssh: readonly SshOwnerSnapshot[];
  /** One per `deploy_keys` entry, in order: every deploy key of the entry's projects that could be read (any title). */
  readonly deploy: readonly (readonly ObservedDeployKey[])[];
  /** One per `deploy_keys` entry: its selected projects whose deploy keys could not be read. Absent: none. */
  readonly deployUnread?: readonly (readonly UnreadProject[])[];
  /** The keys of users with open rotations that no `ssh_keys` entry listed this pass, by user id. */
  readonly owners?: Readonly<Record<string, OwnerKeys>>;
  /** Records of open rotations and of rotations of listed keys, by id. */
  readonly rotations: Readonly<Record<string, RotationRecord>>;
}

const DAY_MS = 86_400_000;

export function decideKeyRotation(config: KeyRotationConfig, snapshot: KeyRotationSnapshot, now: Date): Decision[] {
  const decisions: Decision[] = [];
  const forge = new ForgeView(config, snapshot);
  // A key matched by two entries is decided once, by the first.
  const seen = new Set<string>();
  for (const kind of [KEY_KINDS.ssh, KEY_KINDS.deploy]) {
    for (const listing of kind.listings(config, snapshot, forge)) {
      if ('unreadable' in listing) {
        decisions.push(listing.unreadable);
        continue;
      }
      // In id order, so the decisions do not depend on the order the forge listed the keys in.
      for (const key of [...listing.keys].sort((a, b) => a.keyId - b.keyId)) {
        if (!listing.titles.some((pattern) => pattern.test(key.title)) || seen.has(key.rotation)) continue;
        seen.add(key.rotation);
        decisions.push(...decideManagedKey(config, snapshot, forge, now, key));
      }
    }
  }

  // Rotations whose old key is not listed this pass (removed by a person, or its user or projects unread or gone) are
  // looked at too: one whose premise still holds finishes what it started, the others are closed or wait.
  for (const record of Object.values(snapshot.rotations).sort((a, b) => (a.id < b.id ? -1 : 1))) {
    if (seen.has(record.id) || isFinished(record)) continue;
    const kind = KEY_KINDS[record.kind];
    decisions.push(...decideRotation(config, forge, record, kind.unlistedTarget(record), now, kind.unlistedLifetime(config, record)));
  }
  return decisions;
}

/** A listed key is the new key of a rotation, under rotation itself, due, or not yet due. */
function decideManagedKey(config: KeyRotationConfig, snapshot: KeyRotationSnapshot, forge: ForgeView, now: Date, key: ManagedKey): Decision[] {
  const replacing = forge.rotationWithNewKey(key);
  if (replacing !== undefined) return [skip(key.target, key.rotation, `skip: new key of rotation ${replacing}`)];
  const record = snapshot.rotations[key.rotation];
  if (record && !isFinished(record)) return decideRotation(config, forge, record, key.target, now, key.lifetime);
  // No rotation under way: what the forge lists decides. A finished one's old key still listed (a project that gained
  // it after it was done, a closed rotation's) is rotated again as the next generation, with a new key.
  const generation = record ? generationOf(record) + 1 : 1;
  const due = key.due(now);
  if (!due.rotate) return [skip(key.target, key.rotation, `${due.reason}${record ? finishedNote(record) : ''}`)];
  return firstSteps(config, key, due.reason, generation);
}

/** What a finished rotation of a key that is listed again adds to its skip, so plan does not hide it. */
function finishedNote(record: RotationRecord): string {
  const when = (at: string | null | undefined) => (at ? ` ${at}` : '');
  if (record.step === 'closed') return ` (rotation ${record.id} closed${when(record.closed_at)}: ${record.closed_reason ?? 'no reason recorded'})`;
  return ` (rotation ${record.id} was done${when(record.removed_at)}, yet the key is listed again)`;
}

/**
 * A listed key that a configured entry manages, whichever its kind: what the loop of decideKeyRotation needs to
 * skip it, continue its rotation or start one.
 */
interface ManagedKey {
  /** The key's id on the forge. */
  readonly keyId: number;
  readonly title: string;
  readonly fingerprint: string | undefined;
  readonly rotation: string;
  readonly target: string;
  /** The new key's lifetime (SSH keys); deploy keys never expire. */
  readonly lifetime: number | undefined;
  /** Where the new deploy key goes: the readable projects that hold the old one, the first one first; none for SSH keys. */
  readonly projects: readonly DeployProject[];
  /** Whether a rotation starts now, and why, or why not. */
  due(now: Date): Due;
  /** What write_key records when the rotation starts; `path` is where the new private key goes. */
  startParams(generation: number): StartParams;
  /** The owner, for the preconditions of an SSH key's steps (read again from the forge before each). */
  readonly owner: SshOwner | null;
}

/** The first step's parameters, with the new key's path, which its plan details name. */
type StartParams = ActionParams & { readonly path: string };

/** One configured entry as the snapshot lists it: the keys its titles pick from, or the skip saying why none can be read. */
type Listing = { readonly titles: readonly TitlePattern[]; readonly keys: readonly ManagedKey[] } | { readonly unreadable: Decision };

/** An RE2 expression of an entry's `titles`. */
type TitlePattern = { test(title: string): boolean };

/** What differs between SSH keys and deploy keys; decideKeyRotation treats the keys of both alike. */
interface KeyKind {
  /** One listing per configured entry of this kind, in configuration order. */
  listings(config: KeyRotationConfig, snapshot: KeyRotationSnapshot, forge: ForgeView): Listing[];
  /** The target of a rotation whose old key is no longer listed. */
  unlistedTarget(record: RotationRecord): string;
  /** The new key's lifetime for such a rotation, which no listed key ties to an entry. */
  unlistedLifetime(config: KeyRotationConfig, record: RotationRecord): number | undefined;
}

const SSH_KEYS: KeyKind = {
  listings: (config, snapshot) =>
    config.ssh_keys.flatMap((rule, index): Listing[] => {
      const entry = snapshot.ssh[index];
      if (!entry) return [];
      if (entry.access !== 'ok') return [{ unreadable: unreadableSshKeys(entry) }];
      return [{ titles: rule.titles, keys: entry.keys.map((key) => managedSshKey(config, rule, entry.owner, key)) }];
    }),
  unlistedTarget: (record) => `${record.owner?.username ?? '?'}'s SSH key ${record.old_key_id} "${record.title}" (no longer listed)`,
  // The entry that would manage the key today, else the lifetime the rotation started with.
  unlistedLifetime: (config, record) => config.ssh_keys.find((rule) => rule.titles.some((p) => p.test(record.title)))?.lifetime ?? record.lifetime_ms ?? undefined,
};

const DEPLOY_KEYS: KeyKind = {
  listings: (config, snapshot, forge) =>
    config.deploy_keys.map((rule, index) => ({
      titles: rule.titles,
      // The key as every entry that manages its title shows it: a key is rotated on all the policy's projects that hold it.
      keys: (snapshot.deploy[index] ?? []).map((key) => managedDeployKey(config, rule, forge.deploy(key.title).keys.get(key.id) ?? key)),
    })),
  unlistedTarget: (record) => `deploy key ${record.old_key_id} "${record.title}" (no longer listed)`,
  unlistedLifetime: () => undefined,
};

const KEY_KINDS: Readonly<Record<RotationRecord['kind'], KeyKind>> = { ssh: SSH_KEYS, deploy: DEPLOY_KEYS };

function unreadableSshKeys(entry: Exclude<SshOwnerSnapshot, { access: 'ok' }>): Decision {
  const reason =
    entry.access === 'needs_admin'
      ? "skip: another user's keys need an administrator's token"
      : entry.access === 'unknown_user'
        ? `skip: no user ${entry.label} on the forge`
        : `skip: the keys of ${entry.label} could not be read this pass; the other users and projects go on`;
  return { action: SKIP, target: `SSH keys of ${entry.label}`, key: `ssh-user:${entry.label}`, reason, params: {} };
}

function managedSshKey(config: KeyRotationConfig, rule: SshKeysRule, owner: SshOwner, key: ObservedSshKey): ManagedKey {
  const rotation = sshRotationId(owner.user_id, key.id);
  return {
    keyId: key.id,
    title: key.title,
    fingerprint: key.fingerprint,
    rotation,
    target: `${owner.username}'s SSH key ${key.id} "${key.title}"`,
    lifetime: rule.lifetime,
    projects: [],
    owner,
    due: (now) => sshDue(rule, key, now),
    startParams: (generation) => ({
      rotation,
      generation,
      kind: 'ssh',
      title: key.title,
      old_key_id: key.id,
      old_fingerprint: key.fingerprint ?? null,
      user_id: owner.user_id,
      username: owner.username,
      self: owner.self,
      projects: [],
      path: keyPath(config.secrets_dir, config.name, owner.username, key.id),
      secrets_dir: config.secrets_dir,
      key_type: config.key_type,
      grace_ms: rule.grace,
      lifetime_ms: rule.lifetime,
    }),
  };
}

function managedDeployKey(config: KeyRotationConfig, rule: DeployKeysRule, key: ObservedDeployKey): ManagedKey {
  const rotation = deployRotationId(key.id);
  return {
    keyId: key.id,
    title: key.title,
    fingerprint: key.fingerprint,
    rotation,
    target: `deploy key ${key.id} "${key.title}" (${key.projects.map((p) => p.project).join(', ')})`,
    lifetime: undefined,
    projects: key.projects,
    owner: null,
    due: (now) => {
      const due = deployDue(rule, key, now);
      // The new key is created on the first project the old one is on: with none, there is nowhere to create it.
      return key.projects.length === 0 ? { ...due, rotate: false } : due;
    },
    startParams: (generation) => ({
      rotation,
      generation,
      kind: 'deploy',
      title: key.title,
      old_key_id: key.id,
      old_fingerprint: key.fingerprint ?? null,
      projects: projectsParam(key.projects),
      path: keyPath(config.secrets_dir, config.name, String(key.projects[0].project), key.id),
      secrets_dir: config.secrets_dir,
      key_type: config.key_type,
      grace_ms: rule.grace,
    }),
  };
}

type Due = { rotate: boolean; reason: string };

/** A key expiring within rotate_before, or expired while still listed, is due; one without expiry never is. */
export function sshDue(rule: SshKeysRule, key: ObservedSshKey, now: Date): Due {
  if (key.expires_at === null) return { rotate: false, reason: 'skip: never expires' };
  const expires = Date.parse(key.expires_at);
  if (Number.isNaN(expires)) return { rotate: false, reason: `skip: unreadable expires_at ${key.expires_at}` };
  if (expires <= now.getTime()) return { rotate: true, reason: `rotate: expired ${day(expires)}, still listed` };
  if (expires - now.getTime() <= rule.rotate_before) {
    return { rotate: true, reason: `rotate: expires ${day(expires)}, within rotate_before ${durationText(rule.rotate_before)}` };
  }
  return { rotate: false, reason: `skip: expires in ${span(expires - now.getTime())}` };
}

/** A deploy key at least rotate_after old (by created_at) is due. */
export function deployDue(rule: DeployKeysRule, key: ObservedDeployKey, now: Date): Due {
  const created = Date.parse(key.created_at);
  if (Number.isNaN(created)) return { rotate: false, reason: `skip: unreadable created_at ${key.created_at}` };
  const age = now.getTime() - created;
  if (age >= rule.rotate_after) {
    return { rotate: true, reason: `rotate: created ${day(created)}, older than rotate_after ${durationText(rule.rotate_after)}` };
  }
  return { rotate: false, reason: `skip: ${span(age)} old, rotates after ${durationText(rule.rotate_after)}` };
}

/**
 * What a rotation's steps are decided from: the rotation as recorded (its id, generation, attempt) and its premise as
 * the decision states it, so each action's precondition can read the same facts again from the forge.
 */
interface Rotation {
  readonly id: string;
  readonly generation: number;
  readonly attempt: number;
  readonly target: string;
  readonly oldKeyId: number;
  readonly oldFingerprint: string | null;
  /** SSH keys: whose, read again before each step. */
  readonly owner: SshOwner | null;
}

/** A new rotation: every step up to verification, so one pass normally gets the new key in place. */
function firstSteps(config: KeyRotationConfig, key: ManagedKey, reason: string, generation: number): Decision[] {
  const start = key.startParams(generation);
  const rotation: Rotation = {
    id: key.rotation,
    generation,
    attempt: 0,
    target: key.target,
    oldKeyId: key.keyId,
    oldFingerprint: key.fingerprint ?? null,
    owner: key.owner,
  };
  const details = [`new ${config.key_type} private key at ${start.path}`, ...(generation > 1 ? [`generation ${generation} of rotation ${key.rotation}`] : [])];
  return [
    { action: WRITE_KEY, target: key.target, key: stepKey(rotation, WRITE_KEY), reason, params: start, details },
    ...placeNewKey(rotation, undefined, key.lifetime, key.projects),
    ...(config.on_rotate !== undefined ? [hook(config, config.on_rotate, rotation, null)] : []),
  ];
}

/**
 * A rotation under way: closed when the forge contradicts what it rests on, waiting when the forge could not be read,
 * else its remaining steps.
 */
function decideRotation(config: KeyRotationConfig, forge: ForgeView, record: RotationRecord, target: string, now: Date, lifetime: number | undefined): Decision[] {
  const rotation: Rotation = {
    id: record.id,
    generation: generationOf(record),
    attempt: record.attempt,
    target,
    oldKeyId: record.old_key_id,
    oldFingerprint: record.old_fingerprint,
    owner: record.owner,
  };
  if (record.kind === 'ssh') {
    const premise = sshPremise(forge, record);
    if ('close' in premise) return [close(rotation, premise.close)];
    if ('wait' in premise) return [skip(target, record.id, premise.wait)];
    return steps(config, record, rotation, now, lifetime, premise.oldListed ? [] : null, []);
  }
  const premise = deployPremise(forge, record);
  if ('close' in premise) return [close(rotation, premise.close)];
  if ('wait' in premise) return [skip(target, record.id, premise.wait)];
  return steps(config, record, rotation, now, lifetime, premise.oldOn, premise.unreadable, premise.newOn);
}

type Premise<Holds> = { readonly close: string } | { readonly wait: string } | Holds;

/**
 * Whether an SSH rotation still rests on what the forge shows: its user is there, the key with the old id is the old
 * key, and once uploaded the new key is listed with the recorded id and fingerprint. Before the upload, an old key
 * that is gone (a person removed it, maybe to take the access away) is not replaced.
 */
function sshPremise(forge: ForgeView, record: RotationRecord): Premise<{ readonly oldListed: boolean }> {
  const owner = record.owner;
  const name = owner ? `${owner.username} (user ${owner.user_id})` : 'its user';
  const listing = owner ? forge.ownerKeys(owner.user_id) : undefined;
  if (!listing) return { wait: `skip: the keys of ${name} were not read this pass; the rotation waits` };
  if (listing.state === 'gone') return { close: `user ${name} is gone from the forge` };
  if (listing.state === 'unread') return { wait: `skip: the keys of ${name} could not be read (${listing.reason}); the rotation waits` };
  const old = listing.keys.find((key) => key.id === record.old_key_id);
  if (old && differs(old.fingerprint, record.old_fingerprint)) {
    return { close: `key ${record.old_key_id} of ${name} is another key than the one this rotation replaces (${old.fingerprint ?? '?'}, not ${record.old_fingerprint ?? '?'})` };
  }
  if (record.new_key_id !== null) {
    const fresh = listing.keys.find((key) => key.id === record.new_key_id);
    if (!fresh) return { close: `new key ${record.new_key_id} is gone from the forge` };
    if (differs(fresh.fingerprint, record.fingerprint)) {
      return { close: `key ${record.new_key_id} of ${name} is not the new key ${record.fingerprint ?? '?'} (it is ${fresh.fingerprint ?? '?'})` };
    }
  } else if (!old) {
    return { close: `old key ${record.old_key_id} is gone from the keys of ${name} (removed by someone else): no new key is uploaded` };
  }
  return { oldListed: old !== undefined };
}

/** Where a deploy rotation stands on the forge now, within the policy's selection. */
interface DeployPlaces {
  /** The readable projects that hold the old key now, in the configured order: where the new key must be. */
  readonly oldOn: readonly DeployProject[];
  /** The readable projects that list the new key (recorded id and fingerprint), with its can_push there. */
  readonly newOn: ReadonlyMap<string, boolean>;
  /** Selected projects that could not be read (refused, failing): neither touched nor counted as empty. */
  readonly unreadable: readonly UnreadProject[];
}

/**
 * Whether a deploy rotation still rests on what the forge shows: the key with the old id is the old key, and once
 * created the new key is the recorded one and is still on every project the bot put it on that holds the old key (a
 * person removing it there says not to have it). Before the new key exists, an old key on none of the projects read
 * (removed by a person, its projects gone) is not replaced.
 */
function deployPremise(forge: ForgeView, record: RotationRecord): Premise<DeployPlaces> {
  const view = forge.deploy(record.title);
  const old = view.keys.get(record.old_key_id);
  const unreadable = view.unread.filter((project) => !project.gone);
  const notRead = unreadable.map((project) => project.project).join(', ');
  if (old && differs(old.fingerprint, record.old_fingerprint)) {
    return { close: `deploy key ${record.old_key_id} on ${old.projects[0]?.project ?? '?'} is another key than the one this rotation replaces (${old.fingerprint ?? '?'}, not ${record.old_fingerprint ?? '?'})` };
  }
  const oldOn = old?.projects ?? [];
  if (record.new_key_id === null) {
    if (oldOn.length > 0) return { oldOn, newOn: new Map(), unreadable };
    if (unreadable.length > 0) return { wait: `skip: old key ${record.old_key_id} is on none of the projects read; ${notRead} could not be read; the rotation waits` };
    return { close: `old key ${record.old_key_id} is on none of the selected projects any more (${goneText(record, view.unread)}): no new key is created` };
  }
  const fresh = view.keys.get(record.new_key_id);
  if (fresh && differs(fresh.fingerprint, record.fingerprint)) {
    return { close: `deploy key ${record.new_key_id} on ${fresh.projects[0]?.project ?? '?'} is not the new key ${record.fingerprint ?? '?'} (it is ${fresh.fingerprint ?? '?'})` };
  }
  const newOn = new Map((fresh?.projects ?? []).map((p) => [refKey(p.project), p.can_push]));
  const placed = placedOn(record);
  const removed = oldOn.filter((p) => placed.has(refKey(p.project)) && !newOn.has(refKey(p.project)));
  if (removed.length > 0) return { close: `new key ${record.new_key_id} is gone from ${removed.map((p) => p.project).join(', ')}` };
  if (newOn.size === 0) {
    if (unreadable.length > 0) return { wait: `skip: new key ${record.new_key_id} is on none of the projects read; ${notRead} could not be read; the rotation waits` };
    return { close: `new key ${record.new_key_id} is gone from the forge (${goneText(record, view.unread)})` };
  }
  return { oldOn, newOn, unreadable };
}

/** Why a deploy rotation finds nothing: its recorded projects that are gone, or that the keys were removed. */
function goneText(record: RotationRecord, unread: readonly UnreadProject[]): string {
  const gone = new Set(unread.filter((p) => p.gone).map((p) => refKey(p.project)));
  const projects = record.projects.filter((p) => gone.has(refKey(p.project))).map((p) => p.project);
  if (projects.length > 0 && projects.length === record.projects.length) return `${projects.length === 1 ? 'project' : 'projects'} ${projects.join(', ')} gone from the forge`;
  return 'removed by someone else, or its projects gone or no longer selected';
}

/**
 * The remaining steps of a rotation whose premise holds, from its record. `oldOn`: for a deploy key, the projects that
 * hold the old key now (where the new key must be); for an SSH key, empty, or null when the old key is no longer
 * listed (removed by a person once the new key was in place). `newOn`: where the new deploy key is, with its can_push.
 */
function steps(
  config: KeyRotationConfig,
  record: RotationRecord,
  rotation: Rotation,
  now: Date,
  lifetime: number | undefined,
  oldOrGone: readonly DeployProject[] | null,
  unreadable: readonly UnreadProject[],
  newOn: ReadonlyMap<string, boolean> = new Map(),
): Decision[] {
  const oldOn = oldOrGone ?? [];
  const { fingerprint } = record;
  const { target } = rotation;
  const failed = record.last_error ? [`last attempt failed: ${record.last_error}`] : [];
  const withFailure = (decisions: Decision[]): Decision[] => decisions.map((decision, index) => (index === 0 ? { ...decision, details: [...(decision.details ?? []), ...failed] } : decision));
  const hookStep = (newKeyId: number | null) => (config.on_rotate !== undefined ? [hook(config, config.on_rotate, rotation, newKeyId)] : []);
  switch (record.step) {
    case 'planned': {
      const params: ActionParams = resumeParams(config, record, oldOn);
      return [
        { action: WRITE_KEY, target, key: stepKey(rotation, WRITE_KEY), reason: `resume: write the new private key to ${record.path}`, params, details: failed },
        ...placeNewKey(rotation, undefined, lifetime, record.kind === 'deploy' ? oldOn : []),
        ...hookStep(null),
      ];
    }
    case 'key_written':
      return withFailure([...placeNewKey(rotation, fingerprint, lifetime, record.kind === 'deploy' ? oldOn : []), ...hookStep(record.new_key_id)]);
    case 'uploaded':
      return withFailure([...enables(rotation, oldOn, newOn), verify(rotation, fingerprint, oldOn), ...hookStep(record.new_key_id)]);
    case 'verified':
    case 'hooked': {
      const decisions: Decision[] = [...enables(rotation, oldOn, newOn)];
      const hookPending = record.step === 'verified' && config.on_rotate !== undefined;
      if (hookPending && config.on_rotate !== undefined) decisions.push({ ...hook(config, config.on_rotate, rotation, record.new_key_id), details: failed });
      decisions.push(removal(record, rotation, now, hookPending, oldOrGone, unreadable));
      return decisions;
    }
    case 'done':
      return [skip(target, record.id, `skip: rotated; old key ${record.old_key_id} removed ${record.removed_at ?? ''}`.trimEnd())];
    case 'closed':
      return [skip(target, record.id, `skip: rotation closed: ${record.closed_reason ?? 'no reason recorded'}`)];
  }
}

/**
 * Putting the new key in place: an SSH key uploaded to its user; a deploy key created on the first project that holds
 * the old one and enabled on each other one, then verified.
 */
function placeNewKey(rotation: Rotation, fingerprint: string | null | undefined, lifetime: number | undefined, projects: readonly DeployProject[]): Decision[] {
  const [first, ...others] = projects;
  return [upload(rotation, fingerprint, lifetime, first), ...enables(rotation, others, new Map()), verify(rotation, fingerprint, projects)];
}

/** Removing the old key once the new one is verified, grace has passed and on_rotate (if any) has run. */
function removal(record: RotationRecord, rotation: Rotation, now: Date, hookPending: boolean, oldOrGone: readonly DeployProject[] | null, unreadable: readonly UnreadProject[]): Decision {
  const { target } = rotation;
  const oldOn = oldOrGone ?? [];
  const verifiedAt = Date.parse(record.verified_at ?? '');
  const until = verifiedAt + record.grace_ms;
  const grace = durationText(record.grace_ms);
  if (Number.isNaN(verifiedAt)) return skip(target, record.id, `skip: keep old key ${record.old_key_id}: the new key has no verification time`);
  if (now.getTime() < until) {
    return skip(target, record.id, `skip: keep old key ${record.old_key_id} until ${new Date(until).toISOString()} (grace ${grace})`);
  }
  if (hookPending) {
    // Consumers of the key may not have the new one yet; removing the old one now could lock them out.
    return skip(target, record.id, `skip: keep old key ${record.old_key_id} until on_rotate succeeds`);
  }
  const notRead = unreadable.map((p) => p.project).join(', ');
  if (record.kind === 'deploy' && oldOn.length === 0 && unreadable.length > 0) {
    // Nothing to remove where the keys could be read, and a project that could not be read may still hold the old key:
    // the rotation stays open, so that project gets the new key and loses the old one once it can be read again.
    return skip(target, record.id, `skip: old key ${record.old_key_id} is on none of the projects read; ${notRead} could not be read and may still hold it`);
  }
  const where = record.kind === 'deploy' ? (oldOn.length > 0 ? ` from ${oldOn.map((p) => p.project).join(', ')}` : '') : '';
  // An old key no longer there is not called removed: the step only records that the rotation is done.
  const reason =
    record.kind === 'deploy' && oldOn.length === 0
      ? `finish: old key ${record.old_key_id} is on none of the selected projects any more; new key ${record.new_key_id ?? '?'} stays`
      : oldOrGone === null
        ? `finish: old key ${record.old_key_id} is gone already (removed by someone else); new key ${record.new_key_id ?? '?'} stays`
        : `remove old key ${record.old_key_id}${where}: grace ${grace} passed`;
  return {
    action: REMOVE_OLD_KEY,
    target,
    key: stepKey(rotation, REMOVE_OLD_KEY),
    reason,
    params: {
      ...premiseParams(rotation),
      new_key_id: record.new_key_id,
      fingerprint: record.fingerprint,
      after_hook: record.step === 'hooked',
      ...(record.kind === 'deploy' ? { projects: projectsParam(oldOn), complete: unreadable.length === 0 } : {}),
    },
    details: [
      `new key ${record.new_key_id ?? '?'} ${record.fingerprint ?? ''} at ${record.path}`.replace('  ', ' '),
      // A project that could not be read is never written to: its old key stays until it can be read again.
      ...(unreadable.length > 0 ? [`not read this pass, left as they are: ${notRead}`] : []),
    ],
  };
}

/** Closing a rotation whose premise the forge contradicts: only the policy's record changes; the next pass decides. */
function close(rotation: Rotation, why: string): Decision {
  return {
    action: CLOSE_ROTATION,
    target: rotation.target,
    key: stepKey(rotation, CLOSE_ROTATION),
    reason: `close: ${why}; nothing on the forge is changed, and the next pass decides afresh`,
    params: { rotation: rotation.id, generation: rotation.generation, reason: why },
  };
}

function resumeParams(config: KeyRotationConfig, record: RotationRecord, oldOn: readonly DeployProject[]): ActionParams {
  return {
    rotation: record.id,
    generation: generationOf(record),
    kind: record.kind,
    title: record.title,
    old_key_id: record.old_key_id,
    old_fingerprint: record.old_fingerprint,
    ...(record.owner ? { user_id: record.owner.user_id, username: record.owner.username, self: record.owner.self } : {}),
    // Where the old key is now: a rotation planned before a person changed the projects starts from what is there.
    projects: projectsParam(record.kind === 'deploy' && oldOn.length > 0 ? oldOn : record.projects),
    path: record.path,
    secrets_dir: config.secrets_dir,
    key_type: config.key_type,
    grace_ms: record.grace_ms,
    lifetime_ms: record.lifetime_ms,
  };
}

/** Deploy projects as the action reads them back: a plain JSON list of {project, can_push}. */
function projectsParam(projects: readonly DeployProject[]): JsonValue {
  return projects.map(({ project, can_push }) => ({ project, can_push }));
}

/**
 * What every step that writes to the forge rests on: the rotation, the old key as the decision saw it (and whose), which
 * its precondition reads again, and the attempt its key names (a step the forge refuses for good is decided again with
 * that same key, which the engine keeps parked).
 */
function premiseParams(rotation: Rotation): ActionParams {
  return {
    rotation: rotation.id,
    generation: rotation.generation,
    attempt: rotation.attempt,
    old_key_id: rotation.oldKeyId,
    old_fingerprint: rotation.oldFingerprint,
    ...(rotation.owner ? { user_id: rotation.owner.user_id, username: rotation.owner.username, self: rotation.owner.self } : {}),
  };
}

function upload(rotation: Rotation, fingerprint: string | null | undefined, lifetime: number | undefined, first: DeployProject | undefined): Decision {
  const what = fingerprint ? `the new public key ${fingerprint}` : 'the new public key';
  const where = first ? `: create it on ${first.project}, which holds old key ${rotation.oldKeyId}` : lifetime !== undefined ? `, expiring in ${durationText(lifetime)}` : '';
  return {
    action: UPLOAD_KEY,
    target: rotation.target,
    key: stepKey(rotation, UPLOAD_KEY),
    reason: `upload ${what}${where}`,
    params: {
      ...premiseParams(rotation),
      ...(lifetime !== undefined ? { lifetime_ms: lifetime } : {}),
      ...(first ? { project: first.project, can_push: first.can_push } : {}),
    },
  };
}

/**
 * Enabling the new deploy key on each project that holds the old key and lacks the new one (or has it with another
 * can_push than the old key there): one action per project, each checking just before it acts that the project still
 * holds the old key, so a project a person took the old key from meanwhile is not given the new one.
 */
function enables(rotation: Rotation, projects: readonly DeployProject[], newOn: ReadonlyMap<string, boolean>): Decision[] {
  return projects
    .filter((p) => newOn.get(refKey(p.project)) !== p.can_push)
    .map((p) => ({
      action: ENABLE_KEY,
      target: rotation.target,
      key: stepKey(rotation, `${ENABLE_KEY}:${refKey(p.project)}`),
      reason: newOn.has(refKey(p.project))
        ? `set can_push ${p.can_push} of the new key on ${p.project}, as old key ${rotation.oldKeyId} has there`
        : `enable the new key on ${p.project} (can_push ${p.can_push}), which holds old key ${rotation.oldKeyId}`,
      params: { ...premiseParams(rotation), project: p.project, can_push: p.can_push },
    }));
}

function verify(rotation: Rotation, fingerprint: string | null | undefined, projects: readonly DeployProject[]): Decision {
  return {
    action: VERIFY_KEY,
    target: rotation.target,
    key: stepKey(rotation, VERIFY_KEY),
    reason: `verify the forge lists ${fingerprint ?? 'the new key'}${projects.length > 0 ? ` on ${projects.map((p) => p.project).join(', ')}` : ''}`,
    params: { rotation: rotation.id, generation: rotation.generation, ...(projects.length > 0 ? { projects: projectsParam(projects) } : {}) },
  };
}

function hook(config: KeyRotationConfig, command: string, rotation: Rotation, newKeyId: number | null): Decision {
  return {
    action: RUN_ON_ROTATE,
    target: rotation.target,
    key: stepKey(rotation, RUN_ON_ROTATE),
    reason: `run on_rotate for new key ${newKeyId ?? '(once uploaded)'}`,
    params: { rotation: rotation.id, generation: rotation.generation, command, env: config.on_rotate_env.join(',') },
  };
}

function skip(target: string, id: string, reason: string): Decision {
  return { action: SKIP, target, key: id, reason, params: { rotation: id } };
}

/**
 * Rotation, generation, step and attempt: one attempt of one step runs once; a failed step is tried again as the next
 * attempt; a later generation (after a rotation was closed) has keys of its own. The first generation's keys are those
 * of the versions before generations, so their ledger entries still count.
 */
export function stepKey(rotation: Pick<Rotation, 'id' | 'generation' | 'attempt'>, step: string): string {
  return `${rotation.id}${rotation.generation > 1 ? `#${rotation.generation}` : ''}:${step}:${rotation.attempt}`;
}

/**
 * The forge as decide looks at it for rotations: a user's keys whichever way they were read, and a deploy key merged
 * over every entry that manages its title (computed once per set of entries).
 */
class ForgeView {
  private readonly deployViews = new Map<string, DeployView>();
  private readonly newKeys = new Map<number, RotationRecord>();

  constructor(
    private readonly config: KeyRotationConfig,
    private readonly snapshot: KeyRotationSnapshot,
  ) {
    for (const record of Object.values(snapshot.rotations)) if (record.new_key_id !== null && !isFinished(record)) this.newKeys.set(record.new_key_id, record);
  }

  /** The SSH keys of a user, from an entry that listed them or as read for an open rotation; undefined: not read. */
  ownerKeys(userId: number): OwnerKeys | undefined {
    for (const entry of this.snapshot.ssh) if (entry.access === 'ok' && entry.owner.user_id === userId) return { state: 'listed', keys: entry.keys };
    return this.snapshot.owners?.[String(userId)];
  }

  /** The rotation a listed key is the new key of: its recorded id, and its fingerprint unless either is unknown. */
  rotationWithNewKey(key: Pick<ManagedKey, 'keyId' | 'fingerprint'>): string | undefined {
    const record = this.newKeys.get(key.keyId);
    return record && !differs(key.fingerprint, record.fingerprint) ? record.id : undefined;
  }

  /**
   * Deploy keys as the policy's entries that manage `title` show them (all entries when none does, for a rotation
   * whose entry changed), each key with every such project it is on, and the projects of those entries not read.
   */
  deploy(title: string): DeployView {
    const matching = this.config.deploy_keys.flatMap((rule, index) => (rule.titles.some((pattern) => pattern.test(title)) ? [index] : []));
    const entries = matching.length > 0 ? matching : this.config.deploy_keys.map((_, index) => index);
    const id = entries.join(',');
    const known = this.deployViews.get(id);
    if (known) return known;
    const keys = new Map<number, ObservedDeployKey>();
    const unread = new Map<string, UnreadProject>();
    for (const index of entries) {
      for (const key of this.snapshot.deploy[index] ?? []) {
        const merged = keys.get(key.id);
        if (!merged) {
          keys.set(key.id, key);
          continue;
        }
        const on = new Set(merged.projects.map((p) => refKey(p.project)));
        keys.set(key.id, { ...merged, projects: [...merged.projects, ...key.projects.filter((p) => !on.has(refKey(p.project)))] });
      }
      for (const project of this.snapshot.deployUnread?.[index] ?? []) if (!unread.has(refKey(project.project))) unread.set(refKey(project.project), project);
    }
    const view = { keys, unread: [...unread.values()] };
    this.deployViews.set(id, view);
    return view;
  }
}

interface DeployView {
  readonly keys: ReadonlyMap<number, ObservedDeployKey>;
  readonly unread: readonly UnreadProject[];
}

/**
 * Pure: when the next pass should run sooner than the interval, namely when an old key's grace period ends (a
 * rotation verified this pass counts from now), so the old key goes on time and not up to an interval late.
 */
export function nextKeyRotationPass(
  config: KeyRotationConfig,
  snapshot: KeyRotationSnapshot,
  now: Date,
  decisions: readonly Decision[] = decideKeyRotation(config, snapshot, now),
): Date | undefined {
  const graceOfNew = new Map<string, number>();
  for (const decision of decisions) {
    const rotation = rotationOf(decision);
    if (decision.action === WRITE_KEY && rotation !== undefined && typeof decision.params.grace_ms === 'number') graceOfNew.set(rotation, decision.params.grace_ms);
  }
  let earliest: number | undefined;
  const consider = (at: number) => {
    if (at > now.getTime()) earliest = Math.min(earliest ?? at, at);
  };
  for (const decision of decisions) {
    const rotation = rotationOf(decision);
    if (rotation === undefined) continue;
    const record = snapshot.rotations[rotation];
    if (decision.action === VERIFY_KEY) {
      // A new generation's grace is the one it starts with, not the closed record's.
      const grace = graceOfNew.get(rotation) ?? record?.grace_ms;
      if (grace !== undefined) consider(now.getTime() + grace);
    } else if (decision.action === SKIP && record?.verified_at && (record.step === 'verified' || record.step === 'hooked')) {
      consider(Date.parse(record.verified_at) + record.grace_ms);
    }
  }
  // A minute late, so replicas with clocks a little apart all find the grace over.
  return earliest === undefined ? undefined : new Date(earliest + 60_000);
}

/** The rotation a decision is about; the skip of a user whose keys cannot be read is about none. */
function rotationOf(decision: Decision): string | undefined {
  return typeof decision.params.rotation === 'string' ? decision.params.rotation : undefined;
}

/** Key periods read best in days (`14d`, not `2w`), as policies usually write them. */
function durationText(ms: number): string {
  return ms >= DAY_MS && ms % DAY_MS === 0 ? `${ms / DAY_MS}d` : formatDuration(ms);
}

function day(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** A rough span for reasons: whole days, else hours, else minutes. */
function span(ms: number): string {
  if (ms >= DAY_MS) return `${Math.floor(ms / DAY_MS)}d`;
  if (ms >= 3_600_000) return `${Math.floor(ms / 3_600_000)}h`;
  return `${Math.max(0, Math.floor(ms / 60_000))}m`;
}
