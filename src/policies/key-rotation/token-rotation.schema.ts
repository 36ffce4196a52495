import { z } from 'zod';
import { duration, groupRef, period, projectRef, re2List } from '../../config/validators';

/**
 * What every token kind's entries share (docs/policies.md, key_rotation, "Tokens"): which tokens (by name), when they
 * are due, the new token's lifetime, the strategy, and where the new value is delivered. A kind adds whose tokens.
 */

export const STRATEGIES = ['rotate', 'overlap'] as const;
export type Strategy = (typeof STRATEGIES)[number];

/** The forge refuses an access token that lives longer than a year; the new expiry is capped there. */
export const MAX_TOKEN_LIFETIME_MS = 365 * 86_400_000;

const VARIABLE_KEY = /^[A-Za-z0-9_]{1,255}$/;

const variableDelivery = z
  .strictObject({
    key: z
      .string()
      .regex(VARIABLE_KEY, { error: 'expected a variable key: letters, digits and _ (at most 255)' })
      .describe('The CI/CD variable that holds the token.'),
    project: projectRef().optional().describe("The variable's project; default: the token's own project or group."),
    group: groupRef().optional().describe("The variable's group, instead of a project."),
    environment_scope: z.string().min(1).default('*').describe('The environment scope of the variable (default *).'),
    protected: z
      .boolean({ error: 'expected true or false' })
      .default(true)
      .describe('Only protected branches and tags see it (default true).'),
    masked: z.boolean({ error: 'expected true or false' }).default(true).describe('Masked in job logs (default true).'),
    masked_and_hidden: z
      .boolean({ error: 'expected true or false' })
      .default(false)
      .describe(
        'Masked and never shown again by the forge (GitLab 17.4 on); the delivery is then verified by its flags, not its value.',
      ),
  })
  .refine((variable) => variable.project === undefined || variable.group === undefined, {
    error: 'give project or group, not both',
    path: ['group'],
  });

/** One place a new token's value goes. */
export const deliverySchema = z.union(
  [
    z.strictObject({ variable: variableDelivery }),
    z.strictObject({
      file: z
        .string()
        .regex(/^\//, { error: 'expected an absolute path; {holder} and {name} stand for the token’s holder and name' })
        .describe(
          'A file (0600, written atomically) holding the value; {holder} and {name} stand for the token’s holder and name.',
        ),
    }),
    z.strictObject({
      on_rotate: z
        .literal(true, { error: 'expected on_rotate: true' })
        .describe("The policy's on_rotate command, with the value on standard input."),
    }),
  ],
  { error: 'expected { variable: {...} }, { file: /path } or { on_rotate: true }' },
);
export type Delivery = z.output<typeof deliverySchema>;
export type VariableDelivery = z.output<typeof variableDelivery>;

/** The fields of a token entry, `strategies` being what the kind's forge allows (the first the default). */
export function tokenRuleFields<const S extends readonly [Strategy, ...Strategy[]]>(strategies: S) {
  return {
    names: re2List().describe(
      'RE2 expressions on the token name, unanchored; one must match. Only these tokens are managed.',
    ),
    before_expiry: duration().describe('Rotate a token this long before it expires.'),
    max_age: period()
      .optional()
      .describe('Also rotate a token once it is this old (by created_at), whatever its expiry.'),
    lifetime: period().describe(
      'The new token expires this long after it is made (capped at the forge’s 365 days). Always sent.',
    ),
    strategy: z
      .enum(strategies, { error: `expected ${strategies.join(' or ')}` })
      .default(strategies[0])
      .describe(
        strategies.length > 1
          ? 'rotate: the forge’s rotate call (the old token stops at once). overlap: a new token first, the old one revoked after grace.'
          : 'overlap: a new token first, the old one revoked after grace (this kind cannot be rotated).',
      ),
    grace: duration().prefault('1d').describe('overlap: both tokens work this long after the new one is delivered.'),
    deliver: z
      .array(deliverySchema)
      .min(1, { error: 'give at least one delivery: a variable, a file or on_rotate' })
      .describe('Where the new value goes; each is verified before the rotation counts as done.'),
  };
}

/** The shared part of every token entry, as the core reads it. */
export interface TokenRule {
  readonly names: readonly { test(name: string): boolean }[];
  readonly before_expiry: number;
  readonly max_age?: number;
  readonly lifetime: number;
  readonly strategy: Strategy;
  readonly grace: number;
  readonly deliver: readonly Delivery[];
}

/** Every entry: lifetime longer than before_expiry, or each new token would be due at once. */
export function withTokenChecks<Schema extends z.ZodType<{ lifetime: number; before_expiry: number }>>(schema: Schema) {
  return schema.refine((entry) => Math.min(entry.lifetime, MAX_TOKEN_LIFETIME_MS) > entry.before_expiry, {
    path: ['lifetime'],
    error: 'lifetime must be longer than before_expiry, or every new token would be rotated at once',
    when: (payload) => {
      const input = payload.value as Record<string, unknown> | undefined;
      return typeof input?.lifetime === 'number' && typeof input.before_expiry === 'number';
    },
  });
}
