import type { ProjectApprovalRule, ProjectApprovalSettings } from '../gitlab/types/approvals';
import type { AccessRequest } from '../gitlab/types/access-requests';
import type { Group } from '../gitlab/types/groups';
import {
  integrationParameters,
  INTEGRATION_EVENT_FLAGS,
  INTEGRATION_SLUGS,
  type IntegrationSlug,
} from '../gitlab/types/integrations';
import type { Job, TraceTail } from '../gitlab/types/jobs';
import type { DeployKey } from '../gitlab/types/keys';
import type { Project, SimpleProject } from '../gitlab/types/projects';
import type { ProtectedBranch } from '../gitlab/types/protected-branches';
import type { RegistryRepository, RegistryTag } from '../gitlab/types/registry';
import { Redactor } from '../logging/redact';
import type { World } from '../sandbox/world';
import type { Answer } from './recording-client';
import { type PeopleFacts, RecordedPeople } from './recorded-people';

/**
 * Pure: the world a policy's reads describe, in the sandbox's world format. Projects, groups and users are known by
 * the answers of observe and of the reads that complete them (a project's record, a namespace's parent groups, a user
 * named by id); each part of the world holds what an answer said, keeping the forge's ids and times, so that the
 * sandbox answers the same reads the same way. Secrets never enter it: integration secrets and the token are
 * replaced, job log tails are redacted as logs are.
 */

/** What replaces each secret an integration holds; the forge masks or leaves them out, and a test never needs them. */
export const REPLACED_SECRET = 'replaced-by-forgewarden-record';
/** The recording token's user gets this stand-in, so `forgewarden sandbox --world` serves the world to someone. */
export const RECORDED_TOKEN = 'recorded-world-token';

type WorldProject = NonNullable<World['projects']>[number];
type WorldGroup = NonNullable<World['groups']>[number];
type WorldPipeline = NonNullable<WorldProject['pipelines']>[number];
type WorldJob = NonNullable<WorldPipeline['jobs']>[number];

/** Refs the completing reads could not read (gone, hidden): they stay out of the world, and are asked for no more. */
export interface Unreadable {
  readonly projects: Set<string>;
  readonly groups: Set<string>;
  readonly users: Set<number>;
}

/** What a project ref (an id or a path, as a policy names it) is, once read. */
const refKey = (ref: unknown): string => String(ref).toLowerCase();

export class RecordedWorld {
  readonly people: RecordedPeople;
  /** Every project read, by id; and each ref (id or path) a read named, to its id once known. */
  private readonly projects = new Map<number, Project | SimpleProject>();
  private readonly projectRefs = new Map<string, number | undefined>();
  private readonly groups = new Map<number, Group>();
  private readonly groupRefs = new Map<string, number | undefined>();
  private readonly redactor = new Redactor();

  constructor(
    private readonly answers: readonly Answer[],
    people: PeopleFacts,
    unreadable: Unreadable = { projects: new Set(), groups: new Set(), users: new Set() },
  ) {
    this.people = new RecordedPeople(people, unreadable.users);
    for (const answer of answers) this.learn(answer);
    for (const ref of unreadable.projects) this.projectRefs.set(refKey(ref), -1);
    for (const ref of unreadable.groups) this.groupRefs.set(refKey(ref), -1);
  }

  /** A project or group read to complete the world (its record, a parent), or a user named by id. */
  addProject(ref: unknown, project: Project): void {
    this.projects.set(project.id, project);
    // A personal project's namespace is its owner's.
    if (project.namespace.kind === 'user' && project.owner) this.people.named({ ...project.owner });
    this.projectRefs.set(refKey(ref), project.id);
    this.projectRefs.set(refKey(project.id), project.id);
    this.projectRefs.set(refKey(project.path_with_namespace), project.id);
  }

  addGroup(ref: unknown, group: Group): void {
    this.groups.set(group.id, group);
    for (const key of [ref, group.id, group.full_path]) this.groupRefs.set(refKey(key), group.id);
  }

