import { ACCESS_LEVEL_VALUES, ACCESS_LEVELS } from '../../gitlab/types/access-levels';
import { ACCESS_TOKEN_SCOPES } from '../../gitlab/types/tokens';
import { MAX_TOKEN_LIFETIME_DAYS, newTokenValue, type AccessTokenRecord, type BotPlace } from '../access-tokens-state';
import {
  ApiError,
  badRequest,
  intParam,
  listParam,
  noContent,
  notFound,
  ok,
  param,
  paramError,
  requiredParam,
  unauthorized,
  type RequestContext,
} from '../http/context';
import { paginate } from '../http/pagination';
import type { Router } from '../http/router';
import type { SourceKind, UserRecord } from '../state';
import { currentUser, findGroup, findProject, groupLevel, MAINTAINER, OWNER, projectLevel } from './access';
import { expiryParam, filteredTokens, rotateToken, tokenView } from './token-rules';

/**
 * GitLab's "Project access tokens API" and "Group access tokens API": each token belongs to a bot user who is a member
 * of the project or group with the token's role. Maintainers manage a project's tokens, owners a group's; anyone else
 * who can see it gets 401, as from the forge (not 403).
 */
export function registerAccessTokenRoutes(router: Router): void {
  for (const source of ['project', 'group'] as const) {
    const base = `/${source}s/:id/access_tokens`;
    router
      .get(base, (ctx) => {
        const place = managedPlace(ctx, source);
        return paginate(ctx, filteredTokens(ctx, ctx.state.accessTokens.ofPlace(source, place.source_id)), (t) =>
          resourceTokenView(ctx, place, t),
        );
      })
      .get(`${base}/:token_id`, (ctx) => {
        const place = managedPlace(ctx, source);
        return ok(resourceTokenView(ctx, place, placeToken(ctx, place)));
      })
      .post(base, (ctx) => {
        const place = managedPlace(ctx, source);
        return ok(resourceTokenView(ctx, place, createToken(ctx, place), true), 201);
      })
      .post(`${base}/:token_id/rotate`, (ctx) => {
        const place = rotatablePlace(ctx, source);
        const token = ctx.state.accessTokens.ofPlace(source, place.source_id).find((t) => t.id === tokenIdParam(ctx));
        if (!token) throw currentUser(ctx).is_admin ? notFound() : unauthorized();
        if (!mayHandOut(ctx, place, token))
          throw badRequest('Not eligible to rotate tokens with permissions not held by the user');
        return ok(resourceTokenView(ctx, place, rotateToken(ctx, token), true));
      })
      .delete(`${base}/:token_id`, (ctx) => {
        const place = visiblePlace(ctx, source);
        const token = placeToken(ctx, place);
        if (callerLevel(ctx, place) < managerLevel(source)) {
          const bot = ctx.state.users.get(token.user_id);
          throw badRequest(`${currentUser(ctx).name} cannot delete ${bot?.name ?? token.name}`);
        }
        token.revoked = true;
        return noContent();
      });
  }
}

/** The role that manages a place's tokens. */
function managerLevel(source: SourceKind): number {
  return source === 'project' ? MAINTAINER : OWNER;
}

function visiblePlace(ctx: RequestContext, source: SourceKind): BotPlace {
  return { source, source_id: source === 'project' ? findProject(ctx).id : findGroup(ctx).id };
}

function callerLevel(ctx: RequestContext, place: BotPlace): number {
  const user = currentUser(ctx);
  if (place.source === 'project') return projectLevel(ctx.state, user, ctx.state.projects.get(place.source_id)!);
  return groupLevel(ctx.state, user, ctx.state.groups.get(place.source_id)!);
}

/** A place the caller manages the tokens of; 401 for anyone else who can see it. */
function managedPlace(ctx: RequestContext, source: SourceKind): BotPlace {
  const place = visiblePlace(ctx, source);
  if (callerLevel(ctx, place) < managerLevel(source)) throw unauthorized();
  return place;
}

