import { type Endpoint, endpoint, type PathParam } from '../transport/endpoint';
import type { PageOptions, Paginated } from '../transport/pagination';
import type { Transport } from '../transport/transport';
import { ciVariableShape } from './shapes';
import type { AccessTokenSource } from './access-tokens';
import type { CiVariable, CiVariableFilter, CreateCiVariableParams, EditCiVariableParams } from '../types/variables';

/**
 * GitLab's "Project-level CI/CD variables API" and "Group-level CI/CD variables API" (beyond the API specification):
 * maintainers manage a project's variables, owners a group's. Values travel in JSON bodies only, never in a URL.
 */
export class CiVariablesResource<S extends AccessTokenSource> {
  constructor(
    private readonly transport: Transport,
    private readonly source: S,
  ) {}

  private list(id: PathParam): Endpoint {
    return this.source === 'groups' ? endpoint`groups/${id}/variables` : endpoint`projects/${id}/variables`;
  }

  private one(id: PathParam, key: string): Endpoint {
    return this.source === 'groups'
      ? endpoint`groups/${id}/variables/${key}`
      : endpoint`projects/${id}/variables/${key}`;
  }

  all(id: PathParam, page?: PageOptions<CiVariable>): Paginated<CiVariable> {
    return this.transport.paginate<CiVariable>(
      { method: 'GET', endpoint: this.list(id), shape: ciVariableShape },
      page,
    );
  }

  show(id: PathParam, key: string, filter: CiVariableFilter = {}): Promise<CiVariable> {
    return this.transport.json<CiVariable>({
      method: 'GET',
      endpoint: this.one(id, key),
      query: filterQuery(filter),
      shape: ciVariableShape,
    });
  }

  /** A key already used in the same environment scope is a ValidationError (`(KEY) has already been taken`). */
  create(id: PathParam, params: CreateCiVariableParams): Promise<CiVariable> {
    return this.transport.json<CiVariable>({
      method: 'POST',
      endpoint: this.list(id),
      body: params,
      shape: ciVariableShape,
    });
  }

  /** `filter` picks among variables sharing the key; `params.environment_scope` moves the one picked. */
  edit(id: PathParam, key: string, params: EditCiVariableParams, filter: CiVariableFilter = {}): Promise<CiVariable> {
    return this.transport.json<CiVariable>({
      method: 'PUT',
      endpoint: this.one(id, key),
      query: filterQuery(filter),
      body: params,
      shape: ciVariableShape,
    });
  }

  async remove(id: PathParam, key: string, filter: CiVariableFilter = {}): Promise<void> {
    await this.transport.request<unknown>({
      method: 'DELETE',
      endpoint: this.one(id, key),
      query: filterQuery(filter),
    });
  }
}

/** `filter[environment_scope]=…` in the query, where every forge version reads it. */
function filterQuery(filter: CiVariableFilter): { filter?: Record<string, string> } {
  return filter.environment_scope === undefined ? {} : { filter: { environment_scope: filter.environment_scope } };
}
