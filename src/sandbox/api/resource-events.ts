import type { ResourceLabelEventType } from '../../gitlab/types/resource-events';
import { intRouteParam, notFound, ok, type RequestContext } from '../http/context';
import { paginate } from '../http/pagination';
import type { Router } from '../http/router';
import type { IssuableRecord, LabelEventRecord, WeightEventRecord } from '../state';
import { findGroup, findProject } from './access';
import { ResourceEventPresenter } from './resource-events.presenter';

/**
 * Label and weight history (read only), seeded from the world file. Anyone who can see the project (or
 * the group, for epics) may read it; issues and merge requests are addressed by iid, epics by id.
 */
export function registerResourceEventRoutes(router: Router): void {
  const labelRoutes = (
    base: string,
    type: ResourceLabelEventType,
    find: (ctx: RequestContext) => IssuableRecord,
  ): void => {
    router
      .get(`${base}/resource_label_events`, (ctx) => {
        const resource = find(ctx);
        return paginate(ctx, labelEventsOf(ctx, type, resource), (e) => present(ctx).labelEvent(e));
      })
      .get(`${base}/resource_label_events/:event_id`, (ctx) => {
        const resource = find(ctx);
        const event = ctx.state.labelEvents.get(intRouteParam(ctx, 'event_id'));
        if (!event || event.resource_type !== type || event.resource_id !== resource.id) throw notFound();
        return ok(present(ctx).labelEvent(event));
      });
  };
  labelRoutes('/projects/:id/issues/:issue_iid', 'Issue', findIssue);
  labelRoutes('/projects/:id/merge_requests/:merge_request_iid', 'MergeRequest', findMergeRequest);
  labelRoutes('/groups/:id/epics/:epic_id', 'Epic', findEpic);
  router
    .get('/projects/:id/issues/:issue_iid/resource_weight_events', (ctx) => {
      const issue = findIssue(ctx);
      return paginate(ctx, weightEventsOf(ctx, issue), (e) => present(ctx).weightEvent(e));
    })
    .get('/projects/:id/issues/:issue_iid/resource_weight_events/:event_id', (ctx) => {
      const issue = findIssue(ctx);
      const event = ctx.state.weightEvents.get(intRouteParam(ctx, 'event_id'));
      if (!event || event.issue_id !== issue.id) throw notFound();
      return ok(present(ctx).weightEvent(event));
    });
}

function findIssue(ctx: RequestContext): IssuableRecord {
  const project = findProject(ctx);
  const issue = ctx.state.issue(project.id, intRouteParam(ctx, 'issue_iid'));
  if (!issue) throw notFound('Issue');
  return issue;
}

function findMergeRequest(ctx: RequestContext): IssuableRecord {
  const project = findProject(ctx);
  const mr = ctx.state.mergeRequest(project.id, intRouteParam(ctx, 'merge_request_iid'));
  if (!mr) throw notFound('Merge Request');
  return mr;
}

function findEpic(ctx: RequestContext): IssuableRecord {
  const group = findGroup(ctx);
  const epic = ctx.state.epics.get(intRouteParam(ctx, 'epic_id'));
  if (!epic || epic.parent_id !== group.id) throw notFound('Epic');
  return epic;
}

/** Oldest first, as the forge lists history. */
const chronological = <T extends { id: number; created_at: string }>(a: T, b: T): number =>
  a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id - b.id;

function labelEventsOf(
  ctx: RequestContext,
  type: ResourceLabelEventType,
  resource: IssuableRecord,
): LabelEventRecord[] {
  return [...ctx.state.labelEvents.values()]
    .filter((e) => e.resource_type === type && e.resource_id === resource.id)
    .sort(chronological);
}

function weightEventsOf(ctx: RequestContext, issue: IssuableRecord): WeightEventRecord[] {
  return [...ctx.state.weightEvents.values()].filter((e) => e.issue_id === issue.id).sort(chronological);
}

function present(ctx: RequestContext): ResourceEventPresenter {
  return new ResourceEventPresenter(ctx.state, ctx.baseUrl);
}
