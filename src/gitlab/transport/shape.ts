import { z } from 'zod';

/**
 * Lightweight checks of forge answers: only the fields the code relies on, so that a forge (or a proxy) answering
 * oddly fails the request with an UnexpectedAnswerError instead of a TypeError later, or a request to
 * `.../undefined/...`. Records are loose: unknown fields pass through, and the checked value itself (not a copy) is
 * what callers get. The TypeScript types in `types/` stay the source of field names: `shapeOf<T>()` accepts only
 * fields of `T`, and only checks that accept every value `T` declares (a field typed `string | null` must be checked
 * as nullable). A literal union (`JobStatus`, `UserState`) may be checked as its base type: the forge adds values
 * (`waiting_for_resource`, `deactivated`, …), and one such record must not fail a whole listing.
 */

declare const checks: unique symbol;

/** The check of one forge record of type `T`; resources name it on a RequestSpec as `shape`. */
export interface Shape<T> {
  readonly schema: z.ZodType;
  /** Phantom: ties the shape to the type it checks, so a job shape cannot be handed to a user request. */
  readonly [checks]?: T;
}

/** Every key of every member of a union (`CurrentUser | CurrentAdminUser` has `is_admin`). */
type Keys<T> = T extends unknown ? keyof T : never;
/** The field's type across a union; `undefined` where a member lacks it. */
type FieldOf<T, K> = T extends unknown ? (K extends keyof T ? T[K] : undefined) : never;

type Check<T, K, C> =
  C extends Shape<infer U>
    ? [FieldOf<T, K>] extends [U]
      ? C
      : never
    : C extends z.ZodType
      ? [FieldOf<T, K>] extends [z.output<C>]
        ? C
        : never
      : never;

type Checks<T, F> = { readonly [K in keyof F]: K extends Keys<T> ? Check<T, K, F[K]> : never };

function isShape(value: unknown): value is Shape<unknown> {
  return typeof value === 'object' && value !== null && 'schema' in value && !(value instanceof z.ZodType);
}

/**
 * `shapeOf<Job>()({ id: z.number(), pipeline: shapeOf<JobPipeline>()({ project_id: z.number() }) })`: a field that
 * `Job` does not have, or a check that would refuse a value `Job` allows, is a compile error.
 */
export function shapeOf<T>() {
  return <F extends Checks<T, F>>(fields: F): Shape<T> => {
    const entries = Object.entries(fields as Record<string, z.ZodType | Shape<unknown>>).map(
      ([name, check]) => [name, isShape(check) ? check.schema : check] as const,
    );
    return { schema: z.looseObject(Object.fromEntries(entries)) };
  };
}

/** A nested record that may be `null` (`user: JobUser | null`). */
export function nullableShape<T>(shape: Shape<T>): Shape<T | null> {
  return { schema: shape.schema.nullable() };
}

/** What is wrong with a value: the dotted field (empty for the value itself) and a sentence about it. */
export interface ShapeProblem {
  field: string;
  problem: string;
}

const MAX_PREVIEW = 60;

/** A value from a parsed JSON answer, as the answer spelled it, shortened. */
function preview(value: unknown): string {
  if (value === undefined) return 'nothing';
  const text = JSON.stringify(value) ?? typeof value;
  return text.length > MAX_PREVIEW ? `${text.slice(0, MAX_PREVIEW - 1)}…` : text;
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let current = value;
  for (const key of path) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

/** Whether the check at `path` accepts null, so that the message can say "a string or null". */
function acceptsNull(schema: z.ZodType, path: readonly PropertyKey[]): boolean {
  let current: z.ZodType | undefined = schema;
  for (const key of path) {
    while (current instanceof z.ZodNullable || current instanceof z.ZodOptional)
      current = current.unwrap() as z.ZodType;
    if (!(current instanceof z.ZodObject)) return false;
    current = (current.shape as Record<PropertyKey, z.ZodType | undefined>)[key];
  }
  return current?.safeParse(null).success ?? false;
}

function withArticle(expected: string): string {
  return `${/^[aeiou]/.test(expected) ? 'an' : 'a'} ${expected}`;
}

/** Checks `value` against `shape`; undefined when it fits, else the first problem (fields in declaration order). */
export function checkShape(shape: Shape<unknown>, value: unknown): ShapeProblem | undefined {
  const result = shape.schema.safeParse(value);
  if (result.success) return undefined;
  const issue = result.error.issues[0];
  const field = issue.path.map(String).join('.');
  const actual = valueAt(value, issue.path);
  const more = result.error.issues.length > 1 ? ` (and ${result.error.issues.length - 1} more)` : '';
  if (issue.code === 'invalid_type') {
    if (field !== '' && actual === undefined) return { field, problem: `field ${field} missing${more}` };
    const expected = withArticle(issue.expected) + (acceptsNull(shape.schema, issue.path) ? ' or null' : '');
    const subject = field === '' ? 'expected' : `field ${field} must be`;
    return { field, problem: `${subject} ${expected}, got ${preview(actual)}${more}` };
  }
  return { field, problem: `${field === '' ? '' : `field ${field}: `}${issue.message}, got ${preview(actual)}${more}` };
}
