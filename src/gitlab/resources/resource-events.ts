import { type Endpoint, endpoint, type PathParam } from '../transport/endpoint';
import type { PageOptions, Paginated } from '../transport/pagination';
import type { Transport } from '../transport/transport';
import type { ResourceLabelEvent, ResourceWeightEvent } from '../types/resource-events';

/** What a label event history belongs to: a project's issue or merge request (by iid), or a group's epic. */
export type LabelEventSource = 'issues' | 'merge_requests' | 'epics';

/**
 * GitLab's "Resource label events API" and "Resource weight events API" (read only): label events of issues, merge
 * requests (`id` is the project) and epics (`id` is the group, top tier). One instance per source, same verbs and
 * shapes.
 */
export class ResourceLabelEventsResource<S extends LabelEventSource> {
  constructor(
    private readonly transport: Transport,
    private readonly source: S,
  ) {}

  // Literal templates per source keep `route` (a metrics label) free of parameters.
  private list(id: PathParam, parent: number): Endpoint {
    switch (this.source) {
      case 'issues':
        return endpoint`projects/${id}/issues/${parent}/resource_label_events`;
      case 'merge_requests':
        return endpoint`projects/${id}/merge_requests/${parent}/resource_label_events`;
      default:
        return endpoint`groups/${id}/epics/${parent}/resource_label_events`;
    }
  }

  private one(id: PathParam, parent: number, eventId: number): Endpoint {
    switch (this.source) {
      case 'issues':
        return endpoint`projects/${id}/issues/${parent}/resource_label_events/${eventId}`;
      case 'merge_requests':
        return endpoint`projects/${id}/merge_requests/${parent}/resource_label_events/${eventId}`;
      default:
        return endpoint`groups/${id}/epics/${parent}/resource_label_events/${eventId}`;
    }
  }

  /** `parent`: the issue or merge request iid, or the epic id. */
  all(id: PathParam, parent: number, page?: PageOptions<ResourceLabelEvent>): Paginated<ResourceLabelEvent> {
    return this.transport.paginate<ResourceLabelEvent>({ method: 'GET', endpoint: this.list(id, parent) }, page);
  }

  show(id: PathParam, parent: number, eventId: number): Promise<ResourceLabelEvent> {
    return this.transport.json<ResourceLabelEvent>({ method: 'GET', endpoint: this.one(id, parent, eventId) });
  }
}

/** Weight events of a project's issue (by iid). */
export class ResourceWeightEventsResource {
  constructor(private readonly transport: Transport) {}

  all(project: PathParam, issueIid: number, page?: PageOptions<ResourceWeightEvent>): Paginated<ResourceWeightEvent> {
    return this.transport.paginate<ResourceWeightEvent>(
      { method: 'GET', endpoint: endpoint`projects/${project}/issues/${issueIid}/resource_weight_events` },
      page,
    );
  }

  show(project: PathParam, issueIid: number, eventId: number): Promise<ResourceWeightEvent> {
    return this.transport.json<ResourceWeightEvent>({
      method: 'GET',
      endpoint: endpoint`projects/${project}/issues/${issueIid}/resource_weight_events/${eventId}`,
    });
  }
}
