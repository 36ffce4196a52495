import { createHash } from 'node:crypto';
import { ApiError, BulkDeleteAlreadyRequestedError, ForbiddenError, ValidationError } from '../gitlab';
import type { Decision, Refusal } from './policy';

/**
 * Final refusals of the forge: a write it will not do, asked again at once, meets the same answer. The executor parks
 * such a target (see UnsettledTargets) and sends it again only after its time, or when the decision itself changed.
 */

/** The first wait after a final refusal, and the longest (the wait doubles with each refusal in a row). */
const REFUSAL_FIRST_WAIT_MS = 3_600_000;
const REFUSAL_MAX_WAIT_MS = 86_400_000;

/**
 * The forge will not do it, and asking again at once gets the same answer: a 403 (no right, an archived project, a job
 * that is not retryable), a 400 or 422 that rejects the request, a 405. The hourly bulk deletion limit is not one: it
 * passes, and its policy keeps its own record of when.
 */
export function isFinalRefusal(error: unknown): boolean {
  if (error instanceof BulkDeleteAlreadyRequestedError) return false;
  return error instanceof ForbiddenError || error instanceof ValidationError || (error instanceof ApiError && error.status === 405);
}

/** A refusal in a row after `previous` (of the same decision or not): parked for an hour, doubling up to a day. */
export function park(decision: Decision, error: unknown, previous: Refusal | undefined, now: Date): Refusal {
  const count = (previous?.count ?? 0) + 1;
  const waitMs = Math.min(REFUSAL_FIRST_WAIT_MS * 2 ** Math.min(count - 1, 10), REFUSAL_MAX_WAIT_MS);
  return {
    since: previous?.since ?? now.toISOString(),
    message: error instanceof ApiError ? error.summary : error instanceof Error ? error.message : String(error),
    count,
    retry_at: new Date(now.getTime() + waitMs).toISOString(),
    fingerprint: fingerprintOf(decision),
  };
}

/** The decision as refused: a new decision for the same key (other params) is not held back by the old refusal. */
export function fingerprintOf(decision: Decision): string {
  return createHash('sha256').update(`${decision.action}\n${JSON.stringify(decision.params)}`).digest('hex').slice(0, 16);
}

export function parkedText(refusal: Refusal): string {
  return `refused since ${refusal.since}: ${refusal.message}; looked at again after ${refusal.retry_at}`;
}
