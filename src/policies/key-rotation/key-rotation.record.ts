import { join } from 'node:path';
import type { PolicyState } from '../../engine/policy';
import { KEY_TYPES, type KeyType } from './openssh';
import { readJson, readJsonObject } from '../../engine/json';

/**
 * Each rotation is a small state machine kept in the policy's Redis state, one record per old key:
 *
 *   planned → key_written → uploaded → verified → (hooked, with on_rotate) → done
 *        ↘ closed (from any step before done)
 *
 * `planned` is recorded before a key is generated; `key_written` once the private key is on disk, with the new key's
 * fingerprint, before anything is uploaded; `uploaded` with the forge's id of the new key (for a deploy key: created on
 * its first project; enabling it on the others follows); `verified` once the forge lists it (the grace period starts);
 * `hooked` once on_rotate succeeded; `done` once the old key is removed. A step that starts bumps `attempt`, which is
 * part of every action's key: the executor runs one attempt of a step once, and a step that failed or was interrupted
 * is tried again, as a new attempt, by the next pass. What makes a retry harmless is the record itself: the
 * fingerprint is known before the upload, so a retry adopts a key the forge already lists instead of making a second.
 *
 * The record is memory, not truth: it says what the bot did. A rotation whose premise the forge contradicts (its new
 * key deleted by a person, its old key id now another key, its user or projects gone) is `closed`, without touching
 * the forge, and the key is decided afresh by the next pass. A new rotation of the same old key is the record's next
 * `generation`: its actions have other keys than the closed one's, which the engine's ledger settled for good.
 */

export const STEPS = ['planned', 'key_written', 'uploaded', 'verified', 'hooked', 'done', 'closed'] as const;
export type Step = (typeof STEPS)[number];

/** Steps after which a rotation does nothing more: its old key may be decided afresh (a new generation). */
export function isFinished(record: Pick<RotationRecord, 'step'>): boolean {
  return record.step === 'done' || record.step === 'closed';
}

/** Records written before generations existed are the first generation. */
export function generationOf(record: Pick<RotationRecord, 'generation'>): number {
  return record.generation ?? 1;
}

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
  /** The credential kind's name (`ssh`, `deploy`): which file under kinds/ acts on it. */
  readonly kind: string;
  readonly step: Step;
  /** Steps started so far; part of each action's key. */
  readonly attempt: number;
  readonly title: string;
  readonly old_key_id: number;
  readonly old_fingerprint: string | null;
  /** SSH keys: whose. */
  readonly owner: SshOwner | null;
  /** A credential on one holder that is not a user (a project's or a group's token): the holder as its kind names it. */
  readonly holder?: string | number;
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
  /** 1 for the first rotation of an old key; one more for each rotation of it after one was closed. Absent: 1. */
  readonly generation?: number;
  /**
   * Deploy keys: the projects (refKey: id or lower-case path) the bot put the new key on, or found it on when verifying.
   * The new key missing from one of these while it still holds the old key means a person removed it. Absent in
   * records of earlier versions: see placedOn.
   */
  readonly new_key_on?: readonly string[];
  /**
   * Deploy keys: the forge's id of each project (refKey) the bot put the new key on, read when it did: a project is
   * followed by id, so a rename or a transfer is the same project (see the deploy kind's observeRotations).
   */
  readonly project_ids?: Readonly<Record<string, number>>;
  /**
   * Where the bot removes the old key (refKey, HOLDER for a credential on one holder), written before it sends the
   * removal: the old key gone there is the bot's own doing, not a person's revocation (see revokedOn).
   */
  readonly old_removed_on?: readonly string[];
  /** Where a person took the old key away during the rotation and the bot then took the new key away too (refKey, HOLDER). */
  readonly revoked_on?: readonly string[];
  /** When and why the rotation was closed (step `closed`). */
  readonly closed_at?: string | null;
  readonly closed_reason?: string | null;
}

/**
 * Finished rotations (done or closed) are kept this long, so plan can say what became of a key, and longer than the
 * engine's ledger keeps an action's key (90 days): a later rotation of the same old key then always knows its
 * generation, and so never decides a key the ledger still holds as settled. Open ones are kept until they finish.
 */
