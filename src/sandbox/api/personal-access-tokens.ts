import type { AccessTokenRecord } from '../access-tokens-state';
import {
  ApiError,
  intParam,
  intRouteParam,
  noContent,
  notFound,
  ok,
  unauthorized,
  type RequestContext,
} from '../http/context';
import { paginate } from '../http/pagination';
import type { Router } from '../http/router';
import { currentUser } from './access';
import { filteredTokens, rotateToken, tokenView } from './token-rules';

/**
 * GitLab's "Personal access tokens API": administrators see every token (bots' included), anyone else only their
 * own. Another user's token answers 401, not 404, except to an administrator (the forge hides whether it exists).
 * `self` is the token that authenticated the request; the `self` routes come first, as `:id` would take them.
 */
export function registerPersonalAccessTokenRoutes(router: Router): void {
  router
    .get('/personal_access_tokens', (ctx) => {
      const user = currentUser(ctx);
      const userId = intParam(ctx, 'user_id');
      if (!user.is_admin && userId !== undefined && userId !== user.id) throw unauthorized();
      const all = [...ctx.state.accessTokens.tokens.values()].sort((a, b) => a.id - b.id);
      const owner = user.is_admin ? userId : user.id;
      const tokens = filteredTokens(ctx, owner === undefined ? all : all.filter((t) => t.user_id === owner));
      return paginate(ctx, tokens, (t) => ({ ...tokenView(ctx, t), last_used_ips: [] }));
    })
    .get('/personal_access_tokens/self', (ctx) => ok(tokenView(ctx, selfToken(ctx))))
    .delete('/personal_access_tokens/self', (ctx) => {
      selfToken(ctx).revoked = true;
      return noContent();
    })
    .post('/personal_access_tokens/self/rotate', (ctx) => ok(tokenView(ctx, rotateToken(ctx, selfToken(ctx)), true)))
    .get('/personal_access_tokens/:id', (ctx) => ok({ ...tokenView(ctx, ownToken(ctx)), last_used_ips: [] }))
    .post('/personal_access_tokens/:id/rotate', (ctx) => ok(tokenView(ctx, rotateToken(ctx, ownToken(ctx)), true)))
    .delete('/personal_access_tokens/:id', (ctx) => {
      const token = ctx.state.accessTokens.tokens.get(intRouteParam(ctx, 'id'));
      if (!token) throw notFound();
      const user = currentUser(ctx);
      if (!user.is_admin && token.user_id !== user.id) throw new ApiError(400, { message: '400 Bad request' });
      token.revoked = true;
      return noContent();
    });
}

function selfToken(ctx: RequestContext): AccessTokenRecord {
  if (!ctx.token) throw unauthorized();
  return ctx.token;
}

/** A token the caller may manage: their own, or any for an administrator (who alone learns of a missing one). */
function ownToken(ctx: RequestContext): AccessTokenRecord {
  const user = currentUser(ctx);
  const token = ctx.state.accessTokens.tokens.get(intRouteParam(ctx, 'id'));
  if (token && (user.is_admin || token.user_id === user.id)) return token;
  throw user.is_admin ? notFound() : unauthorized();
}
