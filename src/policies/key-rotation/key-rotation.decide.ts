import { type Decision, SKIP } from '../../engine/policy';
import type { CredentialKind, CredentialKinds, KindView, ManagedKey } from './credential-kind';
import { withdrawals } from './key-rotation.harms';
import {
  enables,
  removeAgain,
  hook,
  placeNewKey,
  type Rotation,
  rotationOf,
  skip,
  startParams,
  stepKey,
  VERIFY_KEY,
  WRITE_KEY,
} from './key-rotation.decisions';
import { differs, generationOf, isFinished, keyPath, type RotationRecord } from './key-rotation.record';
import { decideRotation, holdersOf, rotationFrom } from './key-rotation.steps';
import type { KeyRotationConfig, RotationConfig } from './key-rotation.schema';
import { CREDENTIAL_KINDS } from './kinds';
import type { DeployKeysFacts } from './kinds/deploy-keys/deploy-keys';
import type { SshKeysFacts } from './kinds/ssh-keys/ssh-keys';

export {
  CLOSE_ROTATION,
  ENABLE_KEY,
  REMOVE_OLD_KEY,
  RUN_ON_ROTATE,
  UPLOAD_KEY,
  VERIFY_KEY,
  WRITE_KEY,
} from './key-rotation.decisions';
export { REMOVE_NEW_KEY } from './key-rotation.harms';
export type { ObservedDeployKey } from './kinds/deploy-keys/deploy-keys';
export type { ObservedSshKey, SshOwnerSnapshot } from './kinds/ssh-keys/ssh-keys';

/**
 * Deciding what to do with each managed credential, whatever its kind: pure, no I/O, no clock. A key not yet under
 * rotation is rotated or skipped with its reason; a key under rotation gets the remaining steps of its state machine
 * (key-rotation.steps.ts, over the states of key-rotation.record.ts), each a separate action keyed by rotation,
 * generation, step and attempt. Every step re-reads the record before acting, so a step decided in the same pass after
 * one that failed does nothing.
 *
 * The record says what the bot did; the snapshot says what the forge holds now, and wins. A rotation goes on only while
 * the forge still shows its premise (its kind says: the old key as recorded, the new key where the bot put it, its
 * holders); otherwise it is closed, and the key is decided afresh by the next pass.
 */

/** What every kind's facts sit beside: the records of open rotations and of rotations of listed keys, by id. */
export interface RotationSnapshot {
  readonly rotations: Readonly<Record<string, RotationRecord>>;
}

/** The snapshot of this build's kinds. */
export type KeyRotationSnapshot = RotationSnapshot & SshKeysFacts & DeployKeysFacts;

export function decideKeyRotation(config: KeyRotationConfig, snapshot: KeyRotationSnapshot, now: Date): Decision[] {
  return decideRotations(CREDENTIAL_KINDS, config, snapshot, now);
}

export function decideRotations(
  kinds: CredentialKinds,
  config: RotationConfig,
  snapshot: RotationSnapshot,
  now: Date,
): Decision[] {
  const decisions: Decision[] = [];
  const views = new Map(
    kinds
      .entries()
      .map(([section, kind]) => [kind.name, { kind, view: kind.view(rulesOf(config, section), snapshot, now) }]),
  );
  const newKeys = newKeysOf(snapshot);
  // A key matched by two entries is decided once, by the first.
  const seen = new Set<string>();
  for (const { kind, view } of views.values()) {
    for (const listing of view.listings()) {
      if ('unreadable' in listing) {
        decisions.push({ action: SKIP, ...listing.unreadable, params: {} });
        continue;
      }
      // In id order, so the decisions do not depend on the order the forge listed the keys in.
      for (const key of [...listing.keys].sort((a, b) => a.keyId - b.keyId)) {
        if (!listing.titles.some((pattern) => pattern.test(key.title)) || seen.has(key.rotation)) continue;
        seen.add(key.rotation);
        decisions.push(...decideManagedKey(config, snapshot, newKeys, kind, view, now, key));
      }
    }
  }

  // Rotations whose old key is not listed this pass (removed by a person, or its holders unread or gone) are looked
  // at too: one whose premise still holds finishes what it started, the others are closed or wait.
  for (const record of Object.values(snapshot.rotations).sort((a, b) => (a.id < b.id ? -1 : 1))) {
    const of = views.get(record.kind);
    if (seen.has(record.id) || isFinished(record) || !of) continue;
    const { target, lifetime } = of.view.unlisted(record);
    decisions.push(...decideRotation(config, of.kind, of.view, record, target, now, lifetime));
  }
  return decisions;
}

