import { z } from 'zod';
import { groupSelection, projectSelection } from '../../../../config/validators';
import { selectGroups, selectProjects } from '../../../../engine/discovery';
import type { TargetProbe } from '../../../../engine/policy';
import { onePage, readFirstPage } from '../../../../engine/probe';
import type { GitlabClient } from '../../../../gitlab';
import type { DeployToken, DeployTokenScope } from '../../../../gitlab/types/tokens';
import type { ListedToken, TokenHolder, TokenKind } from '../../token-kind';
import { allOrGone, listHolders, removed } from '../../token-rotation.listing';
import { tokenRuleFields, withTokenChecks } from '../../token-rotation.schema';

/**
 * Deploy tokens of projects and groups. The forge cannot rotate one: a new token is made with the old one's name,
 * scopes and (when it was chosen, not the forge's `gitlab+deploy-token-N`) username, delivered, and the old one deleted
 * after the grace, so `overlap` is the only strategy. The listing shows no creation time, so only `before_expiry`
 * makes one due. Maintainers manage a project's, owners a group's.
 */

const DEFAULT_USERNAME = /^gitlab\+deploy-token-\d+$/;

const deployTokensSchema = z
  .array(
    withTokenChecks(
      z
        .strictObject({
          projects: projectSelection()
            .optional()
            .describe(
              'Projects whose deploy tokens are rotated: ids, full paths or globs; a quoted leading "!" excludes.',
            ),
          include_archived: z
            .boolean({ error: 'expected true or false' })
            .default(false)
            .describe('Whether globs select archived projects too.'),
          groups: groupSelection().optional().describe('Groups whose deploy tokens are rotated.'),
          ...tokenRuleFields(['overlap']),
        })
        .refine((rule) => rule.projects !== undefined || rule.groups !== undefined, {
          error: 'give projects, groups or both',
          path: ['projects'],
        })
        .describe('Deploy tokens to replace before they expire: new token first, the old one deleted after grace.'),
    ),
    {
      error:
        'expected a list such as [{ projects: [acme/api], names: ["^registry"], before_expiry: 14d, lifetime: 90d, deliver: [{ variable: { key: REGISTRY_TOKEN } }] }]',
    },
  )
  .default([]);

export type DeployTokensRule = z.output<typeof deployTokensSchema>[number];

const holderOf = (scope: 'projects' | 'groups', ref: string | number): TokenHolder => ({
  ref,
  scope,
  label: `${scope === 'projects' ? 'project' : 'group'} ${ref}`,
});
const resource = (client: GitlabClient, holder: TokenHolder) =>
  holder.scope === 'groups' ? client.groupDeployTokens : client.projectDeployTokens;

export const deployTokens: TokenKind<DeployTokensRule> = {
  name: 'deploy_token',
  noun: 'deploy token',
  schema: deployTokensSchema,
  async observe(rules, context) {
    const selected = await Promise.all(
      rules.map(async (rule) => [
        ...(rule.projects
          ? (await selectProjects(context, rule.projects, rule.include_archived)).map((ref) =>
              holderOf('projects', ref),
            )
          : []),
        ...(rule.groups ? (await selectGroups(context, rule.groups)).map((ref) => holderOf('groups', ref)) : []),
      ]),
    );
    return listHolders(context, selected, async (holder) => {
      const tokens: DeployToken[] = [];
      for await (const token of resource(context.client, holder).all(holder.ref)) tokens.push(token);
      return tokens.map(listed);
    });
  },
  async list(context, holder) {
    return (await allOrGone(resource(context.client, holder).all(holder.ref)))?.map(listed);
  },
  async create(context, holder, like, expiresAt) {
    const username =
      like.username !== undefined && !DEFAULT_USERNAME.test(like.username) ? { username: like.username } : {};
    const made = await resource(context.client, holder).create(holder.ref, {
      name: like.name,
      scopes: like.scopes as DeployTokenScope[],
      expires_at: `${expiresAt}T00:00:00Z`,
      ...username,
    });
    return { id: made.id, value: made.token, expires_at: made.expires_at };
  },
  revoke: (context, holder, tokenId) => removed(() => resource(context.client, holder).remove(holder.ref, tokenId)),
  variablePlace: (holder) => (holder.scope ? { scope: holder.scope, ref: holder.ref } : undefined),
  probes: (rules) =>
    rules.flatMap((rule): TargetProbe[] => [
      ...(rule.projects?.explicit ?? []).map((item) => probe(holderOf('projects', 'id' in item ? item.id : item.path))),
      ...(rule.groups?.explicit ?? []).map((item) => probe(holderOf('groups', 'id' in item ? item.id : item.path))),
    ]),
};

function probe(holder: TokenHolder): TargetProbe {
  return {
    target: `${holder.label} (deploy tokens)`,
    needs: holder.scope === 'groups' ? 'Owner role in the group' : 'Maintainer role in the project',
    read: (client) => readFirstPage(resource(client, holder).all(holder.ref, {}, onePage())),
  };
}

function listed(token: DeployToken): ListedToken {
  return {
    id: token.id,
    name: token.name,
    active: !token.revoked && !token.expired,
    revoked: token.revoked,
    created_at: null,
    expires_at: token.expires_at,
    family: `name:${token.name}`,
    scopes: token.scopes,
    username: token.username,
  };
}
