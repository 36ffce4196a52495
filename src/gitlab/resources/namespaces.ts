import { endpoint, type PathParam } from '../transport/endpoint';
import type { PageOptions, Paginated } from '../transport/pagination';
import type { Transport } from '../transport/transport';
import type { ListNamespacesParams, Namespace, NamespaceExists, NamespaceExistsParams } from '../types/namespaces';

/** GitLab's "Namespaces API". */
export class NamespacesResource {
  constructor(private readonly transport: Transport) {}

  /** Namespaces visible to the caller (administrators see all). */
  all(params: ListNamespacesParams = {}, page?: PageOptions<Namespace>): Paginated<Namespace> {
    return this.transport.paginate<Namespace>(
      { method: 'GET', endpoint: endpoint`namespaces`, query: { ...params } },
      page,
    );
  }

  /** By ID or full path. */
  show(namespace: PathParam): Promise<Namespace> {
    return this.transport.json<Namespace>({ method: 'GET', endpoint: endpoint`namespaces/${namespace}` });
  }

  /** Whether a path is taken, with free suggestions; top-level only unless `parent_id` is given. */
  exists(namespace: string, params: NamespaceExistsParams = {}): Promise<NamespaceExists> {
    return this.transport.json<NamespaceExists>({
      method: 'GET',
      endpoint: endpoint`namespaces/${namespace}/exists`,
      query: { ...params },
    });
  }
}
