import { DEPLOY_TOKEN_SCOPES, type DeployTokenScope } from '../../gitlab/types/tokens';
import { newTokenValue, type BotPlace } from '../access-tokens-state';
import type { DeployTokenRecord } from '../deploy-tokens-state';
import {
  ApiError,
  boolParam,
  listParam,
  noContent,
  notFound,
  ok,
  param,
  paramError,
  requiredParam,
  timestampParam,
  type RequestContext,
} from '../http/context';
import { paginate } from '../http/pagination';
import type { Router } from '../http/router';
import type { SourceKind } from '../state';
import { findGroup, findProject, MAINTAINER, OWNER } from './access';

/**
 * GitLab's "Deploy tokens API": project maintainers manage a project's; group maintainers list a group's, owners
 * create and delete them. Deleting revokes and destroys the token; there is no rotation.
 */
export function registerDeployTokenRoutes(router: Router): void {
  for (const source of ['project', 'group'] as const) {
    const base = `/${source}s/:id/deploy_tokens`;
    const writer = source === 'project' ? MAINTAINER : OWNER;
    router
      .get(base, (ctx) => {
        const place = findPlace(ctx, source, MAINTAINER);
        const active = boolParam(ctx, 'active');
        const now = ctx.state.clock.date();
        const tokens = ctx.state.deployTokens
          .of(source, place.source_id)
          .filter((t) => active === undefined || (!t.revoked && !ctx.state.deployTokens.expired(t, now)) === active);
        return paginate(ctx, tokens, (t) => deployTokenView(ctx, t));
      })
      .get(`${base}/:token_id`, (ctx) => ok(deployTokenView(ctx, placeToken(ctx, findPlace(ctx, source, MAINTAINER)))))
      .post(base, (ctx) => ok(deployTokenView(ctx, createToken(ctx, findPlace(ctx, source, writer)), true), 201))
      .delete(`${base}/:token_id`, (ctx) => {
        ctx.state.deployTokens.tokens.delete(placeToken(ctx, findPlace(ctx, source, writer)).id);
        return noContent();
      });
  }
}

function findPlace(ctx: RequestContext, source: SourceKind, level: number): BotPlace {
  return { source, source_id: source === 'project' ? findProject(ctx, level).id : findGroup(ctx, level).id };
}

function placeToken(ctx: RequestContext, place: BotPlace): DeployTokenRecord {
  const id = /^\d+$/.test(ctx.params.token_id ?? '') ? Number(ctx.params.token_id) : NaN;
  const token = ctx.state.deployTokens.tokens.get(id);
  if (!token || token.source !== place.source || token.source_id !== place.source_id) throw notFound();
  return token;
}

/** The forge's `DeployToken` entity; `expires_at` null for a token that never expires. */
function deployTokenView(ctx: RequestContext, token: DeployTokenRecord, withValue = false): Record<string, unknown> {
  return {
    id: token.id,
    name: token.name,
    username: token.username,
    expires_at: token.expires_at,
    revoked: token.revoked,
    expired: ctx.state.deployTokens.expired(token, ctx.state.clock.date()),
    scopes: token.scopes,
    ...(withValue ? { token: token.value } : {}),
  };
}

const SCOPES: readonly string[] = DEPLOY_TOKEN_SCOPES;

function createToken(ctx: RequestContext, place: BotPlace): DeployTokenRecord {
  const name = requiredParam(ctx, 'name');
  const scopes = listParam(ctx, 'scopes');
  if (scopes === undefined) throw paramError('scopes is missing');
  if (scopes.some((scope) => !SCOPES.includes(scope))) throw paramError('scopes does not have a valid value');
  if (scopes.length === 0) throw new ApiError(400, { message: "Scopes can't be blank" });
  const expiresAt = timestampParam(ctx, 'expires_at') ?? null;
  const id = ctx.state.nextId('deployToken');
  const username = param(ctx, 'username') || `gitlab+deploy-token-${id}`;
  return ctx.state.deployTokens.add({
    id,
    ...place,
    name,
    username,
    scopes: scopes as DeployTokenScope[],
    created_at: ctx.state.nowIso(),
    expires_at: expiresAt,
    revoked: false,
    value: newTokenValue('gldt-'),
  });
}
