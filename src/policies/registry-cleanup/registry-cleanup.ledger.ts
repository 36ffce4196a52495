/**
 * The policy's record of bulk calls, one entry per repository in the policy's Redis state. It keeps the forge's
 * once-an-hour rule across passes, restarts and replicas (observe reads it into the snapshot, so decide stays pure),
 * and counts a cleanup's follow-up calls.
 */

import { readJsonObject } from '../../engine/json';

/** The forge refuses a second bulk deletion of a repository within this long of the last (answered 400, not 429). */
export const BULK_CALL_INTERVAL_MS = 60 * 60 * 1000;

/** Follow-ups are asked for this long after the hour, so replicas' clocks a little apart still find it over. */
export const FOLLOW_UP_MARGIN_MS = 60 * 1000;

export interface BulkLedgerEntry {
  /** The last bulk call this policy made (or found made, from the forge's refusal), ISO 8601. */
  readonly last_call_at: string;
  /** Calls after the first in the open cleanup. */
  readonly follow_ups: number;
  /** When the open cleanup made its first call; null once a pass found nothing left to delete. */
  readonly cleanup_started_at: string | null;
  /** Tags in the repository at the cleanup's first call, for the report. */
  readonly tags_before: number;
  /** Tags the preview planned to delete at the cleanup's first call. */
  readonly planned: number;
}

export function ledgerKey(repositoryId: number): string {
  return `bulk:${repositoryId}`;
}

/** When the forge accepts the next bulk call after `entry`, in milliseconds. */
export function nextCallAllowedMs(entry: BulkLedgerEntry): number {
  return Date.parse(entry.last_call_at) + BULK_CALL_INTERVAL_MS;
}

/**
 * An entry without a readable time of its last call reads as none. Other damaged fields fall back to "no open
 * cleanup", so the time, and with it the hourly limit, is kept whatever else was lost.
 */
export function parseLedger(text: string | undefined): BulkLedgerEntry | undefined {
  const record = readJsonObject(text);
  if (!record) return undefined;
  const lastCallAt = record.last_call_at;
  if (typeof lastCallAt !== 'string' || Number.isNaN(Date.parse(lastCallAt))) return undefined;
  const started = record.cleanup_started_at;
  return {
    last_call_at: lastCallAt,
    follow_ups: count(record.follow_ups),
    cleanup_started_at: typeof started === 'string' && !Number.isNaN(Date.parse(started)) ? started : null,
    tags_before: count(record.tags_before),
    planned: count(record.planned),
  };
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0;
}
