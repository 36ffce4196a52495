import { formatDuration } from '../../config/duration';
import { type ActionParams, type Decision, type JsonValue, SKIP } from '../../engine/policy';
import { type DeployProject, deployRotationId, keyPath, type RotationRecord, type SshOwner, sshRotationId } from './key-rotation.record';
import type { DeployKeysRule, KeyRotationConfig, SshKeysRule } from './key-rotation.schema';

/**
 * Deciding what to do with each managed key: pure, no I/O, no clock. A key not yet under rotation is rotated or
 * skipped with its reason; a key under rotation gets the remaining steps of its state machine (see
 * key-rotation.record.ts), each a separate action keyed by rotation id, step and attempt. Every step re-reads the
 * record before acting, so a step decided in the same pass after one that failed does nothing.
 */

export const WRITE_KEY = 'write_key';
export const UPLOAD_KEY = 'upload_key';
export const VERIFY_KEY = 'verify_key';
export const RUN_ON_ROTATE = 'run_on_rotate';
export const REMOVE_OLD_KEY = 'remove_old_key';

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
  | { readonly access: 'unknown_user'; readonly label: string };

export interface ObservedDeployKey {
  readonly id: number;
  readonly title: string;
  readonly created_at: string;
  readonly fingerprint: string | undefined;
  /** The configured projects the key is on, in the configured order. */
  readonly projects: readonly DeployProject[];
}

export interface KeyRotationSnapshot {
  /** One per `ssh_keys` entry, in order. */
  readonly ssh: readonly SshOwnerSnapshot[];
  /** One per `deploy_keys` entry, in order. */
  readonly deploy: readonly (readonly ObservedDeployKey[])[];
  /** Records of open rotations and of rotations of listed keys, by id. */
  readonly rotations: Readonly<Record<string, RotationRecord>>;
}

const DAY_MS = 86_400_000;

export function decideKeyRotation(config: KeyRotationConfig, snapshot: KeyRotationSnapshot, now: Date): Decision[] {
  const decisions: Decision[] = [];
  // A key matched by two entries is decided once, by the first.
  const seen = new Set<string>();
  const newKeys = rotationsByNewKey(snapshot.rotations);
  for (const kind of [KEY_KINDS.ssh, KEY_KINDS.deploy]) {
    for (const listing of kind.listings(config, snapshot)) {
      if ('unreadable' in listing) {
        decisions.push(listing.unreadable);
        continue;
      }
      // In id order, so the decisions do not depend on the order the forge listed the keys in.
      for (const key of [...listing.keys].sort((a, b) => a.keyId - b.keyId)) {
        if (!listing.titles.some((pattern) => pattern.test(key.title)) || seen.has(key.rotation)) continue;
        seen.add(key.rotation);
        decisions.push(...decideManagedKey(config, snapshot, now, key, newKeys));
      }
    }
  }

  // Rotations whose old key is no longer listed (removed by a person meanwhile) still finish what they started.
  for (const record of Object.values(snapshot.rotations).sort((a, b) => (a.id < b.id ? -1 : 1))) {
    if (seen.has(record.id) || record.step === 'done') continue;
    const kind = KEY_KINDS[record.kind];
    decisions.push(...steps(config, record, kind.unlistedTarget(record), now, kind.unlistedLifetime(config, record)));
  }
  return decisions;
}

/** A listed key is the new key of a rotation, under rotation itself, due, or not yet due. */
function decideManagedKey(config: KeyRotationConfig, snapshot: KeyRotationSnapshot, now: Date, key: ManagedKey, newKeys: ReadonlyMap<number, string>): Decision[] {
  const replacing = newKeys.get(key.keyId);
  if (replacing !== undefined) return [skip(key.target, key.rotation, `skip: new key of rotation ${replacing}`)];
  const record = snapshot.rotations[key.rotation];
  if (record) return steps(config, record, key.target, now, key.lifetime);
  const due = key.due(now);
  return due.rotate ? firstSteps(config, key, due.reason) : [skip(key.target, key.rotation, due.reason)];
}

/** The rotations under way by their new key's id: a listed key with that id is their new key, not one to rotate. */
function rotationsByNewKey(rotations: KeyRotationSnapshot['rotations']): Map<number, string> {
  const byNewKey = new Map<number, string>();
  for (const record of Object.values(rotations)) if (record.new_key_id !== null && record.step !== 'done') byNewKey.set(record.new_key_id, record.id);
  return byNewKey;
}

