import { ForbiddenError, NotFoundError, UnexpectedAnswerError } from '../../gitlab/transport/errors';

/**
 * Reading the forge's answers for the sections. A field a comparison rests on that an answer lacks is an unexpected
 * answer for that project, never a difference: a missing list read as empty would be "repaired" every pass.
 */

/**
 * An answer without the shape the comparison needs: an ApiError, so that observeTargets records it against the
 * project and the pass goes on with the others. The answer itself is not kept (an integration's may hold a secret).
 */
export function oddAnswer(
  path: string,
  item: number | undefined,
  field: string,
  problem: string,
): UnexpectedAnswerError {
  const where = item === undefined ? '' : `item ${item}: `;
  return new UnexpectedAnswerError({
    status: 200,
    method: 'GET',
    path,
    body: undefined,
    item,
    field,
    message: `unexpected answer from GET ${path}: ${where}${field === '' ? 'the record' : field} ${problem}; not compared, nothing changed`,
  });
}

/** What an answer had instead of the expected field. */
export function shapeOf(value: unknown): string {
  if (value === undefined) return 'is missing';
  return `is ${value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value}`;
}

/** A forge without a section's API (a lower tier) answers 404 or 403: undefined, which decide reports as a skip. */
export async function unlessUnavailable<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof NotFoundError || error instanceof ForbiddenError) return undefined;
    throw error;
  }
}
