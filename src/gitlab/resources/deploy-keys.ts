import { endpoint, type ProjectId } from '../transport/endpoint';
import type { PageOptions, Paginated } from '../transport/pagination';
import type { Transport } from '../transport/transport';
import { createdDeployKeyShape, deployKeyShape } from './shapes';
import type { CreateDeployKeyParams, DeployKey, EditDeployKeyParams, InstanceDeployKey } from '../types/keys';

/** GitLab's "Deploy keys API". */
export class DeployKeysResource {
  constructor(private readonly transport: Transport) {}

  /** Every deploy key of the instance (administrators only), with the projects each is enabled on; no `can_push` of their own. */
  allForInstance(page?: PageOptions<InstanceDeployKey>): Paginated<InstanceDeployKey> {
    return this.transport.paginate<InstanceDeployKey>({ method: 'GET', endpoint: endpoint`deploy_keys` }, page);
  }

  all(project: ProjectId, page?: PageOptions<DeployKey>): Paginated<DeployKey> {
    return this.transport.paginate<DeployKey>(
      { method: 'GET', endpoint: endpoint`projects/${project}/deploy_keys`, shape: deployKeyShape },
      page,
    );
  }

  show(project: ProjectId, keyId: number): Promise<DeployKey> {
    return this.transport.json<DeployKey>({
      method: 'GET',
      endpoint: endpoint`projects/${project}/deploy_keys/${keyId}`,
      shape: deployKeyShape,
    });
  }

  create(project: ProjectId, params: CreateDeployKeyParams): Promise<DeployKey> {
    return this.transport.json<DeployKey>({
      method: 'POST',
      endpoint: endpoint`projects/${project}/deploy_keys`,
      body: params,
      shape: createdDeployKeyShape,
    });
  }

  edit(project: ProjectId, keyId: number, params: EditDeployKeyParams): Promise<DeployKey> {
    return this.transport.json<DeployKey>({
      method: 'PUT',
      endpoint: endpoint`projects/${project}/deploy_keys/${keyId}`,
      body: params,
    });
  }

  /** Removes the key from the project; the forge deletes it outright when no other project uses it. */
  async remove(project: ProjectId, keyId: number): Promise<void> {
    await this.transport.request<unknown>({
      method: 'DELETE',
      endpoint: endpoint`projects/${project}/deploy_keys/${keyId}`,
    });
  }

  /** Enables an existing key (from another project) on this one. */
  enable(project: ProjectId, keyId: number): Promise<DeployKey> {
    return this.transport.json<DeployKey>({
      method: 'POST',
      endpoint: endpoint`projects/${project}/deploy_keys/${keyId}/enable`,
    });
  }
}