/**
 * A listed key that a configured entry manages, whichever its kind: what the loop of decideKeyRotation needs to
 * skip it, continue its rotation or start one.
 */
interface ManagedKey {
  /** The key's id on the forge. */
  readonly keyId: number;
  readonly title: string;
  readonly rotation: string;
  readonly target: string;
  /** The new key's lifetime (SSH keys); deploy keys never expire. */
  readonly lifetime: number | undefined;
  /** Where the new deploy key goes: the projects the old one is on, the first one first; none for SSH keys. */
  readonly projects: readonly DeployProject[];
  /** Whether a rotation starts now, and why, or why not. */
  due(now: Date): Due;
  /** What write_key records when the rotation starts; `path` is where the new private key goes. */
  startParams(): StartParams;
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
  listings(config: KeyRotationConfig, snapshot: KeyRotationSnapshot): Listing[];
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
  listings: (config, snapshot) =>
    config.deploy_keys.map((rule, index) => ({ titles: rule.titles, keys: (snapshot.deploy[index] ?? []).map((key) => managedDeployKey(config, rule, key)) })),
  unlistedTarget: (record) => `deploy key ${record.old_key_id} "${record.title}" (no longer listed)`,
  unlistedLifetime: () => undefined,
};

const KEY_KINDS: Readonly<Record<RotationRecord['kind'], KeyKind>> = { ssh: SSH_KEYS, deploy: DEPLOY_KEYS };

function unreadableSshKeys(entry: Exclude<SshOwnerSnapshot, { access: 'ok' }>): Decision {
  const reason = entry.access === 'needs_admin' ? "skip: another user's keys need an administrator's token" : `skip: no user ${entry.label} on the forge`;
  return { action: SKIP, target: `SSH keys of ${entry.label}`, key: `ssh-user:${entry.label}`, reason, params: {} };
}

