import { join } from 'node:path';
import type { PolicyState } from '../../engine/policy';
import { readJson, readJsonObject } from '../../engine/json';
import type { TokenHolder } from './token-kind';
import type { Strategy } from './token-rotation.schema';

/**
 * Where a new token's value goes, as a decision resolved it: no value, which is read from the value file when the
 * delivery runs.
 */
export type ResolvedDelivery =
  | {
      readonly type: 'variable';
      readonly scope: 'projects' | 'groups';
      readonly place: string | number;
      readonly key: string;
      readonly environment_scope: string;
      readonly protected: boolean;
      readonly masked: boolean;
      readonly hidden: boolean;
    }
  | { readonly type: 'file'; readonly path: string }
  | { readonly type: 'hook'; readonly command: string; readonly env: readonly string[] };

/**
 * Each token rotation is a small state machine kept in the policy's Redis state, one record per old token:
 *
 *   sending → issued → delivered → done          (strategy rotate: the forge revoked the old token when it answered)
 *   sending → issued → delivered → (grace) → done (strategy overlap: the old token is revoked by the bot at the end)
 *        ↘ closed (from any step before done)
 *
 * `sending` is recorded before the rotate (or create) call, with the ids of the token's family the forge listed then:
 * a record still at `sending` afterwards is a call whose answer may be lost, and the next attempt looks for a token of
 * the family it does not know before it sends anything. `issued` once the value is in the value file (0600), which is
 * written before anything else happens after the answer; `delivered` once every delivery was written and read back.
 * The value itself is never in the record, an action's params, the ledger, the audit or a log: only the file has it.
 */

export const TOKEN_STEPS = ['sending', 'issued', 'delivered', 'done', 'closed'] as const;
export type TokenStep = (typeof TOKEN_STEPS)[number];

export interface TokenRecord {
  readonly id: string;
  readonly kind: string;
  readonly step: TokenStep;
  /** Attempts of a step so far; part of the deliver and revoke actions' keys. */
  readonly attempt: number;
  /** 1 for the first rotation of an old token; one more after one was closed. */
  readonly generation: number;
  readonly holder: TokenHolder;
  readonly name: string;
  readonly old_token_id: number;
  readonly family: string;
  readonly strategy: Strategy;
  readonly grace_ms: number;
  /** The expiry asked for the new token (`YYYY-MM-DD`). */
  readonly expires_at: string;
  /** The value file: `secrets_dir/<policy>/tokens/<rotation id>.json`. */
  readonly value_path: string;
  /** Where the new value goes, as the rotation started (no value: that is read from the value file). */
  readonly deliveries: readonly ResolvedDelivery[];
  /** The family's token ids the forge listed before the call was sent: a newer one is the answer's token. */
  readonly known_ids: readonly number[];
  readonly sent_at: string | null;
  readonly new_token_id: number | null;
  /** SHA-256 of the new value, for comparing what a variable or a file holds without reading the value out. */
  readonly value_sha256: string | null;
  /** The deliveries written and read back (their ids, see deliveryId). */
  readonly delivered: readonly string[];
  readonly delivered_at: string | null;
  readonly started_at: string;
  readonly finished_at: string | null;
  /** The last failure, for plan (never a value: errors name ids, keys and paths). */
  readonly last_error: string | null;
  readonly closed_reason: string | null;
}

/** Finished rotations are kept past the engine's ledger (90 days), as the key rotations are. */
const DONE_TTL_MS = 100 * 86_400_000;
const INDEX_KEY = 'token-rotations';

export function isTokenFinished(record: Pick<TokenRecord, 'step'>): boolean {
  return record.step === 'done' || record.step === 'closed';
}

export function tokenRotationId(kind: string, holder: TokenHolder, tokenId: number): string {
  return `${kind}-${String(holder.ref).toLowerCase()}-${tokenId}`;
}

export function valuePath(secretsDir: string, policy: string, id: string): string {
  return join(secretsDir, policy, 'tokens', `${id.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^\.+/, '_')}.json`);
}

export async function loadTokenRecord(state: PolicyState, id: string): Promise<TokenRecord | undefined> {
  const record = readJsonObject(await state.get(`token-rotation:${id}`)) as Partial<TokenRecord> | undefined;
  const valid =
    record !== undefined &&
    typeof record.id === 'string' &&
    typeof record.kind === 'string' &&
    (TOKEN_STEPS as readonly unknown[]).includes(record.step) &&
    typeof record.old_token_id === 'number' &&
    typeof record.value_path === 'string' &&
    Array.isArray(record.known_ids) &&
    Array.isArray(record.delivered);
  return valid ? (record as TokenRecord) : undefined;
}

/** `guard`: written before a call that makes a token, so it waits for Redis's replicas (a failover must not forget it). */
export async function saveTokenRecord(state: PolicyState, record: TokenRecord, guard = false): Promise<void> {
  if (guard) await state.setGuard(`token-rotation:${record.id}`, JSON.stringify(record));
  else
    await state.set(
      `token-rotation:${record.id}`,
      JSON.stringify(record),
      isTokenFinished(record) ? DONE_TTL_MS : undefined,
    );
  await markOpen(state, record.id, !isTokenFinished(record));
}

/** Ids of the token rotations not finished, so one whose old token left the listing still finishes. */
export async function openTokenRotations(state: PolicyState): Promise<string[]> {
  const value = readJson(await state.get(INDEX_KEY));
  return Array.isArray(value) ? value.filter((id): id is string => typeof id === 'string') : [];
}

async function markOpen(state: PolicyState, id: string, open: boolean): Promise<void> {
  const ids = new Set(await openTokenRotations(state));
  if (ids.has(id) === open) return;
  if (open) ids.add(id);
  else ids.delete(id);
  await state.set(INDEX_KEY, JSON.stringify([...ids].sort()));
}