  /** The projects and groups still to read: refs named but not read, full records of listed projects, parent groups. */
  missing(maxProjects: number): { projects: unknown[]; groups: unknown[]; users: number[]; cut: number } {
    const projects: unknown[] = [];
    let known = [...this.projects.values()].filter((project) => 'visibility' in project).length;
    let cut = 0;
    const wanted = (ref: unknown) => {
      if (known >= maxProjects) cut++;
      else {
        projects.push(ref);
        known++;
      }
    };
    for (const [ref, id] of this.projectRefs) if (id === undefined) wanted(ref);
    for (const project of this.projects.values())
      if (!('visibility' in project) && this.projectRefs.get(refKey(project.id)) !== -1) wanted(project.id);
    const groups = new Set<string>();
    for (const [ref, id] of this.groupRefs) if (id === undefined) groups.add(ref);
    const paths = [
      ...this.fullProjects().map((project) => project.namespace.full_path),
      ...[...this.groups.values()].map((group) => group.full_path),
    ];
    for (const path of paths) {
      const segments = path.split('/');
      for (let end = 1; end <= segments.length; end++) {
        const ancestor = segments.slice(0, end).join('/');
        if (!this.groupRefs.has(refKey(ancestor)) && !this.people.isUser(ancestor)) groups.add(ancestor);
      }
    }
    return { projects, groups: [...groups], users: this.people.missing(), cut };
  }

  private fullProjects(): Project[] {
    return [...this.projects.values()].filter(
      (project): project is Project => 'visibility' in project && this.projectRefs.get(refKey(project.id)) !== -1,
    );
  }

  private projectId(ref: unknown): number | undefined {
    const id = this.projectRefs.get(refKey(ref));
    return id === undefined || id < 0 ? undefined : id;
  }

  private learn(answer: Answer): void {
    const { resource, method, args, value } = answer;
    const [first] = args;
    const project = (ref: unknown) => this.projectRefs.has(refKey(ref)) || this.projectRefs.set(refKey(ref), undefined);
    const group = (ref: unknown) => this.groupRefs.has(refKey(ref)) || this.groupRefs.set(refKey(ref), undefined);
    if (resource === 'projects' && method === 'show') this.addProject(first, value as Project);
    else if (resource === 'projects') {
      const listed = value as SimpleProject;
      if (!this.projects.has(listed.id)) this.projects.set(listed.id, listed);
      group(first);
    } else if (resource === 'groups' && method === 'show') this.addGroup(first, value as Group);
    else if (resource === 'groups') {
      this.addGroup((value as Group).id, value as Group);
      group(first);
    } else if (resource === 'users' || resource === 'sshKeys') this.people.learn(answer);
    else if (resource === 'groupAccessRequests') {
      this.people.learn(answer);
      group(first);
    } else if (resource === 'registry' && method === 'allForGroup') {
      group(first);
      project((value as RegistryRepository).project_id);
    } else {
      // Every other read is of a project, named first (an id or a path).
      if (resource === 'projectAccessRequests') this.people.learn(answer);
      project(first);
    }
    // Users and groups given access by id must be in the world too.
    if (resource === 'protectedBranches') {
      const branch = value as ProtectedBranch;
      for (const entry of [
        ...branch.push_access_levels,
        ...branch.merge_access_levels,
        ...(branch.unprotect_access_levels ?? []),
      ]) {
        if (entry.user_id != null) this.people.username(entry.user_id);
        if (entry.group_id != null) group(entry.group_id);
      }
    }
    if (resource === 'projectApprovalRules') for (const found of (value as ProjectApprovalRule).groups) group(found.id);
  }

  /** The world: users first (the token's own first of all), then groups parents first, projects, deploy keys. */
  build(now: string, options: { readonly anonymise: boolean }): World {
    const projects = this.fullProjects().sort((a, b) => a.id - b.id);
    const groupPaths = new Map([...this.groups.values()].map((group) => [group.id, group.full_path] as const));
    const inWorld = new Set(projects.map((project) => project.id));
    const worldProjects = projects.map((project) => this.project(project, groupPaths));
    const deployKeys = this.deployKeys(inWorld);
    return {
      now,
      users: this.people.users(options.anonymise),
      groups: [...this.groups.values()]
        .filter((group) => this.groupRefs.get(refKey(group.id)) !== -1)
        .sort((a, b) => a.full_path.split('/').length - b.full_path.split('/').length || a.id - b.id)
        .map((group) => this.group(group)),
      projects: worldProjects,
      ...(deployKeys.length > 0 ? { deploy_keys: deployKeys } : {}),
    };
  }