/** A kind's entries, as the schema read them under its section. */
export function rulesOf(config: RotationConfig, section: string): unknown[] {
  const rules = config[section];
  return Array.isArray(rules) ? rules : [];
}

/**
 * The open rotations by kind and the id of their new key, to tell a rotation's new key from a key to rotate: each kind's
 * keys are its own (a forge may number SSH and deploy keys apart, and a key whose text cannot be read has no fingerprint
 * to tell them by).
 */
function newKeysOf(snapshot: RotationSnapshot): Map<string, RotationRecord> {
  const newKeys = new Map<string, RotationRecord>();
  for (const record of Object.values(snapshot.rotations))
    if (record.new_key_id !== null && !isFinished(record))
      newKeys.set(newKeyRef(record.kind, record.new_key_id), record);
  return newKeys;
}

function newKeyRef(kind: string, id: number): string {
  return `${kind}:${id}`;
}

/** A listed key is the new key of a rotation, under rotation itself, due, or not yet due. */
function decideManagedKey(
  config: RotationConfig,
  snapshot: RotationSnapshot,
  newKeys: ReadonlyMap<string, RotationRecord>,
  kind: CredentialKind,
  view: KindView,
  now: Date,
  key: ManagedKey,
): Decision[] {
  // The rotation a listed key is the new key of: its recorded id, and its fingerprint unless either is unknown.
  const replacing = newKeys.get(newKeyRef(kind.name, key.keyId));
  if (replacing && !differs(key.fingerprint, replacing.fingerprint))
    return [skip(key.target, key.rotation, `skip: new key of rotation ${replacing.id}`)];
  const record = snapshot.rotations[key.rotation];
  if (record && !isFinished(record)) return decideRotation(config, kind, view, record, key.target, now, key.lifetime);
  // No rotation under way: what the forge lists decides. A finished one's old key still listed (a project that gained
  // it after it was done, a closed rotation's) is rotated again as the next generation, with a new key.
  const generation = record ? generationOf(record) + 1 : 1;
  if (!key.due.rotate)
    return [skip(key.target, key.rotation, `${key.due.reason}${record ? finishedNote(record) : ''}`)];
  const leftover =
    record?.step === 'closed'
      ? closedLeftover(view, record, key.target)
      : record
        ? doneAgain(view, record, key.target)
        : [];
  return leftover.length > 0 ? leftover : firstSteps(config, kind, key, generation);
}

/**
 * A done rotation's old key listed again (a person enabled it on a project since): its new key, still live, goes there
 * too and the old key leaves, as during the rotation. Never a second new key while the first may be live.
 */
function doneAgain(view: KindView, record: RotationRecord, target: string): Decision[] {
  if (record.new_key_id === null) return [];
  const premise = view.premise(record);
  const rotation = rotationFrom(record, target);
  if ('oldOn' in premise && premise.oldOn !== null && premise.oldOn.length > 0 && premise.newOn.size > 0) {
    return [
      ...enables(rotation, premise.oldOn, premise.newOn),
      removeAgain(rotation, record, premise.oldOn, premise.unreadable.length === 0),
    ];
  }
  const leftover = view.leftover(record);
  if (leftover.from.length === 0 && leftover.outOfSight === undefined) return [];
  const unseen = leftover.outOfSight ? `: ${leftover.outOfSight}` : '';
  return [
    skip(
      target,
      record.id,
      `skip: not rotated again while new key ${record.new_key_id} of rotation ${record.id}, done, may still be live${unseen}`,
    ),
  ];
}

