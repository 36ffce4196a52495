import type { NamespacesState, ProjectRecord, SeededProject } from './namespaces-state';
import type { PeopleState } from './people-state';
import type { WorldSeeding } from './seeding';
import type { WorldProtectedBranch } from './world';

/** One entry of a protected branch's push/merge/unprotect list: an access level, or a user or group. */
export interface BranchAccessRecord {
  access_level: number | null;
  user_id: number | null;
  group_id: number | null;
}

export interface ProtectedBranchRecord {
  id: number;
  project_id: number;
  /** A branch name or wildcard, matched exactly by the API. */
  name: string;
  push_access_levels: BranchAccessRecord[];
  merge_access_levels: BranchAccessRecord[];
  unprotect_access_levels: BranchAccessRecord[];
  allow_force_push: boolean;
  code_owner_approval_required: boolean;
}

/** The protected branches of every project, by id. */
export class ProtectedBranchesState {
  readonly branches = new Map<number, ProtectedBranchRecord>();

  constructor(
    private readonly people: PeopleState,
    private readonly namespaces: NamespacesState,
  ) {}

  /** A project's protected branch or wildcard by its exact name. */
  branch(projectId: number, name: string): ProtectedBranchRecord | undefined {
    for (const branch of this.branches.values()) {
      if (branch.project_id === projectId && branch.name === name) return branch;
    }
    return undefined;
  }

  // ---- seeding ------------------------------------------------------------------------------------------------

  /** The seeded projects' protected branches; users and groups given access must be seeded already. */
  seed(projects: SeededProject[], seeding: WorldSeeding): void {
    for (const { world: p } of projects)
      p.protected_branches.forEach((b) => seeding.ids.reserve('protectedBranch', b.id));
    for (const { world: p, record } of projects) {
      for (const b of p.protected_branches) this.seedBranch(record, b, seeding);
    }
  }

  private seedBranch(project: ProjectRecord, b: WorldProtectedBranch, seeding: WorldSeeding): void {
    const entries = (level: number, allowed: WorldProtectedBranch['allowed_to_push']): BranchAccessRecord[] => [
      { access_level: level, user_id: null, group_id: null },
      ...allowed.map((entry) => ({
        access_level: null,
        user_id: 'user' in entry ? (this.people.userByUsername(entry.user)?.id ?? null) : null,
        group_id: 'group' in entry ? (this.namespaces.group(entry.group)?.id ?? null) : null,
      })),
    ];
    const branch: ProtectedBranchRecord = {
      id: b.id ?? seeding.ids.next('protectedBranch'),
      project_id: project.id,
      name: b.name,
      push_access_levels: entries(b.push_access_level, b.allowed_to_push),
      merge_access_levels: entries(b.merge_access_level, b.allowed_to_merge),
      unprotect_access_levels: entries(b.unprotect_access_level, b.allowed_to_unprotect),
      allow_force_push: b.allow_force_push,
      code_owner_approval_required: b.code_owner_approval_required,
    };
    this.branches.set(branch.id, branch);
  }
}
