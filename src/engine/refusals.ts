import { createHash } from 'node:crypto';
import { ApiError, BulkDeleteAlreadyRequestedError, ForbiddenError, ValidationError } from '../gitlab';
import type { ActionParams, Decision, Refusal, UnsettledTarget } from './policy';

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
  return (
    error instanceof ForbiddenError ||
    error instanceof ValidationError ||
    (error instanceof ApiError && error.status === 405)
  );
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
export function fingerprintOf(decision: Pick<Decision, 'action' | 'params'>): string {
  return createHash('sha256')
    .update(`${decision.action}\n${JSON.stringify(decision.params)}`)
    .digest('hex')
    .slice(0, 16);
}

export function parkedText(refusal: Refusal): string {
  return `refused since ${refusal.since}: ${refusal.message}; looked at again after ${refusal.retry_at}`;
}

/** A decision the executor keeps parked after a final refusal, as a policy's observe finds it among its open targets. */
export interface ParkedDecision {
  readonly key: string;
  readonly action: string;
  readonly params: ActionParams;
}

/** The parked decisions among a policy's open targets (`context.unsettled`). */
export function parkedDecisions(unsettled: readonly UnsettledTarget[]): ParkedDecision[] {
  return unsettled
    .filter((target) => target.outcome === 'refused' && target.refusal !== undefined)
    .map(({ key, action, params }) => ({ key, action, params }));
}

/**
 * The key the same decision (action and params, as the executor compares them) is parked under, among the keys `ours`
 * accepts. A policy whose keys name the pass decides a refused change again under this key, so it stays parked.
 */
export function parkedKey(
  parked: readonly ParkedDecision[],
  decision: Pick<Decision, 'action' | 'params'>,
  ours: (key: string) => boolean,
): string | undefined {
  const refused = fingerprintOf(decision);
  return parked.find((candidate) => ours(candidate.key) && fingerprintOf(candidate) === refused)?.key;
}
