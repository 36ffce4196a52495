import { endpoint, type ProjectId } from '../transport/endpoint';
import type { PageOptions, Paginated } from '../transport/pagination';
import type { Transport } from '../transport/transport';
import type {
  EditProtectedBranchParams,
  ListProtectedBranchesParams,
  ProtectBranchParams,
  ProtectedBranch,
} from '../types/protected-branches';

/**
 * GitLab's "Protected branches API", a project's protected branches. `name` is a branch name or a wildcard
 * (`release/*`); it is sent URL-encoded as one path segment (`release%2F*`).
 */
export class ProtectedBranchesResource {
  constructor(private readonly transport: Transport) {}

  all(
    project: ProjectId,
    params: ListProtectedBranchesParams = {},
    page?: PageOptions<ProtectedBranch>,
  ): Paginated<ProtectedBranch> {
    return this.transport.paginate<ProtectedBranch>(
      { method: 'GET', endpoint: endpoint`projects/${project}/protected_branches`, query: { search: params.search } },
      page,
    );
  }

  show(project: ProjectId, name: string): Promise<ProtectedBranch> {
    return this.transport.json<ProtectedBranch>({
      method: 'GET',
      endpoint: endpoint`projects/${project}/protected_branches/${name}`,
    });
  }

  /** Protects a branch or wildcard; one that is already protected is a ConflictError (409). */
  protect(project: ProjectId, params: ProtectBranchParams): Promise<ProtectedBranch> {
    return this.transport.json<ProtectedBranch>({
      method: 'POST',
      endpoint: endpoint`projects/${project}/protected_branches`,
      body: params,
      // Safe to send again after a lost answer: the forge refuses a second protection of the same name with 409, so
      // a repeat never makes two. The retry layer may then repeat it like a PUT (a branch left unprotected after an
      // unprotect is what a caller wants closed at once).
      idempotent: true,
    });
  }

  /** `PATCH`: changes `code_owner_approval_required` (higher tier). */
  edit(project: ProjectId, name: string, params: EditProtectedBranchParams): Promise<ProtectedBranch> {
    return this.transport.json<ProtectedBranch>({
      method: 'PATCH',
      endpoint: endpoint`projects/${project}/protected_branches/${name}`,
      body: params,
    });
  }

  async unprotect(project: ProjectId, name: string): Promise<void> {
    await this.transport.request<unknown>({
      method: 'DELETE',
      endpoint: endpoint`projects/${project}/protected_branches/${name}`,
    });
  }
}
