import {
  dayAfter,
  MAX_TOKEN_LIFETIME_DAYS,
  ROTATION_DEFAULT_DAYS,
  type AccessTokenRecord,
} from '../access-tokens-state';
import {
  badRequest,
  boolParam,
  enumParam,
  param,
  paramError,
  timestampParam,
  type RequestContext,
} from '../http/context';

/**
 * What personal, project and group access tokens share: the record as the forge's `PersonalAccessToken` entity shows
 * it, the listings' filters and sort, the expiry a create or rotation accepts, and the rotation itself.
 */

/** The forge's `PersonalAccessToken` entity; `value` only where the forge shows it (the answer that made the token). */
export function tokenView(ctx: RequestContext, token: AccessTokenRecord, withValue = false): Record<string, unknown> {
  return {
    id: token.id,
    name: token.name,
    revoked: token.revoked,
    created_at: token.created_at,
    description: token.description,
    scopes: token.scopes,
    user_id: token.user_id,
    last_used_at: token.last_used_at,
    active: ctx.state.accessTokens.active(token, ctx.state.clock.date()),
    expires_at: token.expires_at,
    ...(withValue ? { token: token.value } : {}),
  };
}

const SORTS = [
  'created_asc',
  'created_desc',
  'expires_asc',
  'expires_desc',
  'last_used_asc',
  'last_used_desc',
  'name_asc',
  'name_desc',
] as const;

/** The listings' filters (`created_after`, …, `revoked`, `search`, `state`) and `sort`; unsorted: oldest first. */
export function filteredTokens(ctx: RequestContext, tokens: AccessTokenRecord[]): AccessTokenRecord[] {
  const now = ctx.state.clock.date();
  const createdAfter = timestampParam(ctx, 'created_after');
  const createdBefore = timestampParam(ctx, 'created_before');
  const usedAfter = timestampParam(ctx, 'last_used_after');
  const usedBefore = timestampParam(ctx, 'last_used_before');
  const expiresAfter = dateParam(ctx, 'expires_after');
  const expiresBefore = dateParam(ctx, 'expires_before');
  const revoked = boolParam(ctx, 'revoked');
  const search = param(ctx, 'search')?.toLowerCase();
  const state = enumParam(ctx, 'state', ['active', 'inactive'] as const);
  const sort = enumParam(ctx, 'sort', SORTS);
  const selected = tokens.filter((t) => {
    if (createdAfter !== undefined && t.created_at <= createdAfter) return false;
    if (createdBefore !== undefined && t.created_at >= createdBefore) return false;
    if (usedAfter !== undefined && (t.last_used_at === null || t.last_used_at <= usedAfter)) return false;
    if (usedBefore !== undefined && (t.last_used_at === null || t.last_used_at >= usedBefore)) return false;
    if (expiresAfter !== undefined && (t.expires_at === null || t.expires_at <= expiresAfter)) return false;
    if (expiresBefore !== undefined && (t.expires_at === null || t.expires_at >= expiresBefore)) return false;
    if (revoked !== undefined && t.revoked !== revoked) return false;
    if (search !== undefined && !t.name.toLowerCase().includes(search)) return false;
    if (state !== undefined && ctx.state.accessTokens.active(t, now) !== (state === 'active')) return false;
    return true;
  });
  if (sort === undefined) return selected;
  const field = sort.slice(0, sort.lastIndexOf('_'));
  const sign = sort.endsWith('_desc') ? -1 : 1;
  const key = (t: AccessTokenRecord): string =>
    field === 'created'
      ? t.created_at
      : field === 'expires'
        ? (t.expires_at ?? '')
        : field === 'name'
          ? t.name
          : (t.last_used_at ?? '');
  return [...selected].sort((a, b) => sign * (key(a).localeCompare(key(b)) || a.id - b.id));
}

/** A Grape `Date` parameter: `YYYY-MM-DD` (a timestamp is cut to its day); anything else is `<name> is invalid`. */
export function dateParam(ctx: RequestContext, name: string): string | undefined {
  const value = param(ctx, name);
  if (value === undefined || value === '') return undefined;
  const parsed = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value);
  if (Number.isNaN(parsed)) throw paramError(`${name} is invalid`);
  return new Date(parsed).toISOString().slice(0, 10);
}

/**
 * The expiry a create or rotation asks for, or `fallback` days from today; past the forge's cap (a year) it answers
 * 400 `Expiration date must be before <date>`, as the token model's validation does.
 */
export function expiryParam(ctx: RequestContext, fallbackDays: number): string {
  return cappedExpiry(ctx, dateParam(ctx, 'expires_at'), fallbackDays);
}

function cappedExpiry(ctx: RequestContext, asked: string | undefined, fallbackDays: number): string {
  const now = ctx.state.clock.date();
  const latest = dayAfter(now, MAX_TOKEN_LIFETIME_DAYS);
  const expiry = asked ?? dayAfter(now, fallbackDays);
  if (expiry > latest) throw badRequest(`Expiration date must be before ${latest}`);
  return expiry;
}

/**
 * The forge's `RotateService`: a revoked token is refused (400 `Token already revoked`), else revoked and succeeded
 * by a new token; without `expires_at` the new one lasts a week. The forge's docs say a rotate of an already revoked
 * token revokes its family; its code does so only when such a token authenticates the request (see token-auth.ts).
 * The sandbox does both, so a bot that passes here trips neither.
 */
export function rotateToken(ctx: RequestContext, token: AccessTokenRecord): AccessTokenRecord {
  const tokens = ctx.state.accessTokens;
  const now = ctx.state.clock.date();
  // A malformed date is Grape's to refuse, before the service looks at the token.
  const asked = dateParam(ctx, 'expires_at');
  if (token.revoked) {
    tokens.revokeFamily(token, 'rotated_revoked_token', { method: ctx.method, path: ctx.path }, now);
    throw badRequest('Token already revoked');
  }
  return tokens.rotate(token, ctx.state.nextId('accessToken'), cappedExpiry(ctx, asked, ROTATION_DEFAULT_DAYS), now);
}
