import type { Visibility } from '../gitlab/types/common';
import type { PeopleState, UserRecord } from './people-state';
import { DAY_MS, type WorldSeeding } from './seeding';
import type { ParsedWorld, WorldGroup, WorldProject } from './world';

/**
 * Groups, projects and the namespaces they live in (a group, or a user's personal namespace): lookup by id or full
 * path, and the access levels members inherit down the group chain.
 */

export interface GroupRecord {
  id: number;
  name: string;
  path: string;
  parent_id: number | null;
  description: string;
  visibility: Visibility;
  request_access_enabled: boolean;
  created_at: string;
}

export interface ProjectRecord {
  id: number;
  name: string;
  path: string;
  /** A group id or a user's namespace id. */
  namespace_id: number;
  description: string | null;
  visibility: Visibility;
  request_access_enabled: boolean;
  created_at: string;
  /** Read-only: the forge refuses CI actions and registry deletions (GitLab's archived project policy). */
  archived: boolean;
  default_branch: string;
  last_activity_at: string;
  allowed_agents: { id: number; config_project_id: number }[];
}

/** The world's groups and projects, in file order, with the records seeded from them: the other areas seed from these. */
export interface SeededNamespaces {
  groups: { world: WorldGroup; record: GroupRecord }[];
  projects: SeededProject[];
}
export interface SeededProject {
  world: WorldProject;
  record: ProjectRecord;
}

export class NamespacesState {
  readonly groups = new Map<number, GroupRecord>();
  readonly projects = new Map<number, ProjectRecord>();
  /** Project id → ids of the groups it is shared with. */
  readonly projectGroupLinks = new Map<number, Set<number>>();
  /**
   * The forge's redirect routes of projects: an old full path (lower case) of a moved or renamed project → its id.
   * A project that takes the path drops the redirect, as the forge deletes conflicting redirects.
   */
  readonly projectRedirects = new Map<string, number>();

  constructor(private readonly people: PeopleState) {}

  /**
   * An integer id or a full path, as the API's `:id`. With `followRedirects`, a path no
   * project has now names the project that last left it (the API's `find_project` follows redirect routes).
   */
  project(ref: string | number, options: { followRedirects?: boolean } = {}): ProjectRecord | undefined {
    if (typeof ref === 'number' || /^\d+$/.test(ref)) return this.projects.get(Number(ref));
    const lower = ref.toLowerCase();
    for (const project of this.projects.values())
      if (this.projectFullPath(project).toLowerCase() === lower) return project;
    const redirected = options.followRedirects ? this.projectRedirects.get(lower) : undefined;
    return redirected !== undefined ? this.projects.get(redirected) : undefined;
  }

  /**
   * Moves a project to another namespace or path, keeping its id and everything it holds: the old full path
   * redirects to it, the new one stops redirecting elsewhere.
   */
  moveProject(project: ProjectRecord, to: { namespace_id?: number; path?: string }): void {
    const oldPath = this.projectFullPath(project).toLowerCase();
    project.namespace_id = to.namespace_id ?? project.namespace_id;
    project.path = to.path ?? project.path;
    if (this.projectFullPath(project).toLowerCase() === oldPath) return;
    this.projectRedirects.set(oldPath, project.id);
    this.claimProjectPath(project);
  }

  /** Drops the redirect of the path `project` now has: a project living there wins over a redirect. */
  claimProjectPath(project: ProjectRecord): void {
    this.projectRedirects.delete(this.projectFullPath(project).toLowerCase());
  }

  /** Drops the redirects to a deleted project. */
  forgetProjectRedirects(projectId: number): void {
    for (const [path, id] of this.projectRedirects) if (id === projectId) this.projectRedirects.delete(path);
  }

  group(ref: string | number): GroupRecord | undefined {
    if (typeof ref === 'number' || /^\d+$/.test(ref)) return this.groups.get(Number(ref));
    const lower = ref.toLowerCase();
    for (const group of this.groups.values()) if (this.groupFullPath(group).toLowerCase() === lower) return group;
    return undefined;
  }

  groupFullPath(group: GroupRecord): string {
    const parent = group.parent_id !== null ? this.groups.get(group.parent_id) : undefined;
    return parent ? `${this.groupFullPath(parent)}/${group.path}` : group.path;
  }

  groupFullName(group: GroupRecord): string {
    const parent = group.parent_id !== null ? this.groups.get(group.parent_id) : undefined;
    return parent ? `${this.groupFullName(parent)} / ${group.name}` : group.name;
  }

  /** The group and its ancestors, nearest first. */
  groupChain(group: GroupRecord): GroupRecord[] {
    const chain: GroupRecord[] = [];
    let current: GroupRecord | undefined = group;
    while (current) {
      chain.push(current);
      current = current.parent_id !== null ? this.groups.get(current.parent_id) : undefined;
    }
    return chain;
  }

