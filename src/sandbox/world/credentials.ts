import { z } from 'zod';
import { ACCESS_LEVELS } from '../../gitlab/types/access-levels';
import { ACCESS_TOKEN_SCOPES, DEPLOY_TOKEN_SCOPES } from '../../gitlab/types/tokens';
import { VARIABLE_TYPES } from '../../gitlab/types/variables';
import { maskProblem } from '../masked-values';
import { accessLevel, id, timestamp } from './fields';

/**
 * The credentials a world may seed: a user's access tokens (a plain value, or one with its name, scopes and expiry),
 * project and group access tokens (each with its bot user), deploy tokens and CI/CD variables. Each part is optional,
 * so a world written before them stays valid.
 */

const tokenFields = {
  id: id.optional(),
  /** The value a request authenticates with. */
  token: z.string().min(1),
  name: z.string().min(1).optional(),
  description: z.string().nullable().optional(),
  created_at: timestamp.optional(),
  /** The day (UTC) the token stops working; a timestamp is cut to its day. Omitted or null: never. */
  expires_at: timestamp.nullable().optional(),
  last_used_at: timestamp.nullable().optional(),
  revoked: z.boolean().default(false),
};

/** A user's personal access token: a plain value (scope `api`, no expiry), or the token with its details. */
export const userToken = z.union([
  z.string().min(1),
  z.strictObject({ ...tokenFields, scopes: z.array(z.enum(ACCESS_TOKEN_SCOPES)).min(1).default(['api']) }),
]);

const resourceToken = z.strictObject({
  ...tokenFields,
  name: z.string().min(1),
  scopes: z
    .array(z.enum(ACCESS_TOKEN_SCOPES).exclude(['sudo', 'admin_mode']))
    .min(1)
    .default(['api']),
  /** The bot user's role: a name or a number; maintainer by default, as on the forge. */
  access_level: accessLevel.default(ACCESS_LEVELS.maintainer),
  /** The bot user's username; `project_<id>_bot_<hex>` (or `group_…`) when omitted. */
  username: z.string().min(1).optional(),
});

const deployToken = z.strictObject({
  id: id.optional(),
  token: z.string().min(1),
  name: z.string().min(1),
  /** `gitlab+deploy-token-<id>` when omitted. */
  username: z.string().min(1).optional(),
  scopes: z.array(z.enum(DEPLOY_TOKEN_SCOPES)).min(1),
  created_at: timestamp.optional(),
  /** Omitted or null: never expires. */
  expires_at: timestamp.nullable().optional(),
  revoked: z.boolean().default(false),
});

const variable = z
  .strictObject({
    key: z.string().regex(/^[A-Za-z0-9_]{1,255}$/, { message: 'can contain only letters, digits and _ (at most 255)' }),
    value: z.string(),
    variable_type: z.enum(VARIABLE_TYPES).default('env_var'),
    protected: z.boolean().default(false),
    masked: z.boolean().default(false),
    /** Masked and hidden: the API never shows the value. */
    hidden: z.boolean().default(false),
    raw: z.boolean().default(false),
    environment_scope: z.string().min(1).default('*'),
    description: z.string().nullable().default(null),
  })
  .superRefine((v, ctx) => {
    const problem = v.masked || v.hidden ? maskProblem(v.value, v.raw) : undefined;
    if (problem !== undefined)
      ctx.addIssue({ code: 'custom', path: ['value'], message: `cannot be masked: ${problem}` });
  });

/** What groups and projects take besides their own fields. */
export const placeCredentials = {
  /** Project or group access tokens, each with its bot user. */
  access_tokens: z.array(resourceToken).default([]),
  deploy_tokens: z.array(deployToken).default([]),
  variables: z.array(variable).default([]),
};

export type WorldUserToken = z.output<typeof userToken>;
export type WorldResourceToken = z.output<typeof placeCredentials.access_tokens>[number];
export type WorldDeployToken = z.output<typeof placeCredentials.deploy_tokens>[number];
export type WorldVariable = z.output<typeof placeCredentials.variables>[number];
export interface WorldCredentials {
  access_tokens: WorldResourceToken[];
  deploy_tokens: WorldDeployToken[];
  variables: WorldVariable[];
}

/** The value of a user's token, whichever way the world writes it. */
export function userTokenValue(token: WorldUserToken): string {
  return typeof token === 'string' ? token : token.token;
}

/**
 * Problems across the world's credentials: a token value used twice (a request must name one token), and a variable
 * key used twice in the same environment scope of one project or group.
 */
export function checkCredentials(
  places: readonly { path: (string | number)[]; credentials: WorldCredentials }[],
  userTokens: readonly { path: (string | number)[]; value: string }[],
  report: (path: (string | number)[], message: string) => void,
): void {
  const values = new Set(userTokens.map((t) => t.value));
  for (const { path, credentials } of places) {
    credentials.access_tokens.forEach((token, t) => {
      if (values.has(token.token))
        report([...path, 'access_tokens', t, 'token'], 'token already belongs to another user');
      values.add(token.token);
    });
    const keys = new Set<string>();
    credentials.variables.forEach((variable, v) => {
      const key = `${variable.key}\u0000${variable.environment_scope}`;
      if (keys.has(key))
        report(
          [...path, 'variables', v, 'key'],
          `variable ${variable.key} already exists in environment scope ${variable.environment_scope}`,
        );
      keys.add(key);
    });
  }
}