  private of(resource: string, method: string, projectId?: number): Answer[] {
    return this.answers.filter(
      (answer) =>
        answer.resource === resource &&
        answer.method === method &&
        (projectId === undefined || this.projectId(answer.args[0]) === projectId),
    );
  }

  private group(group: Group): WorldGroup {
    const parent = group.full_path.includes('/')
      ? group.full_path.slice(0, group.full_path.lastIndexOf('/'))
      : undefined;
    const requests = this.answers
      .filter(
        (answer) =>
          answer.resource === 'groupAccessRequests' && this.groupRefs.get(refKey(answer.args[0])) === group.id,
      )
      .map((answer) => answer.value as AccessRequest);
    return {
      id: group.id,
      path: group.path,
      name: group.name,
      ...(parent !== undefined ? { parent } : {}),
      description: group.description ?? '',
      visibility: group.visibility,
      request_access_enabled: group.request_access_enabled,
      created_at: group.created_at,
      members: this.people.memberships('group', group.id),
      access_requests: requests.map((request) => ({ user: request.username, requested_at: request.requested_at })),
    };
  }

  private project(project: Project, groupPaths: ReadonlyMap<number, string>): WorldProject {
    const id = project.id;
    const requests = this.of('projectAccessRequests', 'all', id).map((answer) => answer.value as AccessRequest);
    return {
      id,
      path: project.path,
      namespace: project.namespace.full_path,
      name: project.name,
      description: project.description,
      visibility: project.visibility,
      request_access_enabled: project.request_access_enabled,
      created_at: project.created_at,
      archived: project.archived,
      ...(project.default_branch ? { default_branch: project.default_branch } : {}),
      last_activity_at: project.last_activity_at,
      members: this.people.memberships('project', id),
      access_requests: requests.map((request) => ({ user: request.username, requested_at: request.requested_at })),
      pipelines: this.pipelines(id),
      registry: this.registry(id),
      protected_branches: this.protectedBranches(id, groupPaths),
      ...this.approvals(id, groupPaths),
      integrations: this.integrations(id),
    };
  }

  /** Jobs by pipeline; a job listed with another pipeline's is of its child pipeline; older attempts of a name are retried. */
  private pipelines(projectId: number): WorldPipeline[] {
    const jobs = new Map<number, Job>();
    const parents = new Map<number, number>();
    for (const answer of [
      ...this.of('jobs', 'all', projectId),
      ...this.of('jobs', 'show', projectId),
      ...this.of('jobs', 'allForPipeline', projectId),
    ]) {
      const job = answer.value as Job;
      jobs.set(job.id, job);
      const listedFor = answer.method === 'allForPipeline' ? Number(answer.args[1]) : undefined;
      if (listedFor !== undefined && listedFor !== job.pipeline.id) parents.set(job.pipeline.id, listedFor);
    }
    const newest = new Map<string, number>();
    for (const job of jobs.values()) {
      const key = `${job.pipeline.id}:${job.name}`;
      newest.set(key, Math.max(newest.get(key) ?? 0, job.id));
    }
    const logs = new Map(
      this.of('jobs', 'traceTail', projectId).map(
        (answer) => [Number(answer.args[1]), answer.value as TraceTail] as const,
      ),
    );
    const pipelines = new Map<number, WorldPipeline & { jobs: WorldJob[] }>();
    for (const job of [...jobs.values()].sort((a, b) => a.id - b.id)) {
      let pipeline = pipelines.get(job.pipeline.id);
      if (!pipeline) {
        const parent = parents.get(job.pipeline.id);
        pipeline = {
          id: job.pipeline.id,
          ref: job.ref,
          tag: job.tag,
          ...(/^[0-9a-f]{40}$/.test(job.pipeline.sha) ? { sha: job.pipeline.sha } : {}),
          ...(parent !== undefined ? { parent_pipeline: parent } : {}),
          jobs: [],
        };
        pipelines.set(job.pipeline.id, pipeline);
      }
      const log = logs.get(job.id);
      const failureReason = (job as Job & { failure_reason?: string }).failure_reason;
      pipeline.jobs.push({
        id: job.id,
        name: job.name,
        stage: job.stage,
        status: job.status,
        allow_failure: job.allow_failure,
        created_at: job.created_at,
        started_at: job.started_at,
        finished_at: job.finished_at,
        retried: newest.get(`${job.pipeline.id}:${job.name}`) !== job.id,
        ...(job.user ? { user: job.user.username } : {}),
        ...(failureReason !== undefined ? { failure_reason: failureReason } : {}),
        ...(log?.found ? { log: this.redactor.redactText(log.text) } : {}),
        tag_list: job.tag_list ?? [],
      });
      if (job.user) this.people.named({ ...job.user });
    }
    // A parent's own pipeline holds no job the reads saw: it is declared too, for its child to name it.
    for (const parent of parents.values()) if (!pipelines.has(parent)) pipelines.set(parent, { id: parent, jobs: [] });
    return [...pipelines.values()].sort(
      (a, b) =>
        (a.parent_pipeline !== undefined ? 1 : 0) - (b.parent_pipeline !== undefined ? 1 : 0) ||
        (a.id ?? 0) - (b.id ?? 0),
    );
  }

