import type { ActionResult, ActContext, PolicyState } from '../../engine/policy';
import { ApiError, ForbiddenError, ValidationError } from '../../gitlab/transport/errors';
import type { CredentialKinds } from './credential-kind';
import { generationOf, loadRecord, type RotationRecord, saveRecord, type Step, STEPS } from './key-rotation.record';

/** How every step reads its record before it acts, counts its attempt, and records a failure before it is reported. */

/** A step decided in the same pass after one that did not complete: it does nothing, and the next pass retries both. */
export class StepNotReadyError extends Error {}

/** A failure the step has already written into the record (it went back a step): the record is not saved again. */
export class RecordedError extends Error {}

/** A rotation's record, when its kind is one this build has: any other reads as none, as a damaged record does. */
export async function loadKnown(
  kinds: CredentialKinds,
  state: PolicyState,
  id: string,
): Promise<RotationRecord | undefined> {
  const record = await loadRecord(state, id);
  return record && kinds.has(record.kind) ? record : undefined;
}

/**
 * Reads the record and starts an attempt of a step that continues from one of the steps `from`, of the generation the
 * step was decided for: a rotation already past them, closed, or at a later generation answers `already` (a stale
 * decision); one not yet there raises StepNotReadyError (an earlier step of this pass did not complete).
 */
export async function begin(
  kinds: CredentialKinds,
  context: ActContext,
  read: { rotation: string; generation?: number },
  from: readonly Step[],
): Promise<{ record: RotationRecord } | { already: ActionResult }> {
  const id = read.rotation;
  const generation = read.generation ?? 1;
  const record = await loadKnown(kinds, context.state, id);
  if (!record)
    throw new StepNotReadyError(`not run: rotation ${id} has no record yet (its first step did not complete)`);
  const current = generationOf(record);
  if (current > generation)
    return { already: { outcome: 'stale', detail: `rotation ${id} is at generation ${current} now` } };
  if (current < generation)
    throw new StepNotReadyError(
      `not run: generation ${generation} of rotation ${id} has not started (its first step did not complete)`,
    );
  if (record.step === 'closed')
    return { already: { outcome: 'stale', detail: `rotation ${id} was closed: ${record.closed_reason ?? ''}` } };
  const at = STEPS.indexOf(record.step);
  if (at > Math.max(...from.map((step) => STEPS.indexOf(step))))
    return { already: { detail: `already done: rotation ${id} is at ${record.step}` } };
  if (!from.includes(record.step))
    throw new StepNotReadyError(`not run: rotation ${id} is at ${record.step}; retried next pass`);
  const counted = { ...record, attempt: record.attempt + 1 };
  await saveRecord(context.state, counted);
  return { record: counted };
}

/**
 * Runs a step's forge calls, recording a failure in the record before it reaches the executor. A final refusal (403,
 * 400/422, 405) did nothing, and the same answer would come next pass: the record goes back to the attempt the refused
 * decision's key names (`decided`), so the next pass decides that same key and the executor keeps it parked (with
 * backoff) instead of sending it again.
 */
export async function recording(
  context: ActContext,
  record: RotationRecord,
  work: () => Promise<ActionResult | void>,
  decided?: number,
): Promise<ActionResult> {
  try {
    return (await work()) ?? {};
  } catch (error) {
    if (error instanceof StepNotReadyError || error instanceof RecordedError) throw error;
    const refused =
      error instanceof ForbiddenError ||
      error instanceof ValidationError ||
      (error instanceof ApiError && error.status === 405);
    await saveRecord(context.state, {
      ...record,
      attempt: refused && decided !== undefined ? decided : record.attempt,
      last_error: message(error),
    });
    throw error;
  }
}

/**
 * The record an action's precondition checks against: undefined when there is none yet, or it is at another generation,
 * closed, or done (unless `done too`: a project that gained the old key after the rotation was done gets its new key);
 * the step itself then says why it does nothing (begin), so the precondition does not guess.
 */
export async function openRecord(
  kinds: CredentialKinds,
  context: ActContext,
  read: { rotation: string; generation?: number },
  done: 'done too' | 'open only' = 'open only',
): Promise<RotationRecord | undefined> {
  const record = await loadKnown(kinds, context.state, read.rotation);
  if (!record || generationOf(record) !== (read.generation ?? 1)) return undefined;
  if (record.step === 'closed' || (record.step === 'done' && done === 'open only')) return undefined;
  return record;
}

/** What the record and the audit keep of a failure: the forge's answer with its request, never key material. */
export function message(error: unknown): string {
  if (error instanceof ApiError) return error.summary;
  return error instanceof Error ? error.message : String(error);
}
