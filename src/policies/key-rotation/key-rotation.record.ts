import { join } from 'node:path';
import type { PolicyState } from '../../engine/policy';
import { KEY_TYPES, type KeyType } from './openssh';
import { readJson, readJsonObject } from '../../engine/policy-state';

/**
 * Each rotation is a small state machine kept in the policy's Redis state, one record per old key:
 *
 *   planned → key_written → uploaded → verified → (hooked, with on_rotate) → done
 *
 * `planned` is recorded before a key is generated; `key_written` once the private key is on disk, with the new key's
 * fingerprint, before anything is uploaded; `uploaded` with the forge's id of the new key; `verified` once the forge
 * lists it (the grace period starts); `hooked` once on_rotate succeeded; `done` once the old key is removed. A step
 * that starts bumps `attempt`, which is part of every action's key: the executor runs one attempt of a step once,
 * and a step that failed or was interrupted is tried again, as a new attempt, by the next pass. What makes a retry
 * harmless is the record itself: the fingerprint is known before the upload, so a retry adopts a key the forge
 * already lists instead of making a second one.
 */

export const STEPS = ['planned', 'key_written', 'uploaded', 'verified', 'hooked', 'done'] as const;
export type Step = (typeof STEPS)[number];

export interface SshOwner {
  readonly user_id: number;
  readonly username: string;
  /** The token's own user: `/user/keys`; anyone else: `/users/:id/keys` with an administrator's token. */
  readonly self: boolean;
}

export interface DeployProject {
  /** As configured (id or full path); the forge takes either. */
  readonly project: string | number;
  /** Whether the old key could push there; the new key gets the same. */
  readonly can_push: boolean;
}

export interface RotationRecord {
  readonly id: string;
  readonly kind: 'ssh' | 'deploy';
  readonly step: Step;
  /** Steps started so far; part of each action's key. */
  readonly attempt: number;
  readonly title: string;
  readonly old_key_id: number;
  readonly old_fingerprint: string | null;
  /** SSH keys: whose. */
  readonly owner: SshOwner | null;
  /** Deploy keys: the projects the old key was on, the first one first. */
  readonly projects: readonly DeployProject[];
  /** The private key file; the public key is beside it with `.pub`. */
  readonly path: string;
  readonly key_type: KeyType;
  /** The grace period this rotation started with. */
  readonly grace_ms: number;
  /** SSH keys: the new key's lifetime this rotation started with, for an upload whose policy entry no longer matches. */
  readonly lifetime_ms: number | null;
  /** Set, with the file written, before the upload. */
  readonly fingerprint: string | null;
  readonly new_key_id: number | null;
  readonly expires_at: string | null;
  readonly started_at: string;
  readonly verified_at: string | null;
  readonly removed_at: string | null;
  /** The last failure of a step, for plan (never holds key material: errors name paths and fingerprints only). */
  readonly last_error: string | null;
}

/** Finished rotations are kept this long, so plan can say a key was rotated; open ones are kept until they finish. */
export const DONE_TTL_MS = 30 * 86_400_000;

const INDEX_KEY = 'rotations';

export function recordKey(id: string): string {
  return `rotation:${id}`;
}

export function sshRotationId(userId: number, keyId: number): string {
  return `ssh-${userId}-${keyId}`;
}

export function deployRotationId(keyId: number): string {
  return `deploy-${keyId}`;
}

/** `secrets_dir/<policy>/<user or first project>-<old key id>`: stable, so every retry of a rotation uses one file. */
export function keyPath(secretsDir: string, policy: string, owner: string, oldKeyId: number): string {
  return join(secretsDir, policy, `${owner.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^\.+/, '_')}-${oldKeyId}`);
}

export async function loadRecord(state: PolicyState, id: string): Promise<RotationRecord | undefined> {
  return parseRecord(await state.get(recordKey(id)));
}

export async function saveRecord(state: PolicyState, record: RotationRecord): Promise<void> {
  await state.set(recordKey(record.id), JSON.stringify(record), record.step === 'done' ? DONE_TTL_MS : undefined);
}

/** Ids of the rotations not yet done, so one whose old key vanished from the forge still finishes. */
export async function openRotations(state: PolicyState): Promise<string[]> {
  const value = readJson(await state.get(INDEX_KEY));
  return Array.isArray(value) ? value.filter((id): id is string => typeof id === 'string') : [];
}

export async function markOpen(state: PolicyState, id: string, open: boolean): Promise<void> {
  const ids = new Set(await openRotations(state));
  if (ids.has(id) === open) return;
  if (open) ids.add(id);
  else ids.delete(id);
  await state.set(INDEX_KEY, JSON.stringify([...ids].sort()));
}

/** A damaged record reads as none only when it cannot be trusted at all; it is never guessed into a later step. */
export function parseRecord(text: string | undefined): RotationRecord | undefined {
  const record = readJsonObject(text) as Partial<Record<keyof RotationRecord, unknown>> | undefined;
  if (!record) return undefined;
  const valid =
    typeof record.id === 'string' &&
    (record.kind === 'ssh' || record.kind === 'deploy') &&
    (STEPS as readonly unknown[]).includes(record.step) &&
    typeof record.attempt === 'number' &&
    typeof record.title === 'string' &&
    typeof record.old_key_id === 'number' &&
    typeof record.path === 'string' &&
    (KEY_TYPES as readonly unknown[]).includes(record.key_type) &&
    typeof record.grace_ms === 'number' &&
    typeof record.started_at === 'string' &&
    Array.isArray(record.projects);
  return valid ? (record as RotationRecord) : undefined;
}