  private registry(projectId: number): NonNullable<WorldProject['registry']> {
    const repositories = new Map<number, RegistryRepository>();
    for (const answer of [...this.of('registry', 'all'), ...this.of('registry', 'allForGroup')]) {
      const repository = answer.value as RegistryRepository;
      if (repository.project_id === projectId) repositories.set(repository.id, repository);
    }
    return [...repositories.values()].map((repository) => {
      const detail = new Map(
        this.answers
          .filter(
            (answer) =>
              answer.resource === 'registry' && answer.method === 'showTag' && answer.args[1] === repository.id,
          )
          .map((answer) => [(answer.value as RegistryTag).name, answer.value as RegistryTag] as const),
      );
      const names = this.answers.filter(
        (answer) => answer.resource === 'registry' && answer.method === 'allTags' && answer.args[1] === repository.id,
      );
      return {
        id: repository.id,
        name: repository.name,
        created_at: repository.created_at,
        tags: names.map((answer) => {
          const name = (answer.value as { name: string }).name;
          const tag = detail.get(name);
          return {
            name,
            created_at: tag?.created_at ?? null,
            ...(tag && /^sha256:[0-9a-f]{64}$/.test(tag.digest)
              ? { digest: tag.digest, total_size: tag.total_size }
              : {}),
          };
        }),
      };
    });
  }

  private protectedBranches(
    projectId: number,
    groupPaths: ReadonlyMap<number, string>,
  ): NonNullable<WorldProject['protected_branches']> {
    return this.of('protectedBranches', 'all', projectId).map((answer) => {
      const branch = answer.value as ProtectedBranch;
      const entries = (list: ProtectedBranch['push_access_levels']) => ({
        level:
          list.find((entry) => entry.access_level !== null && entry.user_id == null && entry.group_id == null)
            ?.access_level ?? 40,
        allowed: list.flatMap((entry): Array<{ user: string } | { group: string }> => {
          const user = entry.user_id != null ? this.people.username(entry.user_id) : undefined;
          const group = entry.group_id != null ? groupPaths.get(entry.group_id) : undefined;
          return user !== undefined ? [{ user }] : group !== undefined ? [{ group }] : [];
        }),
      });
      const push = entries(branch.push_access_levels);
      const merge = entries(branch.merge_access_levels);
      const unprotect = entries(branch.unprotect_access_levels ?? []);
      return {
        id: branch.id,
        name: branch.name,
        push_access_level: push.level as 0,
        merge_access_level: merge.level as 0,
        unprotect_access_level: unprotect.level as 0,
        allow_force_push: branch.allow_force_push,
        code_owner_approval_required: branch.code_owner_approval_required ?? false,
        allowed_to_push: push.allowed,
        allowed_to_merge: merge.allowed,
        allowed_to_unprotect: unprotect.allowed,
      };
    });
  }

