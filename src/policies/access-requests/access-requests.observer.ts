import type { ObserveContext, StepContext } from '../../engine/policy';
import { ApiError, NotFoundError } from '../../gitlab/transport/errors';
import { isAdminView } from '../../gitlab/types/users';
import type { AccessRequestsSnapshot, PendingRequest, Requester, SourceSnapshot } from './access-requests.decide';
import type { AccessRequestsConfig } from './access-requests.schema';
import { selectGroups, selectProjects } from '../../engine/discovery';
import { mapLimited } from '../../engine/map-limited';
import { observeTargets } from '../../engine/observe-targets';
import type { RequestTarget } from './access-requests.params';

/**
 * Reading what the access_requests rules need: the pending requests of every configured group and project
 * (streamed, page by page), whether the token is an administrator's, and each requester's user record once per
 * pass, whatever number of groups and projects they asked to join.
 */

/** User records read at once; the client's own cap is shared by every policy, this one is per pass. */
export const USER_READ_CONCURRENCY = 4;

/** Progress is reported every this many user records, so only a large backlog reports at all. */
export const PROGRESS_EVERY = 100;

export async function observeAccessRequests(
  config: AccessRequestsConfig,
  context: ObserveContext,
): Promise<AccessRequestsSnapshot> {
  const { client } = context;
  // Once per pass: the view of every user record below depends on it, and a token may lose its rights any day.
  const me = await client.users.current();
  const admin = isAdminView(me) && me.is_admin === true;

  // Globs resolved through the engine's discovery; each group and project once, explicit ones first as written.
  const groups = config.groups ? await selectGroups(context, config.groups) : [];
  const projects = config.projects ? await selectProjects(context, config.projects, config.include_archived) : [];
  const wanted = [
    ...groups.map((ref) => ({ kind: 'group' as const, ref, listed: config.groups?.names(ref) ?? false })),
    ...projects.map((ref) => ({ kind: 'project' as const, ref, listed: config.projects?.names(ref) ?? false })),
  ];
  // Several groups and projects at once, in the order selected, each on its own: a 403 for a token that may not
  // manage one group's requests, or a 404 for a group the file names that is gone, is that group's, and the pass goes
  // on with the others (ending partial). One a glob found that is gone since discovery drops out with one line.
  const found = await observeTargets(
    context,
    wanted,
    ({ kind, ref, listed }) => ({ target: `${kind} ${ref}`, listed }),
    async ({ kind, ref }): Promise<SourceSnapshot> => ({
      kind,
      ref,
      requests: await pendingRequests(context, kind, ref),
    }),
  );
  const sources = found.filter((source): source is SourceSnapshot => source !== undefined);

  const userIds = [...new Set(sources.flatMap((source) => source.requests.map((request) => request.id)))];
  const users = new Map<number, Requester>();
  let read = 0;
  await mapLimited(userIds, USER_READ_CONCURRENCY, async (id) => {
    try {
      users.set(id, await readUser(context, id));
    } catch (error) {
      // That requester's requests are left this pass (a rule on an unread record never holds); the others go on.
      if (!(error instanceof ApiError)) throw error;
      context.unobserved.record(`user ${id}`, error);
    }
    if (++read % PROGRESS_EVERY === 0) context.progress(`${read}/${userIds.length} requesters read`);
  });
  return { admin, sources, users };
}

/** The pending requests of one group or project, streamed. */
async function pendingRequests(
  context: StepContext,
  kind: SourceSnapshot['kind'],
  ref: string | number,
): Promise<PendingRequest[]> {
  const resource = kind === 'group' ? context.client.groupAccessRequests : context.client.projectAccessRequests;
  const requests: PendingRequest[] = [];
  for await (const request of resource.all(ref)) {
    requests.push({
      id: request.id,
      username: request.username,
      state: request.state,
      requested_at: request.requested_at,
    });
  }
  return requests;
}

/**
 * One request as it stands now, for the precondition of its approval or denial: the snapshot decide needs for it
 * alone (the request and the requester's record read again), or why there is nothing to decide any more (withdrawn,
 * approved or denied by someone else, or made again since).
 */
export async function observeRequest(
  context: StepContext,
  target: RequestTarget,
): Promise<AccessRequestsSnapshot | string> {
  const requests = await pendingRequests(context, target.source, target.id);
  const request = requests.find((candidate) => candidate.id === target.userId);
  if (!request)
    return `the request of user ${target.userId} is no longer pending (approved, denied or withdrawn by someone else)`;
  if (target.requestedAt !== undefined && request.requested_at !== target.requestedAt) {
    return `user ${target.userId} asked again at ${request.requested_at}, after the request decided on (${target.requestedAt})`;
  }
  const user = await readUser(context, request.id);
  // The record's own view says what the token may see now; `admin` only words the reasons.
  const admin = user !== null && isAdminView(user);
  return {
    admin,
    sources: [{ kind: target.source, ref: target.id, requests: [request] }],
    users: new Map([[request.id, user]]),
  };
}

/** The record as the token may see it; null when the forge no longer knows the user (deleted since asking). */
async function readUser(context: StepContext, id: number): Promise<Requester> {
  try {
    return await context.client.users.show(id);
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
}
