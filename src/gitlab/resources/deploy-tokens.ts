import { type Endpoint, endpoint, type PathParam } from '../transport/endpoint';
import type { PageOptions, Paginated } from '../transport/pagination';
import type { Transport } from '../transport/transport';
import { deployTokenShape, newDeployTokenShape } from './shapes';
import type { AccessTokenSource } from './access-tokens';
import type { CreateDeployTokenParams, DeployToken, ListDeployTokensParams, NewDeployToken } from '../types/tokens';

/**
 * GitLab's "Deploy tokens API" (beyond the API specification), for projects (maintainers) and groups (maintainers list,
 * owners create and delete). A deploy token cannot be rotated: a new one is made and the old one deleted.
 */
export class DeployTokensResource<S extends AccessTokenSource> {
  constructor(
    private readonly transport: Transport,
    private readonly source: S,
  ) {}

  private list(id: PathParam): Endpoint {
    return this.source === 'groups' ? endpoint`groups/${id}/deploy_tokens` : endpoint`projects/${id}/deploy_tokens`;
  }

  private one(id: PathParam, tokenId: number): Endpoint {
    return this.source === 'groups'
      ? endpoint`groups/${id}/deploy_tokens/${tokenId}`
      : endpoint`projects/${id}/deploy_tokens/${tokenId}`;
  }

  all(id: PathParam, params: ListDeployTokensParams = {}, page?: PageOptions<DeployToken>): Paginated<DeployToken> {
    return this.transport.paginate<DeployToken>(
      { method: 'GET', endpoint: this.list(id), query: { ...params }, shape: deployTokenShape },
      page,
    );
  }

  show(id: PathParam, tokenId: number): Promise<DeployToken> {
    return this.transport.json<DeployToken>({
      method: 'GET',
      endpoint: this.one(id, tokenId),
      shape: deployTokenShape,
    });
  }

  /** The answer is the only place the value is ever shown. */
  create(id: PathParam, params: CreateDeployTokenParams): Promise<NewDeployToken> {
    return this.transport.json<NewDeployToken>({
      method: 'POST',
      endpoint: this.list(id),
      body: params,
      shape: newDeployTokenShape,
    });
  }

  /** Revokes and deletes the token. */
  async remove(id: PathParam, tokenId: number): Promise<void> {
    await this.transport.request<unknown>({ method: 'DELETE', endpoint: this.one(id, tokenId) });
  }
}