  private approvals(
    projectId: number,
    groupPaths: ReadonlyMap<number, string>,
  ): Pick<WorldProject, 'approval_settings' | 'approval_rules'> {
    const [settings] = this.of('projectApprovalSettings', 'show', projectId).map(
      (answer) => answer.value as ProjectApprovalSettings,
    );
    const rules = this.of('projectApprovalRules', 'all', projectId).map(
      (answer) => answer.value as ProjectApprovalRule,
    );
    const branchNames = new Map(
      this.of('protectedBranches', 'all', projectId).map(
        (answer) => [(answer.value as ProtectedBranch).id, (answer.value as ProtectedBranch).name] as const,
      ),
    );
    for (const rule of rules) for (const user of rule.users) this.people.named({ ...user });
    return {
      ...(settings
        ? {
            approval_settings: {
              approvals_before_merge: settings.approvals_before_merge,
              reset_approvals_on_push: settings.reset_approvals_on_push,
              disable_overriding_approvers_per_merge_request: settings.disable_overriding_approvers_per_merge_request,
              merge_requests_author_approval: settings.merge_requests_author_approval,
              merge_requests_disable_committers_approval: settings.merge_requests_disable_committers_approval,
              require_password_to_approve: settings.require_password_to_approve,
            },
          }
        : {}),
      approval_rules: rules.map((rule) => ({
        id: rule.id,
        name: rule.name,
        rule_type: rule.rule_type,
        approvals_required: rule.approvals_required,
        users: rule.users.map((user) => user.username),
        groups: rule.groups.map((group) => groupPaths.get(group.id) ?? group.full_path),
        protected_branches: (rule.protected_branches ?? []).flatMap((branch) => branchNames.get(branch.id) ?? []),
      })),
    };
  }

  /** Each integration as listed and read; its secret parameters replaced, whatever the forge showed of them. */
  private integrations(projectId: number): NonNullable<WorldProject['integrations']> {
    const listed = new Map(
      this.of('integrations', 'all', projectId).flatMap((answer) =>
        (answer.value as Array<Record<string, unknown>>).map((entry) => [String(entry.slug), entry] as const),
      ),
    );
    const shown = new Map(
      this.of('integrations', 'show', projectId).map(
        (answer) => [String(answer.args[1]), answer.value as Record<string, unknown>] as const,
      ),
    );
    const slugs = INTEGRATION_SLUGS.filter((slug) => listed.has(slug) || shown.has(slug));
    return slugs.map((slug: IntegrationSlug) => {
      const answer = { ...listed.get(slug), ...shown.get(slug) };
      const parameters = integrationParameters(slug);
      const properties: Record<string, string | number | boolean> = {};
      const seen = (shown.get(slug)?.properties ?? {}) as Record<string, unknown>;
      for (const [name, parameter] of Object.entries(parameters)) {
        if (name === 'active' || (INTEGRATION_EVENT_FLAGS as readonly string[]).includes(name)) continue;
        const value = seen[name];
        if (parameter.secret) {
          if (value !== undefined || parameter.required) properties[name] = REPLACED_SECRET;
        } else if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
          properties[name] = value;
      }
      const events = Object.fromEntries(
        INTEGRATION_EVENT_FLAGS.flatMap((flag) => (typeof answer[flag] === 'boolean' ? [[flag, answer[flag]]] : [])),
      );
      return { id: Number(answer.id), slug, active: answer.active === true, events, properties };
    });
  }

  private deployKeys(inWorld: ReadonlySet<number>): NonNullable<World['deploy_keys']> {
    const keys = new Map<number, { key: DeployKey; projects: { project: string; can_push: boolean }[] }>();
    for (const answer of this.of('deployKeys', 'all')) {
      const projectId = this.projectId(answer.args[0]);
      const project = projectId !== undefined && inWorld.has(projectId) ? this.projects.get(projectId) : undefined;
      if (!project) continue;
      const key = answer.value as DeployKey;
      const entry = keys.get(key.id) ?? { key, projects: [] };
      entry.projects.push({ project: project.path_with_namespace, can_push: key.can_push });
      keys.set(key.id, entry);
    }
    return [...keys.values()].map(({ key, projects }) => ({
      id: key.id,
      title: key.title,
      key: key.key,
      created_at: key.created_at,
      projects,
    }));
  }
}