  /** The group and every subgroup below it, parents before their children. */
  groupTree(group: GroupRecord): GroupRecord[] {
    // One pass over the groups, not one per subgroup: trees of hundreds of generated groups are walked per request.
    const children = new Map<number, GroupRecord[]>();
    for (const g of this.groups.values()) {
      if (g.parent_id === null) continue;
      const siblings = children.get(g.parent_id);
      if (siblings) siblings.push(g);
      else children.set(g.parent_id, [g]);
    }
    const tree = [group];
    for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i].id) ?? []));
    return tree;
  }

  namespaceOwnerUser(namespaceId: number): UserRecord | undefined {
    for (const user of this.people.users.values()) if (user.namespace_id === namespaceId) return user;
    return undefined;
  }

  namespaceFullPath(namespaceId: number): string {
    const group = this.groups.get(namespaceId);
    if (group) return this.groupFullPath(group);
    return this.namespaceOwnerUser(namespaceId)?.username ?? '';
  }

  namespaceName(namespaceId: number): string {
    const group = this.groups.get(namespaceId);
    if (group) return this.groupFullName(group);
    return this.namespaceOwnerUser(namespaceId)?.name ?? '';
  }

  projectFullPath(project: ProjectRecord): string {
    return `${this.namespaceFullPath(project.namespace_id)}/${project.path}`;
  }

  projectFullName(project: ProjectRecord): string {
    return `${this.namespaceName(project.namespace_id)} / ${project.name}`;
  }

  projectsInGroupTree(group: GroupRecord): ProjectRecord[] {
    const ids = new Set(this.groupTree(group).map((g) => g.id));
    return [...this.projects.values()].filter((p) => ids.has(p.namespace_id));
  }

  /** Highest access level of `user` in the group, inherited from ancestor groups as on the forge. */
  groupAccessLevel(user: UserRecord, group: GroupRecord): number {
    return Math.max(
      0,
      ...this.groupChain(group).map((g) => this.people.member('group', g.id, user.id)?.access_level ?? 0),
    );
  }

  /** Highest access level of `user` in the project: direct, through its group chain, or 50 in a personal project. */
  projectAccessLevel(user: UserRecord, project: ProjectRecord): number {
    const direct = this.people.member('project', project.id, user.id)?.access_level ?? 0;
    const group = this.groups.get(project.namespace_id);
    const inherited = group ? this.groupAccessLevel(user, group) : user.namespace_id === project.namespace_id ? 50 : 0;
    return Math.max(direct, inherited);
  }

  // ---- seeding ------------------------------------------------------------------------------------------------

  /** Groups, then the users' personal namespaces, then projects; needs the users seeded. */
  seed(world: ParsedWorld, seeding: WorldSeeding): SeededNamespaces {
    world.groups.forEach((g) => seeding.ids.reserve('namespace', g.id));
    world.projects.forEach((p) => seeding.ids.reserve('project', p.id));
    // Full path (lower case) → namespace id, so that each project finds its namespace without a search of all groups.
    const namespaceIds = new Map<string, number>();
    const groups = world.groups.map((g) => {
      const record = this.seedGroup(g, namespaceIds, seeding);
      namespaceIds.set(this.groupFullPath(record).toLowerCase(), record.id);
      return { world: g, record };
    });
    // Personal namespaces take ids after the groups', from the same sequence as on the forge.
    for (const user of this.people.users.values()) {
      user.namespace_id = seeding.ids.next('namespace');
      namespaceIds.set(user.username.toLowerCase(), user.namespace_id);
    }
    const projects = world.projects.map((p) => ({ world: p, record: this.seedProject(p, namespaceIds, seeding) }));
    // An agent's configuration project may come later in the file than the projects it serves.
    for (const { world: p, record } of projects) {
      record.allowed_agents = p.allowed_agents.map((a) => ({
        id: a.id,
        config_project_id: this.project(a.config_project)?.id ?? 0,
      }));
    }
    return { groups, projects };
  }

  /** The world declares parents before children, so the parent group is already seeded. */
  private seedGroup(g: WorldGroup, namespaceIds: ReadonlyMap<string, number>, seeding: WorldSeeding): GroupRecord {
    const parentId = g.parent !== undefined ? namespaceIds.get(g.parent.toLowerCase()) : undefined;
    const group: GroupRecord = {
      id: g.id ?? seeding.ids.next('namespace'),
      name: g.name ?? g.path,
      path: g.path,
      parent_id: parentId ?? null,
      description: g.description,
      visibility: g.visibility,
      request_access_enabled: g.request_access_enabled,
      created_at: g.created_at ? seeding.time(g.created_at) : seeding.ago(400 * DAY_MS),
    };
    this.groups.set(group.id, group);
    return group;
  }

  private seedProject(
    p: WorldProject,
    namespaceIds: ReadonlyMap<string, number>,
    seeding: WorldSeeding,
  ): ProjectRecord {
    const namespaceId = namespaceIds.get(p.namespace.toLowerCase()) ?? 0;
    const createdAt = p.created_at ? seeding.time(p.created_at) : seeding.ago(200 * DAY_MS);
    const project: ProjectRecord = {
      id: p.id ?? seeding.ids.next('project'),
      name: p.name ?? p.path,
      path: p.path,
      namespace_id: namespaceId,
      description: p.description,
      visibility: p.visibility,
      request_access_enabled: p.request_access_enabled,
      created_at: createdAt,
      archived: p.archived,
      default_branch: p.default_branch,
      last_activity_at: p.last_activity_at ? seeding.time(p.last_activity_at) : createdAt,
      allowed_agents: [],
    };
    this.projects.set(project.id, project);
    const links = p.shared_with_groups
      .map((path) => namespaceIds.get(path.toLowerCase()))
      .filter((gid) => gid !== undefined);
    if (links.length > 0) this.projectGroupLinks.set(project.id, new Set(links));
    return project;
  }
}
