import { type Endpoint, endpoint, type PathParam } from '../transport/endpoint';
import type { PageOptions, Paginated } from '../transport/pagination';
import type { Transport } from '../transport/transport';
import { newResourceAccessTokenShape, resourceAccessTokenShape } from './shapes';
import type {
  AccessTokenFilters,
  CreateResourceAccessTokenParams,
  NewResourceAccessToken,
  ResourceAccessToken,
  RotateAccessTokenParams,
} from '../types/tokens';

export type AccessTokenSource = 'projects' | 'groups';

/**
 * GitLab's "Project access tokens API" and "Group access tokens API" (beyond the API specification): one instance for
 * each, same verbs and shapes. `id` is the project or group ID or full path. Maintainers manage a project's tokens,
 * owners a group's; anyone else gets 401 (not 403).
 */
export class ResourceAccessTokensResource<S extends AccessTokenSource> {
  constructor(
    private readonly transport: Transport,
    private readonly source: S,
  ) {}

  // Literal templates per source keep `route` (a metrics label) free of parameters.
  private list(id: PathParam): Endpoint {
    return this.source === 'groups' ? endpoint`groups/${id}/access_tokens` : endpoint`projects/${id}/access_tokens`;
  }

  private one(id: PathParam, tokenId: number): Endpoint {
    return this.source === 'groups'
      ? endpoint`groups/${id}/access_tokens/${tokenId}`
      : endpoint`projects/${id}/access_tokens/${tokenId}`;
  }

  all(
    id: PathParam,
    params: AccessTokenFilters = {},
    page?: PageOptions<ResourceAccessToken>,
  ): Paginated<ResourceAccessToken> {
    return this.transport.paginate<ResourceAccessToken>(
      { method: 'GET', endpoint: this.list(id), query: { ...params }, shape: resourceAccessTokenShape },
      page,
    );
  }

  show(id: PathParam, tokenId: number): Promise<ResourceAccessToken> {
    return this.transport.json<ResourceAccessToken>({
      method: 'GET',
      endpoint: this.one(id, tokenId),
      shape: resourceAccessTokenShape,
    });
  }

  /** Makes a bot user with the role and the token; the answer is the only place the value is ever shown. */
  create(id: PathParam, params: CreateResourceAccessTokenParams): Promise<NewResourceAccessToken> {
    return this.transport.json<NewResourceAccessToken>({
      method: 'POST',
      endpoint: this.list(id),
      body: params,
      shape: newResourceAccessTokenShape,
    });
  }

  /** Revokes the token and answers its successor (same bot, same role), value included; never retried. */
  rotate(id: PathParam, tokenId: number, params: RotateAccessTokenParams = {}): Promise<NewResourceAccessToken> {
    const rotate =
      this.source === 'groups'
        ? endpoint`groups/${id}/access_tokens/${tokenId}/rotate`
        : endpoint`projects/${id}/access_tokens/${tokenId}/rotate`;
    return this.transport.json<NewResourceAccessToken>({
      method: 'POST',
      endpoint: rotate,
      body: params,
      shape: newResourceAccessTokenShape,
    });
  }

  async revoke(id: PathParam, tokenId: number): Promise<void> {
    await this.transport.request<unknown>({ method: 'DELETE', endpoint: this.one(id, tokenId) });
  }
}