/**
 * Never a new key while an earlier new key of the same rotation may still be live: a closed rotation's key still
 * listed (closed by an earlier version, or enabled again by a person) is withdrawn first, and one that may be where
 * the token cannot see is named until it can be seen.
 */
function closedLeftover(view: KindView, record: RotationRecord, target: string): Decision[] {
  const leftover = view.leftover(record);
  if (leftover.from.length === 0 && leftover.outOfSight === undefined) return [];
  const why = `rotation ${record.id} was closed (${record.closed_reason ?? 'no reason recorded'})`;
  return [
    ...withdrawals(rotationFrom(record, target), record, leftover, why),
    skip(
      target,
      record.id,
      `skip: not rotated again while new key ${record.new_key_id ?? '?'} of ${why} may still be live`,
    ),
  ];
}

/** What a finished rotation of a key that is listed again adds to its skip, so plan does not hide it. */
function finishedNote(record: RotationRecord): string {
  const when = (at: string | null | undefined) => (at ? ` ${at}` : '');
  if (record.step === 'closed')
    return ` (rotation ${record.id} closed${when(record.closed_at)}: ${record.closed_reason ?? 'no reason recorded'})`;
  return ` (rotation ${record.id} was done${when(record.removed_at)}, yet the key is listed again)`;
}

/** A new rotation: every step up to verification, so one pass normally gets the new key in place. */
function firstSteps(config: RotationConfig, kind: CredentialKind, key: ManagedKey, generation: number): Decision[] {
  const rotation: Rotation = {
    id: key.rotation,
    generation,
    attempt: 0,
    target: key.target,
    oldKeyId: key.keyId,
    oldFingerprint: key.fingerprint ?? null,
    owner: key.owner,
    holder: key.holder,
  };
  const start = startParams(rotation, {
    kind: kind.name,
    title: key.title,
    projects: key.projects,
    path: keyPath(config.secrets_dir, config.name, key.holderName, key.keyId),
    secretsDir: config.secrets_dir,
    keyType: config.key_type,
    grace: key.grace,
    lifetime: key.lifetime,
  });
  const details = [
    `new ${config.key_type} private key at ${start.path}`,
    ...(generation > 1 ? [`generation ${generation} of rotation ${key.rotation}`] : []),
  ];
  return [
    {
      action: WRITE_KEY,
      target: key.target,
      key: stepKey(rotation, WRITE_KEY),
      reason: key.due.reason,
      params: start,
      details,
    },
    ...placeNewKey(rotation, undefined, key.lifetime, key.projects),
    ...(config.on_rotate !== undefined
      ? [
          hook(
            config.on_rotate,
            config.on_rotate_env,
            rotation,
            null,
            holdersOf(kind, key.projects, key.unreadable ?? []),
          ),
        ]
      : []),
  ];
}

/**
 * Pure: when the next pass should run sooner than the interval, namely when an old key's grace period ends (a
 * rotation verified this pass counts from now), so the old key goes on time and not up to an interval late.
 */
export function nextKeyRotationPass(
  config: KeyRotationConfig,
  snapshot: KeyRotationSnapshot,
  now: Date,
  decisions?: readonly Decision[],
): Date | undefined {
  return nextRotationPass(snapshot, now, decisions ?? decideKeyRotation(config, snapshot, now));
}

export function nextRotationPass(
  snapshot: RotationSnapshot,
  now: Date,
  decisions: readonly Decision[],
): Date | undefined {
  const graceOfNew = new Map<string, number>();
  for (const decision of decisions) {
    const rotation = rotationOf(decision);
    if (decision.action === WRITE_KEY && rotation !== undefined && typeof decision.params.grace_ms === 'number')
      graceOfNew.set(rotation, decision.params.grace_ms);
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
    } else if (
      decision.action === SKIP &&
      record?.verified_at &&
      (record.step === 'verified' || record.step === 'hooked')
    ) {
      consider(Date.parse(record.verified_at) + record.grace_ms);
    }
  }
  // A minute late, so replicas with clocks a little apart all find the grace over.
  return earliest === undefined ? undefined : new Date(earliest + 60_000);
}
