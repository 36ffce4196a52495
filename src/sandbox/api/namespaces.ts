import { boolParam, intParam, notFound, ok, param, type RequestContext } from '../http/context';
import { paginate } from '../http/pagination';
import type { Router } from '../http/router';
import type { GroupRecord, UserRecord } from '../state';
import { canSeeGroup, currentUser, GUEST, groupLevel, MAINTAINER, OWNER } from './access';
import { NamespacePresenter } from './namespaces.presenter';

/** A group, or a user's personal namespace. */
export type Namespace = { kind: 'group'; group: GroupRecord } | { kind: 'user'; user: UserRecord };

/** Namespaces (GitLab's "Namespaces API"). */
export function registerNamespaceRoutes(router: Router): void {
  router
    .get('/namespaces', (ctx) => {
      const user = currentUser(ctx);
      const search = param(ctx, 'search')?.toLowerCase();
      const ownedOnly = boolParam(ctx, 'owned_only') ?? false;
      const topLevelOnly = boolParam(ctx, 'top_level_only') ?? false;
      // Administrators see every namespace; others their own and the groups they belong to.
      let namespaces = allNamespaces(ctx).filter((ns) => {
        if (ns.kind === 'user') return user.is_admin ? !ownedOnly || ns.user.id === user.id : ns.user.id === user.id;
        const level = ctx.state.groupAccessLevel(user, ns.group);
        if (ownedOnly) return level >= OWNER;
        // groupLevel: an administrator sees every group unless a test narrowed their access to this one.
        return groupLevel(ctx.state, user, ns.group) >= GUEST;
      });
      if (search) {
        namespaces = namespaces.filter((ns) => {
          const [name, path] =
            ns.kind === 'group' ? [ns.group.name, ns.group.path] : [ns.user.username, ns.user.username];
          return name.toLowerCase().includes(search) || path.toLowerCase().includes(search);
        });
      }
      if (topLevelOnly) namespaces = namespaces.filter((ns) => ns.kind === 'user' || ns.group.parent_id === null);
      namespaces.sort((a, b) => namespaceId(a) - namespaceId(b));
      return paginate(ctx, namespaces, (ns) => presentNamespace(ctx, ns));
    })
    .get('/namespaces/:namespace/exists', (ctx) => {
      currentUser(ctx);
      const path = ctx.params.namespace ?? '';
      const parentId = intParam(ctx, 'parent_id');
      const taken = (candidate: string): boolean => siblingPaths(ctx, parentId).has(candidate.toLowerCase());
      if (!taken(path)) return ok({ exists: false, suggests: [] });
      let n = 1;
      while (taken(`${path}${n}`)) n += 1;
      return ok({ exists: true, suggests: [`${path}${n}`] });
    })
    .get('/namespaces/:id', (ctx) => ok(presentNamespace(ctx, findVisibleNamespace(ctx, ctx.params.id ?? ''))));
}

/**
 * The namespace `ref` (an id, a group's full path or a username) names, as the forge's `find_namespace!` finds it: a
 * group the caller can see, or a personal namespace of their own (any, for an administrator); else 404 `Namespace`.
 */
export function findVisibleNamespace(ctx: RequestContext, ref: string): Namespace {
  const user = currentUser(ctx);
  const ns = findNamespace(ctx, ref);
  const visible =
    ns !== undefined &&
    (ns.kind === 'user' ? user.is_admin || ns.user.id === user.id : canSeeGroup(ctx.state, user, ns.group));
  if (!ns || !visible) throw notFound('Namespace');
  return ns;
}

export function namespaceId(ns: Namespace): number {
  return ns.kind === 'group' ? ns.group.id : ns.user.namespace_id;
}

function allNamespaces(ctx: RequestContext): Namespace[] {
  return [
    ...[...ctx.state.groups.values()].map((group): Namespace => ({ kind: 'group', group })),
    ...[...ctx.state.users.values()].map((user): Namespace => ({ kind: 'user', user })),
  ];
}

function findNamespace(ctx: RequestContext, ref: string): Namespace | undefined {
  const lower = ref.toLowerCase();
  return allNamespaces(ctx).find((ns) =>
    /^\d+$/.test(ref)
      ? namespaceId(ns) === Number(ref)
      : (ns.kind === 'group' ? ctx.state.groupFullPath(ns.group) : ns.user.username).toLowerCase() === lower,
  );
}

/** Paths already used next to a new namespace: under `parent_id`, or at the top level (groups and users). */
function siblingPaths(ctx: RequestContext, parentId: number | undefined): Set<string> {
  const groups = [...ctx.state.groups.values()].filter((g) => g.parent_id === (parentId ?? null));
  const users = parentId === undefined ? [...ctx.state.users.values()].map((u) => u.username) : [];
  return new Set([...groups.map((g) => g.path), ...users].map((p) => p.toLowerCase()));
}

function presentNamespace(ctx: RequestContext, ns: Namespace): Record<string, unknown> {
  const presenter = new NamespacePresenter(ctx.state, ctx.baseUrl);
  if (ns.kind === 'user') return presenter.userNamespace(ns.user);
  // members_count_with_descendants is shown to group maintainers and owners.
  const showCount = groupLevel(ctx.state, currentUser(ctx), ns.group) >= MAINTAINER;
  return presenter.groupNamespace(ns.group, showCount);
}
