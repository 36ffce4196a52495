import type { Decision } from '../../engine/policy';
import type { CredentialKind, KindView, Places } from './credential-kind';
import { outOfSight, revokedRepairs, withdrawals } from './key-rotation.harms';
import {
  close,
  enables,
  hook,
  type Holders,
  placeNewKey,
  premiseParams,
  projectsParam,
  REMOVE_OLD_KEY,
  type Rotation,
  skip,
  startParams,
  stepKey,
  verify,
  WRITE_KEY,
} from './key-rotation.decisions';
import { generationOf, type RotationRecord } from './key-rotation.record';
import type { RotationConfig } from './key-rotation.schema';
import { durationText } from './key-rotation.timing';

/**
 * The remaining steps of a rotation under way, over the states of key-rotation.record.ts. Pure, like
 * key-rotation.decide.ts, which hands it every open rotation.
 */

/**
 * A rotation under way: closed when the forge contradicts what it rests on, waiting when the forge could not be read,
 * else its remaining steps.
 */
export function decideRotation(
  config: RotationConfig,
  kind: CredentialKind,
  view: KindView,
  record: RotationRecord,
  target: string,
  now: Date,
  lifetime: number | undefined,
): Decision[] {
  const rotation = rotationFrom(record, target);
  const premise = view.premise(record);
  if ('close' in premise) return [close(rotation, premise.close)];
  if ('wait' in premise)
    return [
      skip(target, record.id, premise.wait),
      ...(premise.outOfSight ? [outOfSight(rotation, record.id, premise.outOfSight)] : []),
    ];
  if ('withdraw' in premise) {
    // Closed once the key is gone: withdrawn first, so no later generation makes a second live key.
    return [
      ...withdrawals(rotation, record, premise, premise.withdraw),
      skip(
        target,
        record.id,
        `skip: closed once new key ${record.new_key_id ?? '?'} is withdrawn: ${premise.withdraw}`,
      ),
    ];
  }
  const repairs = revokedRepairs(rotation, record, premise.revoked);
  // A person took the old key away from every holder that had the new key: nothing goes on but the new key's leaving.
  if (repairs.length > 0 && (premise.oldOn === null || premise.oldOn.length === 0)) {
    return [
      ...repairs,
      skip(
        target,
        record.id,
        `skip: the rotation ends once new key ${record.new_key_id ?? '?'} has left every holder that lost old key ${record.old_key_id}`,
      ),
    ];
  }
  return [...repairs, ...steps(config, kind, record, rotation, now, lifetime, premise)];
}

/**
 * The remaining steps of a rotation whose premise holds, from its record and where its keys are now (see Places):
 * the new key goes where the old key is, and the old key goes once the new one is verified there.
 */
function steps(
  config: RotationConfig,
  kind: CredentialKind,
  record: RotationRecord,
  rotation: Rotation,
  now: Date,
  lifetime: number | undefined,
  places: Places,
): Decision[] {
  const oldOn = places.oldOn ?? [];
  const { fingerprint } = record;
  const { target } = rotation;
  const failed = record.last_error ? [`last attempt failed: ${record.last_error}`] : [];
  const withFailure = (decisions: Decision[]): Decision[] =>
    decisions.map((decision, index) =>
      index === 0 ? { ...decision, details: [...(decision.details ?? []), ...failed] } : decision,
    );
  const holders = holdersOf(
    kind,
    oldOn,
    places.unreadable.map((p) => p.project),
  );
  const hookStep = (newKeyId: number | null) =>
    config.on_rotate !== undefined ? [hook(config.on_rotate, config.on_rotate_env, rotation, newKeyId, holders)] : [];
  switch (record.step) {
    case 'planned': {
      // Where the old key is now: a rotation planned before a person changed the projects starts from what is there.
      const params = startParams(rotation, {
        kind: record.kind,
        title: record.title,
        projects: oldOn.length > 0 ? oldOn : record.projects,
        path: record.path,
        secretsDir: config.secrets_dir,
        keyType: config.key_type,
        grace: record.grace_ms,
        lifetime: record.lifetime_ms,
      });
      return [
        {
          action: WRITE_KEY,
          target,
          key: stepKey(rotation, WRITE_KEY),
          reason: `resume: write the new private key to ${record.path}`,
          params,
          details: failed,
        },
        ...placeNewKey(rotation, undefined, lifetime, oldOn),
        ...hookStep(null),
      ];
    }
    case 'key_written':
      return withFailure([...placeNewKey(rotation, fingerprint, lifetime, oldOn), ...hookStep(record.new_key_id)]);
    case 'uploaded':
      return withFailure([
        ...enables(rotation, oldOn, places.newOn),
        verify(rotation, fingerprint, oldOn),
        ...hookStep(record.new_key_id),
      ]);
    case 'verified':
    case 'hooked': {
      const decisions: Decision[] = [...enables(rotation, oldOn, places.newOn)];
      const hookPending = record.step === 'verified' && config.on_rotate !== undefined;
      if (hookPending && config.on_rotate !== undefined)
        decisions.push({
          ...hook(config.on_rotate, config.on_rotate_env, rotation, record.new_key_id, holders),
          details: failed,
        });
      decisions.push(removal(kind, record, rotation, now, hookPending, places));
      return decisions;
    }
    case 'done':
      return [
        skip(
          target,
          record.id,
          `skip: rotated; old key ${record.old_key_id} removed ${record.removed_at ?? ''}`.trimEnd(),
        ),
      ];
    case 'closed':
      return [skip(target, record.id, `skip: rotation closed: ${record.closed_reason ?? 'no reason recorded'}`)];
  }
}

