import type { PolicyContext } from '../../engine/policy';
import { NotFoundError } from '../../gitlab/transport/errors';
import { isAdminView } from '../../gitlab/types/users';
import type { AccessRequestsSnapshot, PendingRequest, Requester, SourceSnapshot } from './access-requests.decide';
import type { SourceKind } from './access-requests.params';
import type { AccessRequestsConfig } from './access-requests.schema';
import { mapLimited } from '../../engine/map-limited';

/**
 * Reading what the access_requests rules need: the pending requests of every configured group and project
 * (streamed, page by page), whether the token is an administrator's, and each requester's user record once per
 * pass, whatever number of groups and projects they asked to join.
 */

/** User records read at once; the client's own cap is shared by every policy, this one is per pass. */
export const USER_READ_CONCURRENCY = 4;

/** Progress is reported every this many user records, so only a large backlog reports at all. */
export const PROGRESS_EVERY = 100;

export async function observeAccessRequests(config: AccessRequestsConfig, context: PolicyContext): Promise<AccessRequestsSnapshot> {
  const { client } = context;
  // Once per pass: the view of every user record below depends on it, and a token may lose its rights any day.
  const me = await client.users.current();
  const admin = isAdminView(me) && me.is_admin === true;

  // A group listed twice is read once; its requests would otherwise get two decisions with one key.
  const wanted = new Map<string, { kind: SourceKind; ref: SourceSnapshot['ref'] }>();
  for (const ref of config.groups ?? []) if (!wanted.has(`group:${ref}`)) wanted.set(`group:${ref}`, { kind: 'group', ref });
  for (const ref of config.projects ?? []) if (!wanted.has(`project:${ref}`)) wanted.set(`project:${ref}`, { kind: 'project', ref });
  // Several groups and projects at once, in the order configured. Errors (a 403 for a token that may not manage the
  // requests, a 404 for a group that is gone) fail the pass: an operator must see them, and deciding on part of the
  // picture would hide them.
  const sources = await mapLimited([...wanted.values()], context.concurrency ?? 1, async ({ kind, ref }): Promise<SourceSnapshot> => {
    const resource = kind === 'group' ? client.groupAccessRequests : client.projectAccessRequests;
    const requests: PendingRequest[] = [];
    for await (const request of resource.all(ref)) {
      requests.push({ id: request.id, username: request.username, state: request.state, requested_at: request.requested_at });
    }
    return { kind, ref, requests };
  });

  const userIds = [...new Set(sources.flatMap((source) => source.requests.map((request) => request.id)))];
  const users = new Map<number, Requester>();
  await mapLimited(userIds, USER_READ_CONCURRENCY, async (id) => {
    users.set(id, await readUser(context, id));
    if (users.size % PROGRESS_EVERY === 0) context.progress(`${users.size}/${userIds.length} requesters read`);
  });
  return { admin, sources, users };
}

/** The record as the token may see it; null when the forge no longer knows the user (deleted since asking). */
async function readUser(context: PolicyContext, id: number): Promise<Requester> {
  try {
    return await context.client.users.show(id);
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
}
