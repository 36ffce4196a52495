import type { AccessTokenRecord } from '../access-tokens-state';
import type { UserRecord } from '../people-state';
import { ApiError, forbidden, unauthorized, type RequestContext } from './context';

/**
 * An access token judged as the forge's `AuthFinders` and `AccessTokenValidationService` judge it: unknown → 401;
 * expired → 401 (checked first, as there); revoked → 401, and on a rotate path the token's family is revoked too
 * (automatic reuse detection); a deleted user → 401; a blocked one → 403 with the reason, as `find_current_user!`
 * answers; a scope that does not cover the request → 403.
 */

/** The forge's test for a rotation request (`access_token_rotation_request?`): personal, project and group tokens alike. */
const ROTATION_PATH = /access_tokens\/(\d+|self)\/rotate$/;

export function authenticateToken(ctx: RequestContext, value: string): { user: UserRecord; token: AccessTokenRecord } {
  const tokens = ctx.state.accessTokens;
  const token = tokens.byTokenValue(value);
  if (!token) throw unauthorized();
  const now = ctx.state.clock.date();
  if (tokens.expired(token, now)) throw invalidToken('Token has expired.');
  if (token.revoked) {
    if (ROTATION_PATH.test(ctx.path))
      tokens.revokeFamily(token, 'authenticated_with_revoked_token', { method: ctx.method, path: ctx.path }, now);
    throw invalidToken('Token was revoked. You have to re-authorize from the user.');
  }
  const user = ctx.state.users.get(token.user_id);
  if (!user) throw unauthorized();
  if (user.state === 'blocked') throw forbidden('Your account has been blocked.');
  const allowed = allowedScopes(ctx.method, ctx.path);
  if (allowed !== 'any' && !token.scopes.some((scope) => allowed.includes(scope))) {
    throw new ApiError(403, {
      error: 'insufficient_scope',
      error_description: 'The request requires higher privileges than provided by the access token.',
      scope: allowed.join(' '),
    });
  }
  token.last_used_at = now.toISOString();
  return { user, token };
}

/**
 * The scopes that let a token make this request: `api` everything, `read_api` reads, `read_user` reads of users;
 * a token's own record any scope, its self-rotation `api` or `self_rotate`. Other scopes (Git, registries) no API.
 */
function allowedScopes(method: string, path: string): readonly string[] | 'any' {
  if (path === '/personal_access_tokens/self' && method !== 'POST') return 'any';
  if (method === 'POST' && path === '/personal_access_tokens/self/rotate') return ['api', 'self_rotate'];
  if (method !== 'GET' && method !== 'HEAD') return ['api'];
  return /^\/users?(\/|$)/.test(path) ? ['api', 'read_api', 'read_user'] : ['api', 'read_api'];
}

/** The forge's answer to an expired or revoked token (Doorkeeper's `invalid_token`). */
function invalidToken(description: string): ApiError {
  return new ApiError(401, { error: 'invalid_token', error_description: description });
}