function managedSshKey(config: KeyRotationConfig, rule: SshKeysRule, owner: SshOwner, key: ObservedSshKey): ManagedKey {
  const rotation = sshRotationId(owner.user_id, key.id);
  return {
    keyId: key.id,
    title: key.title,
    rotation,
    target: `${owner.username}'s SSH key ${key.id} "${key.title}"`,
    lifetime: rule.lifetime,
    projects: [],
    due: (now) => sshDue(rule, key, now),
    startParams: () => ({
      rotation,
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
    rotation,
    target: `deploy key ${key.id} "${key.title}" (${key.projects.map((p) => p.project).join(', ')})`,
    lifetime: undefined,
    projects: key.projects,
    due: (now) => {
      const due = deployDue(rule, key, now);
      // The new key is created on the first project the old one is on: with none, there is nowhere to create it.
      return key.projects.length === 0 ? { ...due, rotate: false } : due;
    },
    startParams: () => ({
      rotation,
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

/** A new rotation: every step up to verification, so one pass normally gets the new key in place. */
function firstSteps(config: KeyRotationConfig, key: ManagedKey, reason: string): Decision[] {
  const { rotation: id, target } = key;
  const start = key.startParams();
  return [
    { action: WRITE_KEY, target, key: stepKey(id, WRITE_KEY, 0), reason, params: start, details: [`new ${config.key_type} private key at ${start.path}`] },
    upload(id, target, 0, undefined, key.lifetime, key.projects),
    verify(id, target, 0, undefined),
    ...(config.on_rotate !== undefined ? [hook(config, config.on_rotate, id, target, 0, null)] : []),
  ];
}

/** The remaining steps of a rotation under way, from its record. */
function steps(config: KeyRotationConfig, record: RotationRecord, target: string, now: Date, lifetime: number | undefined): Decision[] {
  const { id, attempt, fingerprint } = record;
  const failed = record.last_error ? [`last attempt failed: ${record.last_error}`] : [];
  switch (record.step) {
    case 'planned': {
      const params: ActionParams = resumeParams(config, record);
      return [
        { action: WRITE_KEY, target, key: stepKey(id, WRITE_KEY, attempt), reason: `resume: write the new private key to ${record.path}`, params, details: failed },
        upload(id, target, attempt, undefined, lifetime, record.projects),
        verify(id, target, attempt, undefined),
        ...(config.on_rotate !== undefined ? [hook(config, config.on_rotate, id, target, attempt, null)] : []),
      ];
    }
    case 'key_written':
      return [
        { ...upload(id, target, attempt, fingerprint, lifetime, record.projects), details: failed },
        verify(id, target, attempt, fingerprint),
        ...(config.on_rotate !== undefined ? [hook(config, config.on_rotate, id, target, attempt, record.new_key_id)] : []),
      ];
    case 'uploaded':
      return [
        { ...verify(id, target, attempt, fingerprint), details: failed },
        ...(config.on_rotate !== undefined ? [hook(config, config.on_rotate, id, target, attempt, record.new_key_id)] : []),
      ];
    case 'verified':
    case 'hooked': {
      const decisions: Decision[] = [];
      const hookPending = record.step === 'verified' && config.on_rotate !== undefined;
      if (hookPending && config.on_rotate !== undefined) decisions.push({ ...hook(config, config.on_rotate, id, target, attempt, record.new_key_id), details: failed });
      decisions.push(removal(record, target, now, hookPending));
      return decisions;
    }
    case 'done':
      return [skip(target, id, `skip: rotated; old key ${record.old_key_id} removed ${record.removed_at ?? ''}`.trimEnd())];
  }
}

/** Removing the old key once the new one is verified, grace has passed and on_rotate (if any) has run. */
function removal(record: RotationRecord, target: string, now: Date, hookPending: boolean): Decision {
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
  return {
    action: REMOVE_OLD_KEY,
    target,
    key: stepKey(record.id, REMOVE_OLD_KEY, record.attempt),
    reason: `remove old key ${record.old_key_id}: grace ${grace} passed`,
    params: { rotation: record.id, old_key_id: record.old_key_id, after_hook: record.step === 'hooked' },
    details: [`new key ${record.new_key_id ?? '?'} ${record.fingerprint ?? ''} at ${record.path}`.replace('  ', ' ')],
  };
}

function resumeParams(config: KeyRotationConfig, record: RotationRecord): ActionParams {
  return {
    rotation: record.id,
    kind: record.kind,
    title: record.title,
    old_key_id: record.old_key_id,
    old_fingerprint: record.old_fingerprint,
    ...(record.owner ? { user_id: record.owner.user_id, username: record.owner.username, self: record.owner.self } : {}),
    projects: projectsParam(record.projects),
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

function upload(id: string, target: string, attempt: number, fingerprint: string | null | undefined, lifetime: number | undefined, projects: readonly DeployProject[]): Decision {
  const what = fingerprint ? `the new public key ${fingerprint}` : 'the new public key';
  const where =
    projects.length > 0
      ? `: create it on ${projects[0].project}${projects.length > 1 ? `, enable it on ${projects.slice(1).map((p) => p.project).join(', ')}` : ''}`
      : lifetime !== undefined
        ? `, expiring in ${durationText(lifetime)}`
        : '';
  return {
    action: UPLOAD_KEY,
    target,
    key: stepKey(id, UPLOAD_KEY, attempt),
    reason: `upload ${what}${where}`,
    params: { rotation: id, ...(lifetime !== undefined ? { lifetime_ms: lifetime } : {}) },
  };
}

function verify(id: string, target: string, attempt: number, fingerprint: string | null | undefined): Decision {
  return {
    action: VERIFY_KEY,
    target,
    key: stepKey(id, VERIFY_KEY, attempt),
    reason: `verify the forge lists ${fingerprint ?? 'the new key'}`,
    params: { rotation: id },
  };
}

function hook(config: KeyRotationConfig, command: string, id: string, target: string, attempt: number, newKeyId: number | null): Decision {
  return {
    action: RUN_ON_ROTATE,
    target,
    key: stepKey(id, RUN_ON_ROTATE, attempt),
    reason: `run on_rotate for new key ${newKeyId ?? '(once uploaded)'}`,
    params: { rotation: id, command, env: config.on_rotate_env.join(',') },
  };
}

function skip(target: string, id: string, reason: string): Decision {
  return { action: SKIP, target, key: id, reason, params: { rotation: id } };
}

/** Rotation, step and attempt: one attempt of one step runs once; a failed step is tried again as the next attempt. */
export function stepKey(id: string, step: string, attempt: number): string {
  return `${id}:${step}:${attempt}`;
}

/**
 * Pure: when the next pass should run sooner than the interval, namely when an old key's grace period ends (a
 * rotation verified this pass counts from now), so the old key goes on time and not up to an interval late.
 */
export function nextKeyRotationPass(config: KeyRotationConfig, snapshot: KeyRotationSnapshot, now: Date): Date | undefined {
  const decisions = decideKeyRotation(config, snapshot, now);
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
      const grace = record?.grace_ms ?? graceOfNew.get(rotation);
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