/** As managedPlace, but an administrator alone learns that a token is missing (the forge's rotate endpoint). */
function rotatablePlace(ctx: RequestContext, source: SourceKind): BotPlace {
  const place = visiblePlace(ctx, source);
  if (callerLevel(ctx, place) < managerLevel(source)) throw currentUser(ctx).is_admin ? notFound() : unauthorized();
  return place;
}

function placeToken(ctx: RequestContext, place: BotPlace): AccessTokenRecord {
  const id = tokenIdParam(ctx);
  const token = ctx.state.accessTokens.ofPlace(place.source, place.source_id).find((t) => t.id === id);
  if (!token) throw notFound(`Could not find ${place.source} access token with token_id: ${ctx.params.token_id ?? ''}`);
  return token;
}

/** `:token_id`, which the forge declares a String and looks up by id: anything else finds no token. */
function tokenIdParam(ctx: RequestContext): number {
  return /^\d+$/.test(ctx.params.token_id ?? '') ? Number(ctx.params.token_id) : NaN;
}

/** The bot's role, which the caller must hold too (administrators excepted). */
function mayHandOut(ctx: RequestContext, place: BotPlace, token: AccessTokenRecord): boolean {
  return currentUser(ctx).is_admin || botLevel(ctx, place, token.user_id) <= callerLevel(ctx, place);
}

function botLevel(ctx: RequestContext, place: BotPlace, botId: number): number {
  return ctx.state.member(place.source, place.source_id, botId)?.access_level ?? 0;
}

/** The forge's `ResourceAccessToken` entity: a personal access token's fields and the bot's role there. */
function resourceTokenView(
  ctx: RequestContext,
  place: BotPlace,
  token: AccessTokenRecord,
  withValue = false,
): Record<string, unknown> {
  return { ...tokenView(ctx, token, withValue), access_level: botLevel(ctx, place, token.user_id) };
}

const RESOURCE_SCOPES: readonly string[] = ACCESS_TOKEN_SCOPES.filter(
  (scope) => scope !== 'sudo' && scope !== 'admin_mode',
);
const ACCESS_LEVELS_ALLOWED: readonly number[] = ACCESS_LEVEL_VALUES.filter((level) => level >= ACCESS_LEVELS.guest);

/**
 * The forge's `ResourceAccessTokens::CreateService`: `name` and `scopes` required, `expires_at` a year ahead by
 * default and at most that, `access_level` maintainer by default and never above the caller's own.
 */
function createToken(ctx: RequestContext, place: BotPlace): AccessTokenRecord {
  const name = requiredParam(ctx, 'name');
  const scopes = listParam(ctx, 'scopes');
  if (scopes === undefined || scopes.length === 0) throw paramError('scopes is missing');
  if (scopes.some((scope) => !RESOURCE_SCOPES.includes(scope))) throw paramError('scopes does not have a valid value');
  const accessLevel = intParam(ctx, 'access_level') ?? ACCESS_LEVELS.maintainer;
  if (!ACCESS_LEVELS_ALLOWED.includes(accessLevel)) throw paramError('access_level does not have a valid value');
  const expiresAt = expiryParam(ctx, MAX_TOKEN_LIFETIME_DAYS);
  const user: UserRecord = currentUser(ctx);
  if (!user.is_admin && accessLevel > callerLevel(ctx, place)) {
    throw new ApiError(400, {
      message: `400 Bad request - Access level of the token can't be greater the access level of the user who created the token`,
    });
  }
  const now = ctx.state.nowIso();
  const bot = ctx.state.accessTokens.addBot(
    place,
    name,
    accessLevel,
    { user: ctx.state.nextId('user'), namespace: ctx.state.nextId('namespace') },
    now,
  );
  return ctx.state.accessTokens.add({
    id: ctx.state.nextId('accessToken'),
    user_id: bot.id,
    name,
    description: param(ctx, 'description') ?? null,
    scopes,
    created_at: now,
    expires_at: expiresAt,
    revoked: false,
    last_used_at: null,
    previous_id: null,
    value: newTokenValue(),
  });
}