/** Removing the old key once the new one is verified, grace has passed and on_rotate (if any) has run. */
function removal(
  kind: CredentialKind,
  record: RotationRecord,
  rotation: Rotation,
  now: Date,
  hookPending: boolean,
  places: Places,
): Decision {
  const { target } = rotation;
  const { unreadable } = places;
  const oldOn = places.oldOn ?? [];
  const several = kind.holders === 'several';
  const verifiedAt = Date.parse(record.verified_at ?? '');
  const until = verifiedAt + record.grace_ms;
  const grace = durationText(record.grace_ms);
  if (Number.isNaN(verifiedAt))
    return skip(target, record.id, `skip: keep old key ${record.old_key_id}: the new key has no verification time`);
  if (now.getTime() < until) {
    return skip(
      target,
      record.id,
      `skip: keep old key ${record.old_key_id} until ${new Date(until).toISOString()} (grace ${grace})`,
    );
  }
  if (hookPending) {
    // Consumers of the key may not have the new one yet; removing the old one now could lock them out.
    return skip(target, record.id, `skip: keep old key ${record.old_key_id} until on_rotate succeeds`);
  }
  const notRead = unreadable.map((p) => p.project).join(', ');
  if (oldOn.length === 0 && unreadable.length > 0) {
    // Nothing to remove where the keys could be read, and a project that could not be read may still hold the old key:
    // the rotation stays open, so that project gets the new key and loses the old one once it can be read again.
    return skip(
      target,
      record.id,
      `skip: old key ${record.old_key_id} is on none of the projects read; ${notRead} could not be read and may still hold it`,
    );
  }
  const where = oldOn.length > 0 ? ` from ${oldOn.map((p) => p.project).join(', ')}` : '';
  // An old key no longer there is not called removed: the step only records that the rotation is done.
  const reason =
    several && oldOn.length === 0
      ? `finish: old key ${record.old_key_id} is on none of the selected projects any more; new key ${record.new_key_id ?? '?'} stays`
      : places.oldOn === null
        ? `finish: old key ${record.old_key_id} is gone already (removed by an earlier attempt of this step); new key ${record.new_key_id ?? '?'} stays`
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
      ...(several ? { projects: projectsParam(oldOn), complete: unreadable.length === 0 } : {}),
    },
    details: [
      `new key ${record.new_key_id ?? '?'} ${record.fingerprint ?? ''} at ${record.path}`.replace('  ', ' '),
      // A project that could not be read is never written to: its old key stays until it can be read again.
      ...(unreadable.length > 0 ? [`not read this pass, left as they are: ${notRead}`] : []),
    ],
  };
}

export function rotationFrom(record: RotationRecord, target: string): Rotation {
  return {
    id: record.id,
    generation: generationOf(record),
    attempt: record.attempt,
    target,
    oldKeyId: record.old_key_id,
    oldFingerprint: record.old_fingerprint,
    owner: record.owner,
    holder: record.holder,
  };
}

/** The holders on_rotate waits for, of a kind whose key sits on several; none for a key on one holder. */
export function holdersOf(
  kind: CredentialKind,
  holding: readonly { project: string | number }[],
  unreadable: readonly (string | number)[],
): Holders | undefined {
  return kind.holders === 'several' ? { holding: holding.map((p) => p.project), unreadable } : undefined;
}
