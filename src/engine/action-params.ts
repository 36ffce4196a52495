import { z } from 'zod';
import type { PolicyConfig, PolicyTypeDefinition } from '../config/policy-type';
import type { ActionParams, ActionResult, PolicyAction, ActContext } from './policy';

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
export function readParams<Schema extends z.ZodType>(
  policyType: string,
  schema: Schema,
  params: ActionParams,
): z.output<Schema> {
  const result = schema.safeParse(params);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const name = issue?.path.map(String).join('.') ?? '';
  const value = name === '' ? params : params[name];
  throw new TypeError(
    `${policyType}: action parameter "${name}" must be ${issue?.message ?? 'valid'}, got ${JSON.stringify(value)}`,
  );
}

/** What an action checks before it acts: a precondition read from the forge, or why it needs none. */
type Check<Target> =
  | {
      /**
       * Re-reads what the decision rested on, just before the call: undefined while it holds, else what changed. A
       * NotFoundError it throws means the target is gone.
       */
      readonly precondition: (target: Target, context: ActContext) => Promise<string | undefined>;
      readonly unchecked?: never;
    }
  | { readonly unchecked: string; readonly precondition?: never };

export type ActionSpec<Target> = {
  /** Reads the JSON params back, typed; a misfit is a TypeError before anything is sent. */
  readonly read: (params: ActionParams) => Target;
  readonly run: (target: Target, context: ActContext) => Promise<ActionResult | void>;
} & Check<Target>;

/**
 * An action whose parameters are read (and checked) by `read` before its precondition and effect see them typed: they
 * never see raw JSON. Every action states its precondition, or why it has none (`unchecked`), so the next policy
 * follows the rule too (docs/architecture.md).
 */
export function defineAction<Target>(spec: ActionSpec<Target>): PolicyAction {
  const { read, run } = spec;
  const check = spec.precondition;
  return {
    run: async (params, context) => run(read(params), context),
    ...(check
      ? { precondition: async (params: ActionParams, context: ActContext) => check(read(params), context) }
      : { unchecked: spec.unchecked }),
  };
}

/**
 * The policy's configuration as the file says now, for an action or precondition that applies the policy's rules or
 * needs what its params must not carry (a secret): the executor hands it to every action.
 */
export function configOf<Config extends PolicyConfig>(
  context: Pick<ActContext, 'policy'>,
  definition: Pick<PolicyTypeDefinition, 'type'>,
): Config {
  if (context.policy?.type !== definition.type)
    throw new TypeError(`${definition.type}: the policy configuration is not available to the action`);
  return context.policy as Config;
}
