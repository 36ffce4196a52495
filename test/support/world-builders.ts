import type { World } from '../../src/sandbox/world';

/**
 * Building worlds in code, for tests that need thousands of records (2,000 tags, 250 jobs) or a small known
 * world. Every builder returns plain world-file input, so the result goes through the same validation as a file.
 */

type Input<T> = NonNullable<T>;
export type UserInput = Input<World['users']>[number];
export type GroupInput = Input<World['groups']>[number];
export type ProjectInput = Input<World['projects']>[number];
export type PipelineInput = Input<ProjectInput['pipelines']>[number];
export type JobInput = Input<PipelineInput['jobs']>[number];
export type RepositoryInput = Input<ProjectInput['registry']>[number];
export type TagInput = Input<RepositoryInput['tags']>[number];

export const ADMIN_TOKEN = 'glpat-sandbox-admin-token';
export const USER_TOKEN = 'glpat-sandbox-user-token';
export const MAINTAINER_TOKEN = 'glpat-sandbox-maintainer-token';
export const OUTSIDER_TOKEN = 'glpat-sandbox-outsider-token';

/** The fixed start of the clock in built worlds, so timestamps in tests are predictable. */
export const BASE_NOW = '2025-06-02T12:00:00.000Z';

/**
 * A small world: admin `root`, maintainer `mia` and developer `alice` in group `acme`, outsider `olaf` with no
 * membership, private projects `acme/api` (id 1) and `acme/web` (id 2). Pass `projects` etc. to replace parts.
 */
export function baseWorld(overrides: Partial<World> = {}): World {
  return {
    now: BASE_NOW,
    users: [
      { id: 1, username: 'root', name: 'Administrator', email: 'root@acme.test', admin: true, tokens: [ADMIN_TOKEN] },
      { id: 2, username: 'mia', name: 'Mia Maintainer', email: 'mia@acme.test', tokens: [MAINTAINER_TOKEN] },
      { id: 3, username: 'alice', name: 'Alice Developer', email: 'alice@acme.test', tokens: [USER_TOKEN] },
      { id: 4, username: 'olaf', name: 'Olaf Outsider', email: 'olaf@example.org', tokens: [OUTSIDER_TOKEN] },
    ],
    groups: [acmeGroup()],
    projects: [apiProject(), webProject()],
    ...overrides,
  };
}

/** Group acme (10) of baseWorld(), mia its maintainer and alice a developer, with `fields` merged in. */
export function acmeGroup(fields: Partial<GroupInput> = {}): GroupInput {
  return {
    id: 10,
    path: 'acme',
    name: 'Acme',
    members: [
      { user: 'mia', access_level: 'maintainer' },
      { user: 'alice', access_level: 'developer' },
    ],
    ...fields,
  };
}

/** Project acme/`path` with `fields` merged in, for replacing one project of baseWorld(). */
export function aProject(path: string, fields: Partial<ProjectInput> = {}): ProjectInput {
  return { path, namespace: 'acme', ...fields };
}

/** Project acme/api (1) of baseWorld(), with `fields` merged in. */
export function apiProject(fields: Partial<ProjectInput> = {}): ProjectInput {
  return aProject('api', { id: 1, name: 'API', ...fields });
}

/** Project acme/web (2) of baseWorld(), with `fields` merged in. */
export function webProject(fields: Partial<ProjectInput> = {}): ProjectInput {
  return aProject('web', { id: 2, name: 'Web', ...fields });
}

export interface ManyTagsOptions {
  prefix?: string;
  /** created_at of the first (oldest) tag; each next tag is `stepMs` newer. Default: 30 days before BASE_NOW. */
  oldest?: Date;
  stepMs?: number;
  /** Indexes of tags that have no timestamp. */
  withoutTimestamp?: (index: number) => boolean;
}

/** `n` tags `<prefix>0000`, `<prefix>0001`, ... with increasing created_at. */
export function manyTags(n: number, options: ManyTagsOptions = {}): TagInput[] {
  const prefix = options.prefix ?? 'build-';
  const oldest = options.oldest?.getTime() ?? Date.parse(BASE_NOW) - 30 * 24 * 3600 * 1000;
  const step = options.stepMs ?? 60_000;
  const width = String(Math.max(n - 1, 0)).length;
  return Array.from({ length: n }, (_, i) => ({
    name: `${prefix}${String(i).padStart(width, '0')}`,
    created_at: options.withoutTimestamp?.(i) ? null : new Date(oldest + i * step).toISOString(),
  }));
}

/** `n` jobs named `<name>-<i>`, alternating statuses from `statuses`, with logs. */
export function manyJobs(n: number, statuses: JobInput['status'][] = ['success', 'failed'], name = 'job'): JobInput[] {
  return Array.from({ length: n }, (_, i) => {
    const status = statuses[i % statuses.length];
    return { name: `${name}-${i}`, stage: 'test', status, log: `log of ${name}-${i}: ${status}\n` };
  });
}

/** `n` ordinary users `user0001`..., each with a token `glpat-user0001`. */
export function manyUsers(n: number, fields: Partial<UserInput> = {}): UserInput[] {
  const width = String(n).length;
  return Array.from({ length: n }, (_, i) => {
    const username = `user${String(i + 1).padStart(width, '0')}`;
    return { username, name: `User ${i + 1}`, tokens: [`glpat-${username}`], ...fields };
  });
}

/**
 * `n` projects `<prefix>0001`… in `namespace` (default `acme`), each with `fields`. For a world of thousands spread
 * over groups and subgroups, the world file's `generate` key does the same without building the list.
 */
export function manyProjects(
  n: number,
  namespace = 'acme',
  fields: Partial<ProjectInput> = {},
  prefix = 'project-',
): ProjectInput[] {
  const width = String(n).length;
  return Array.from({ length: n }, (_, i) => ({
    path: `${prefix}${String(i + 1).padStart(width, '0')}`,
    namespace,
    ...fields,
  }));
}

/** The world file's `generate` key: many groups, subgroups and projects for benchmarks (src/sandbox/README.md). */
export type GenerateInput = Input<World['generate']>;
