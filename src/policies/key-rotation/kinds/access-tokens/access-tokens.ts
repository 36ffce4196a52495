import { z } from 'zod';
import { groupSelection, projectSelection } from '../../../../config/validators';
import { selectGroups, selectProjects } from '../../../../engine/discovery';
import type { ObserveContext, TargetProbe } from '../../../../engine/policy';
import { onePage, readFirstPage } from '../../../../engine/probe';
import type { GitlabClient, ResourceAccessTokensResource } from '../../../../gitlab';
import type {
  NewResourceAccessToken,
  ResourceAccessToken,
  ResourceAccessTokenScope,
} from '../../../../gitlab/types/tokens';
import { listedAccessToken, type ListedToken, type TokenHolder, type TokenKind } from '../../token-kind';
import { allOrGone, listHolders, removed } from '../../token-rotation.listing';
import { type TokenRule, tokenRuleFields, withTokenChecks } from '../../token-rotation.schema';

/**
 * Project and group access tokens: the same API under `/projects/:id` and `/groups/:id`, so one kind over where the
 * tokens live. Each token belongs to a bot user that keeps its id through rotations, which makes the bot the token's
 * family. Maintainers manage a project's tokens, owners a group's.
 */

const projectAccessTokensSchema = z
  .array(
    withTokenChecks(
      z
        .strictObject({
          projects: projectSelection().describe(
            'Projects whose access tokens are rotated: ids, full paths or globs ("acme/**"); a quoted leading "!" excludes.',
          ),
          include_archived: z
            .boolean({ error: 'expected true or false' })
            .default(false)
            .describe('Whether globs select archived projects too.'),
          ...tokenRuleFields(['rotate', 'overlap']),
        })
        .describe('Project access tokens to rotate before they expire or grow old.'),
    ),
    {
      error:
        'expected a list such as [{ projects: [acme/api], names: ["^deploy"], before_expiry: 14d, lifetime: 90d, deliver: [{ variable: { key: DEPLOY_TOKEN } }] }]',
    },
  )
  .default([]);

const groupAccessTokensSchema = z
  .array(
    withTokenChecks(
      z
        .strictObject({
          groups: groupSelection().describe(
            'Groups whose access tokens are rotated: ids, full paths or globs ("acme/**"); a quoted leading "!" excludes.',
          ),
          ...tokenRuleFields(['rotate', 'overlap']),
        })
        .describe('Group access tokens to rotate before they expire or grow old.'),
    ),
    {
      error:
        'expected a list such as [{ groups: [acme], names: ["^ci"], before_expiry: 14d, lifetime: 90d, deliver: [{ variable: { key: GROUP_TOKEN } }] }]',
    },
  )
  .default([]);

export type ProjectAccessTokensRule = z.output<typeof projectAccessTokensSchema>[number];
export type GroupAccessTokensRule = z.output<typeof groupAccessTokensSchema>[number];

/** Where one kind's tokens live: the client's resource, the holders an entry selects, and how people name them. */
interface Where<Rule extends TokenRule> {
  readonly name: string;
  readonly noun: string;
  readonly scope: 'projects' | 'groups';
  readonly schema: z.ZodType<Rule[]>;
  readonly listing: (client: GitlabClient) => ResourceAccessTokensResource<'projects' | 'groups'>;
  readonly select: (context: ObserveContext, rule: Rule) => Promise<Array<string | number>>;
  readonly refs: (rule: Rule) => Array<string | number>;
  readonly needs: string;
}

function accessTokenKind<Rule extends TokenRule>(where: Where<Rule>): TokenKind<Rule> {
  const holder = (ref: string | number): TokenHolder => ({ ref, label: `${where.scope.slice(0, -1)} ${ref}` });
  const issued = (token: NewResourceAccessToken) => ({
    id: token.id,
    value: token.token,
    expires_at: token.expires_at,
  });
  return {
    name: where.name,
    noun: where.noun,
    schema: where.schema,
    mayBeDaemonToken: true,
    async observe(rules, context) {
      const selected = await Promise.all(rules.map(async (rule) => (await where.select(context, rule)).map(holder)));
      return listHolders(context, selected, async (place) =>
        (await collect(where.listing(context.client).all(place.ref))).map(listed),
      );
    },
    async list(context, place) {
      return (await allOrGone(where.listing(context.client).all(place.ref)))?.map(listed);
    },
    async rotate(context, place, tokenId, expiresAt) {
      return issued(await where.listing(context.client).rotate(place.ref, tokenId, { expires_at: expiresAt }));
    },
    async create(context, place, like, expiresAt) {
      const scopes = like.scopes as ResourceAccessTokenScope[];
      return issued(
        await where.listing(context.client).create(place.ref, {
          name: like.name,
          scopes,
          expires_at: expiresAt,
          ...(like.access_level !== undefined ? { access_level: like.access_level } : {}),
        }),
      );
    },
    revoke: (context, place, tokenId) => removed(() => where.listing(context.client).revoke(place.ref, tokenId)),
    variablePlace: (place) => ({ scope: where.scope, ref: place.ref }),
    probes: (rules) =>
      unique(rules.flatMap(where.refs)).map((ref): TargetProbe => ({
        target: `${holder(ref).label} (access tokens)`,
        needs: where.needs,
        read: (client) => readFirstPage(where.listing(client).all(ref, {}, onePage())),
      })),
  };
}

function listed(token: ResourceAccessToken): ListedToken {
  return { ...listedAccessToken(token, `bot-${token.user_id}`), access_level: token.access_level };
}

async function collect<T>(listing: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of listing) items.push(item);
  return items;
}

function unique(refs: Array<string | number>): Array<string | number> {
  return [...new Map(refs.map((ref) => [String(ref).toLowerCase(), ref])).values()];
}

export const projectAccessTokens = accessTokenKind<ProjectAccessTokensRule>({
  name: 'project_token',
  noun: 'project access token',
  scope: 'projects',
  schema: projectAccessTokensSchema,
  listing: (client) => client.projectAccessTokens,
  select: (context, rule) => selectProjects(context, rule.projects, rule.include_archived),
  refs: (rule) => rule.projects.explicit.map((item) => ('id' in item ? item.id : item.path)),
  needs: 'Maintainer role in the project',
});

export const groupAccessTokens = accessTokenKind<GroupAccessTokensRule>({
  name: 'group_token',
  noun: 'group access token',
  scope: 'groups',
  schema: groupAccessTokensSchema,
  listing: (client) => client.groupAccessTokens,
  select: (context, rule) => selectGroups(context, rule.groups),
  refs: (rule) => rule.groups.explicit.map((item) => ('id' in item ? item.id : item.path)),
  needs: 'Owner role in the group',
});
