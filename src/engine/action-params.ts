import { z } from 'zod';
import type { ActionEffect, ActionParams, ActionResult, PolicyContext } from './policy';

/**
 * Action parameters travel as plain JSON (the queue, the ledger, the unsettled targets), so each action reads them
 * back through a zod schema, once, before anything is sent to the forge: a missing or mistyped value is a bug, never
 * something to act on. Field errors say what was expected, in the words of the message below.
 */
export const param = {
  integer: () => z.int({ error: 'an integer' }),
  text: () => z.string({ error: 'a string' }),
  /** An id or a full path, as the forge takes either. */
  idOrPath: () => z.union([z.int(), z.string()], { error: 'a path or an integer' }),
  flag: () => z.boolean({ error: 'true or false' }),
};

/** Reads `params` through `schema`; the first misfit is a TypeError naming the policy type, the parameter and its value. */
export function readParams<Schema extends z.ZodType>(policyType: string, schema: Schema, params: ActionParams): z.output<Schema> {
  const result = schema.safeParse(params);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const name = issue?.path.map(String).join('.') ?? '';
  const value = name === '' ? params : params[name];
  throw new TypeError(`${policyType}: action parameter "${name}" must be ${issue?.message ?? 'valid'}, got ${JSON.stringify(value)}`);
}

/**
 * An action effect whose parameters are read (and checked) by `read` before `effect` runs with them typed: the
 * effect never sees raw JSON.
 */
export function defineAction<Target>(
  read: (params: ActionParams) => Target,
  effect: (target: Target, context: PolicyContext) => Promise<ActionResult | void>,
): ActionEffect {
  return async (params, context) => effect(read(params), context);
}