export const DONE_TTL_MS = 100 * 86_400_000;

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

/**
 * `secrets_dir/<policy>/<user or first project>-<old key id>`: stable, so every retry of a rotation uses one file, even
 * one whose record Redis lost. A closed rotation's file is moved aside (see closeRotation), so a later generation at
 * the same path never adopts a key a person deleted from the forge.
 */
export function keyPath(secretsDir: string, policy: string, owner: string, oldKeyId: number): string {
  return join(secretsDir, policy, `${owner.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^\.+/, '_')}-${oldKeyId}`);
}

export async function loadRecord(state: PolicyState, id: string): Promise<RotationRecord | undefined> {
  return parseRecord(await state.get(recordKey(id)));
}

export async function saveRecord(state: PolicyState, record: RotationRecord): Promise<void> {
  await state.set(recordKey(record.id), JSON.stringify(record), isFinished(record) ? DONE_TTL_MS : undefined);
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

/**
 * Whether a fingerprint the forge lists contradicts the one recorded: both known and not the same. A key text the
 * forge sent unreadable, or a fingerprint never recorded (records of earlier versions), contradicts nothing.
 */
export function differs(listed: string | null | undefined, recorded: string | null | undefined): boolean {
  return listed !== undefined && listed !== null && recorded !== undefined && recorded !== null && listed !== recorded;
}

/** What old_removed_on and revoked_on name for a credential on one holder (a user's SSH key). */
export const HOLDER = '(holder)';

/**
 * Why remove_old_key is stale when the old key is already gone from a holder and the bot did not remove it: a person took
 * it away during the rotation, and the next pass takes the new key away there too (docs/policies.md).
 */
export const REVOKED_FIRST =
  "a person took it away during the rotation, and a person's revocation wins: the next pass removes the new key there instead";

/** Projects by id or path as one key: the forge routes paths regardless of case. */
export function refKey(project: string | number): string {
  return String(project).toLowerCase();
}

/**
 * Where the bot put a deploy rotation's new key. Records of earlier versions did not say: their upload created the key on
 * the first project and enabled it on all the others before recording `uploaded`.
 */
export function placedOn(record: RotationRecord): Set<string> {
  if (record.new_key_on) return new Set(record.new_key_on);
  const index = STEPS.indexOf(record.step);
  if (index >= STEPS.indexOf('uploaded')) return new Set(record.projects.map((p) => refKey(p.project)));
  return new Set(record.new_key_id !== null && record.projects[0] ? [refKey(record.projects[0].project)] : []);
}

/** A damaged record reads as none only when it cannot be trusted at all; it is never guessed into a later step. */
export function parseRecord(text: string | undefined): RotationRecord | undefined {
  const record = readJsonObject(text) as Partial<Record<keyof RotationRecord, unknown>> | undefined;
  if (!record) return undefined;
  const valid =
    typeof record.id === 'string' &&
    typeof record.kind === 'string' &&
    (STEPS as readonly unknown[]).includes(record.step) &&
    typeof record.attempt === 'number' &&
    typeof record.title === 'string' &&
    typeof record.old_key_id === 'number' &&
    typeof record.path === 'string' &&
    (KEY_TYPES as readonly unknown[]).includes(record.key_type) &&
    typeof record.grace_ms === 'number' &&
    typeof record.started_at === 'string' &&
    Array.isArray(record.projects) &&
    (record.holder === undefined || typeof record.holder === 'string' || typeof record.holder === 'number') &&
    (record.generation === undefined || (typeof record.generation === 'number' && record.generation >= 1)) &&
    refList(record.new_key_on) &&
    refList(record.old_removed_on) &&
    refList(record.revoked_on) &&
    (record.project_ids === undefined ||
      (typeof record.project_ids === 'object' &&
        record.project_ids !== null &&
        Object.values(record.project_ids).every(Number.isInteger)));
  return valid ? (record as RotationRecord) : undefined;
}

/** An optional list of refKeys, as a record keeps it. */
function refList(value: unknown): boolean {
  return value === undefined || (Array.isArray(value) && value.every((ref) => typeof ref === 'string'));
}
