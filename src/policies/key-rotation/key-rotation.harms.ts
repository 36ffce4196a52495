import { type Decision, type HarmKind, SKIP } from '../../engine/policy';
import type { Holder, Leftover } from './credential-kind';
import { premiseParams, type Rotation, stepKey } from './key-rotation.decisions';
import { refKey, type RotationRecord } from './key-rotation.record';

/**
 * The bot's own harm in key_rotation (docs/architecture.md, "Own harm first"): a new key it made that is live where it
 * should not be. Both are mended by taking that key away (remove_new_key), first at every pass and never parked.
 */

/** A person took the old key away from a holder during the rotation while the new key was there: it leaves too. */
export const KEY_LEFT_AFTER_REVOCATION: HarmKind = {
  kind: 'key_left_after_revocation',
  says: 'a new key left on a holder that a person took the old key away from during its rotation',
};

/**
 * A new key no open rotation vouches for: its rotation is contradicted by the forge (it is withdrawn before the
 * rotation closes, and before any new key is made), or the projects it was put on are out of the token's sight.
 */
export const KEY_UNACCOUNTED: HarmKind = {
  kind: 'key_unaccounted',
  says: "a new key of the bot's that no open rotation vouches for: its rotation contradicted, or where it is out of the token's sight",
};

export const KEY_ROTATION_HARMS: readonly HarmKind[] = [KEY_LEFT_AFTER_REVOCATION, KEY_UNACCOUNTED];

export const REMOVE_NEW_KEY = 'remove_new_key';

/** Why a new key is taken away: a person's revocation of the old key, or a rotation that no longer vouches for it. */
export type Removal = 'revoked' | 'withdrawn';

/** The new key leaves each holder a person took the old key away from (for a credential on one holder, the holder). */
export function revokedRepairs(rotation: Rotation, record: RotationRecord, holders: readonly Holder[]): Decision[] {
  return holders.map((holder) => {
    const where = holder.project ?? rotation.owner?.username ?? String(rotation.holder ?? '?');
    return removeNewKey(
      rotation,
      record,
      holder,
      'revoked',
      `remove new key ${record.new_key_id ?? '?'} from ${where}: a person took old key ${rotation.oldKeyId} away from it during the rotation, and a person's revocation wins`,
    );
  });
}

/**
 * A contradicted rotation's new key leaves wherever it is still listed, before the rotation closes; where it may be
 * and cannot be seen, it is named as open harm until it can be.
 */
export function withdrawals(rotation: Rotation, record: RotationRecord, leftover: Leftover, why: string): Decision[] {
  const decisions = leftover.from.map((holder) =>
    removeNewKey(
      rotation,
      record,
      holder,
      'withdrawn',
      `withdraw new key ${record.new_key_id ?? '?'}${holder.project !== undefined ? ` from ${holder.project}` : ''}: ${why}; no rotation vouches for it any more`,
    ),
  );
  if (leftover.outOfSight)
    decisions.push(outOfSight(rotation, record.id, `${leftover.outOfSight}; withdrawn once seen (${why})`));
  return decisions;
}

/** A new key that may be live where the token cannot see: named as the bot's open harm, mended once it is seen. */
export function outOfSight(rotation: Rotation, id: string, text: string): Decision {
  return {
    action: SKIP,
    target: rotation.target,
    key: `${id}:out-of-sight`,
    reason: `skip: ${text}`,
    params: { rotation: id },
    repairs: KEY_UNACCOUNTED.kind,
  };
}

function removeNewKey(
  rotation: Rotation,
  record: RotationRecord,
  holder: Holder,
  why: Removal,
  reason: string,
): Decision {
  return {
    action: REMOVE_NEW_KEY,
    target: rotation.target,
    key: stepKey(rotation, `${REMOVE_NEW_KEY}:${holder.project !== undefined ? refKey(holder.project) : 'holder'}`),
    reason,
    params: {
      ...premiseParams(rotation),
      new_key_id: record.new_key_id,
      fingerprint: record.fingerprint,
      why,
      ...(holder.project !== undefined ? { project: holder.project } : {}),
    },
    repairs: why === 'revoked' ? KEY_LEFT_AFTER_REVOCATION.kind : KEY_UNACCOUNTED.kind,
  };
}
