import type { PolicyContext } from '../../engine/policy';
import { NotFoundError } from '../../gitlab/transport/errors';
import { isAdminView } from '../../gitlab/types/users';
import type { AccessRequestsSnapshot, PendingRequest, Requester, SourceSnapshot } from './access-requests.decide';
import type { AccessRequestsConfig } from './access-requests.schema';
import { selectGroups, selectProjects } from '../../engine/discovery';
import { mapLimited, mapTargets } from '../../engine/map-limited';
import type { GroupSelection, ProjectSelection } from '../../config/project-selection';

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

  // Globs resolved through the engine's discovery; each group and project once, explicit ones first as written.
  const groups = config.groups ? await selectGroups(context, config.groups) : [];
  const projects = config.projects ? await selectProjects(context, config.projects, config.include_archived) : [];
  const wanted = [
    ...groups.map((ref) => ({ kind: 'group' as const, ref, listed: isListed(config.groups, ref) })),
    ...projects.map((ref) => ({ kind: 'project' as const, ref, listed: isListed(config.projects, ref) })),
  ];
  // Several groups and projects at once, in the order selected. Errors (a 403 for a token that may not manage the
  // requests, a 404 for a group the file names that is gone) fail the pass: an operator must see them, and deciding
  // on part of the picture would hide them. One a glob found that is gone since discovery drops out with one line.
  const found = await mapTargets(context, wanted, async ({ kind, ref, listed }): Promise<SourceSnapshot | undefined> => {
    const resource = kind === 'group' ? client.groupAccessRequests : client.projectAccessRequests;
    const requests: PendingRequest[] = [];
    try {
      for await (const request of resource.all(ref)) {
        requests.push({ id: request.id, username: request.username, state: request.state, requested_at: request.requested_at });
      }
    } catch (error) {
      if (!(error instanceof NotFoundError) || listed) throw error;
      context.logger.warn(`${kind} ${ref} is gone (deleted or moved since discovery); left out of this pass`);
      return undefined;
    }
    return { kind, ref, requests };
  });
  const sources = found.filter((source): source is SourceSnapshot => source !== undefined);

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

/** Whether the file names `ref` itself (by id or path), rather than a glob having found it. */
function isListed(selection: ProjectSelection | GroupSelection | undefined, ref: string | number): boolean {
  const wanted = String(ref).toLowerCase();
  return (selection?.explicit ?? []).some((item) => String(item.kind === 'id' ? item.id : item.path).toLowerCase() === wanted);
}
