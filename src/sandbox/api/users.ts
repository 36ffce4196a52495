import { SORT_DIRECTIONS } from '../../gitlab/types/common';
import { USER_ORDER_BY, type UserOrderBy } from '../../gitlab/types/users';
import {
  boolParam,
  enumParam,
  forbidden,
  intRouteParam,
  notFound,
  ok,
  param,
  timestampParam,
  type RequestContext,
} from '../http/context';
import { paginate } from '../http/pagination';
import type { Router } from '../http/router';
import type { UserRecord } from '../state';
import { currentUser } from './access';
import { UserPresenter } from './users.presenter';

/** Bots the forge counts as internal (`exclude_internal`); project bots are not among them. */
const INTERNAL_TYPES = new Set(['alert_bot', 'support_bot', 'ghost']);

/** Users and the current user (GitLab's "Users API"). */
export function registerUserRoutes(router: Router): void {
  router
    .get('/users', (ctx) => {
      const caller = currentUser(ctx);
      const users = filterUsers(ctx, caller);
      const presenter = new UserPresenter(ctx.state, ctx.baseUrl);
      const withCustom = caller.is_admin && (boolParam(ctx, 'with_custom_attributes') ?? false);
      return paginate(ctx, users, (u) =>
        caller.is_admin ? presenter.userAdminListItem(u, withCustom) : presenter.userSummary(u),
      );
    })
    .get('/users/:id', (ctx) => {
      const caller = currentUser(ctx);
      const user = ctx.state.users.get(intRouteParam(ctx, 'id'));
      if (!user) throw notFound('User');
      const presenter = new UserPresenter(ctx.state, ctx.baseUrl);
      if (!caller.is_admin) return ok(presenter.userPublic(user));
      return ok(presenter.userAdminSingle(user, boolParam(ctx, 'with_custom_attributes') ?? false));
    })
    .get('/user', (ctx) => ok(new UserPresenter(ctx.state, ctx.baseUrl).currentUser(currentUser(ctx))));
}

function filterUsers(ctx: RequestContext, caller: UserRecord): UserRecord[] {
  const state = ctx.state;
  const externUid = param(ctx, 'extern_uid');
  const provider = param(ctx, 'provider');
  // Looking a user up by external identity is for administrators only; the other admin filters are ignored.
  if (externUid && provider && !caller.is_admin) throw forbidden();

  let users = [...state.users.values()];
  const search = param(ctx, 'search')?.toLowerCase();
  if (search) {
    users = users.filter(
      (u) =>
        u.name.toLowerCase().includes(search) ||
        u.username.toLowerCase().includes(search) ||
        (caller.is_admin ? u.email.toLowerCase().includes(search) : u.email.toLowerCase() === search),
    );
  }
  const username = param(ctx, 'username')?.toLowerCase();
  if (username !== undefined) users = users.filter((u) => u.username.toLowerCase() === username);
  // `active`, `blocked` and `external` only support `true`; `false` filters nothing.
  if (boolParam(ctx, 'active')) users = users.filter((u) => u.state === 'active');
  if (boolParam(ctx, 'blocked')) users = users.filter((u) => u.state === 'blocked');
  if (boolParam(ctx, 'external')) users = users.filter((u) => u.external);
  if (boolParam(ctx, 'exclude_external')) users = users.filter((u) => !u.external);
  if (boolParam(ctx, 'exclude_internal')) users = users.filter((u) => !INTERNAL_TYPES.has(u.user_type));

  let orderBy: UserOrderBy = 'id';
  let sort: 'asc' | 'desc' = 'desc';
  if (caller.is_admin) {
    if (externUid && provider) {
      users = users.filter((u) => u.identities.some((i) => i.provider === provider && i.extern_uid === externUid));
    }
    const twoFactor = param(ctx, 'two_factor');
    if (twoFactor === 'enabled') users = users.filter((u) => u.two_factor_enabled);
    if (twoFactor === 'disabled') users = users.filter((u) => !u.two_factor_enabled);
    if (boolParam(ctx, 'without_projects')) {
      users = users.filter((u) => [...state.projects.values()].every((p) => state.projectAccessLevel(u, p) === 0));
    }
    if (boolParam(ctx, 'admins')) users = users.filter((u) => u.is_admin);
    const before = timestampParam(ctx, 'created_before');
    const after = timestampParam(ctx, 'created_after');
    if (before) users = users.filter((u) => u.created_at < before);
    if (after) users = users.filter((u) => u.created_at > after);
    for (const [key, value] of customAttributeFilters(ctx)) {
      users = users.filter((u) => u.custom_attributes[key] === value);
    }
    orderBy = enumParam(ctx, 'order_by', USER_ORDER_BY) ?? 'id';
    sort = enumParam(ctx, 'sort', SORT_DIRECTIONS) ?? 'desc';
  }
  const field = orderBy === 'updated_at' ? 'created_at' : orderBy;
  return users.sort((a, b) => {
    const x = a[field];
    const y = b[field];
    const order = x < y ? -1 : x > y ? 1 : a.id - b.id;
    return sort === 'asc' ? order : -order;
  });
}

function customAttributeFilters(ctx: RequestContext): [string, string][] {
  const filters: [string, string][] = [];
  for (const [name, value] of ctx.query.entries()) {
    const match = /^custom_attributes\[(.+)\]$/.exec(name);
    if (match) filters.push([match[1], value]);
  }
  const fromBody = ctx.body.custom_attributes;
  if (fromBody && typeof fromBody === 'object' && !Array.isArray(fromBody)) {
    for (const [key, value] of Object.entries(fromBody)) filters.push([key, String(value)]);
  }
  return filters;
}
