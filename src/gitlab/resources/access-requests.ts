import { type Endpoint, endpoint, type PathParam } from '../transport/endpoint';
import type { PageOptions, Paginated } from '../transport/pagination';
import type { Transport } from '../transport/transport';
import { accessRequestShape } from './shapes';
import type {
  AccessLevelFor,
  AccessRequest,
  AccessRequestSource,
  ApprovedAccessRequest,
  ApproveAccessRequestParams,
} from '../types/access-requests';

/**
 * GitLab's "Group and project access requests API"; one instance for groups and one for projects (same verbs, same
 * shapes). `id` is the group or project ID or full path.
 */
export class AccessRequestsResource<S extends AccessRequestSource> {
  constructor(
    private readonly transport: Transport,
    private readonly source: S,
  ) {}

  // Literal templates per source keep `route` (a metrics label) free of parameters.
  private list(id: PathParam): Endpoint {
    return this.source === 'groups' ? endpoint`groups/${id}/access_requests` : endpoint`projects/${id}/access_requests`;
  }

  private one(id: PathParam, userId: number): Endpoint {
    return this.source === 'groups'
      ? endpoint`groups/${id}/access_requests/${userId}`
      : endpoint`projects/${id}/access_requests/${userId}`;
  }

  all(id: PathParam, page?: PageOptions<AccessRequest>): Paginated<AccessRequest> {
    return this.transport.paginate<AccessRequest>(
      { method: 'GET', endpoint: this.list(id), shape: accessRequestShape },
      page,
    );
  }

  /** Requests access for the caller. */
  request(id: PathParam): Promise<AccessRequest> {
    return this.transport.json<AccessRequest>({ method: 'POST', endpoint: this.list(id) });
  }

  /** Grants membership; `access_level` defaults to 30 (developer) on the forge. */
  approve(
    id: PathParam,
    userId: number,
    params: ApproveAccessRequestParams<S> = {},
  ): Promise<ApprovedAccessRequest<AccessLevelFor<S>>> {
    return this.transport.json<ApprovedAccessRequest<AccessLevelFor<S>>>({
      method: 'PUT',
      endpoint:
        this.source === 'groups'
          ? endpoint`groups/${id}/access_requests/${userId}/approve`
          : endpoint`projects/${id}/access_requests/${userId}/approve`,
      body: params,
    });
  }

  /** Denies (removes) the request. */
  async deny(id: PathParam, userId: number): Promise<void> {
    await this.transport.request<unknown>({ method: 'DELETE', endpoint: this.one(id, userId) });
  }
}
