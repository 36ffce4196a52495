import { z } from 'zod';
import type { ObserveContext, TargetProbe } from '../../../../engine/policy';
import type { PersonalAccessToken } from '../../../../gitlab/types/tokens';
import { listedAccessToken, type ListedToken, type TokenHolder, type TokenKind } from '../../token-kind';
import { allOrGone, listHolders, removed } from '../../token-rotation.listing';
import { tokenRuleFields, withTokenChecks } from '../../token-rotation.schema';

/**
 * Personal access tokens of users: the token's user (`self`) or, with an administrator's token, anyone's. The forge's
 * rotate call keeps the name and scopes; the API makes no new one for a user, so `rotate` is the only strategy. The
 * daemon's own token is never rotated here (see gitlab.token_file). A user has no CI/CD variables: a variable delivery
 * names its project or group.
 */

const USERNAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;
const USER_HINT = 'expected self, a user id or a username';
const userRef = z.union(
  [z.literal('self'), z.number().int().positive(), z.string().regex(USERNAME, { error: USER_HINT })],
  { error: USER_HINT },
);

const personalAccessTokensSchema = z
  .array(
    withTokenChecks(
      z
        .strictObject({
          users: z
            .array(userRef)
            .min(1, { error: 'give at least one user' })
            .describe(
              'Whose tokens: self (the daemon’s user), or others by id or username (an administrator’s token).',
            ),
          ...tokenRuleFields(['rotate']),
        })
        .describe('Personal access tokens to rotate before they expire or grow old.'),
    ),
    {
      error:
        'expected a list such as [{ users: [self], names: ["^ci"], before_expiry: 14d, lifetime: 90d, deliver: [{ variable: { key: CI_TOKEN, project: acme/api } }] }]',
    },
  )
  .default([]);

export type PersonalAccessTokensRule = z.output<typeof personalAccessTokensSchema>[number];

export const personalAccessTokens: TokenKind<PersonalAccessTokensRule> = {
  name: 'personal_token',
  noun: 'personal access token',
  schema: personalAccessTokensSchema,
  mayBeDaemonToken: true,
  async observe(rules, context) {
    const users = new Map<string, Promise<TokenHolder | undefined>>();
    const holder = (ref: string | number) => {
      const key = String(ref).toLowerCase();
      if (!users.has(key)) users.set(key, userHolder(context, ref));
      return users.get(key) as Promise<TokenHolder | undefined>;
    };
    const selected = await Promise.all(
      rules.map(async (rule) =>
        (await Promise.all(rule.users.map(holder))).filter((found): found is TokenHolder => found !== undefined),
      ),
    );
    return listHolders(context, selected, async (user) => {
      const tokens: PersonalAccessToken[] = [];
      for await (const token of context.client.personalAccessTokens.all({ user_id: Number(user.ref) }))
        tokens.push(token);
      return tokens.map(listed);
    });
  },
  async list(context, user) {
    return (await allOrGone(context.client.personalAccessTokens.all({ user_id: Number(user.ref) })))?.map(listed);
  },
  async rotate(context, _user, tokenId, expiresAt) {
    const made = await context.client.personalAccessTokens.rotate(tokenId, { expires_at: expiresAt });
    return { id: made.id, value: made.token, expires_at: made.expires_at };
  },
  create() {
    return Promise.reject(new Error('the API makes no personal access token for a user: strategy rotate'));
  },
  revoke: (context, _user, tokenId) => removed(() => context.client.personalAccessTokens.revoke(tokenId)),
  variablePlace: () => undefined,
  needsAdministrator: (rules) => {
    const others = [...new Set(rules.flatMap((rule) => rule.users.map(String)))].filter((user) => user !== 'self');
    return others.length === 0
      ? undefined
      : `personal_access_tokens of ${others.join(', ')}: only an administrator's token lists and rotates another user's tokens`;
  },
  probes: (rules) =>
    [...new Set(rules.flatMap((rule) => rule.users.map(String)))].map((user): TargetProbe => ({
      target: `user ${user} (personal access tokens)`,
      needs: user === 'self' ? 'a token that may list its own tokens' : 'an administrator’s token',
      read: async (client) => {
        const id = user === 'self' ? (await client.users.current()).id : /^\d+$/.test(user) ? Number(user) : undefined;
        for await (const token of client.personalAccessTokens.all(
          { ...(id !== undefined ? { user_id: id } : {}) },
          { perPage: 1, maxPages: 1, onPageLimit: 'stop' },
        ))
          void token;
      },
    })),
};

/** A user by `self`, id or username, as a holder of tokens; a username the forge does not know is recorded unobserved. */
async function userHolder(context: ObserveContext, ref: string | number): Promise<TokenHolder | undefined> {
  if (ref === 'self') {
    const me = await context.client.users.current();
    return { ref: me.id, label: `user ${me.username}` };
  }
  if (typeof ref === 'number') return { ref, label: `user ${ref}` };
  for await (const user of context.client.users.all({ username: ref }))
    return { ref: user.id, label: `user ${user.username}` };
  context.unobserved.record(`user ${ref}`, new Error(`the forge lists no user ${ref}`));
  return undefined;
}

function listed(token: PersonalAccessToken): ListedToken {
  return listedAccessToken(token, `user-${token.user_id}:${token.name}`);
}
