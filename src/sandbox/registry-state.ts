import { createHash } from 'node:crypto';
import type { NamespacesState, ProjectRecord, SeededProject } from './namespaces-state';
import { DAY_MS, type WorldSeeding } from './seeding';
import type { ParsedWorld, WorldRepository } from './world';

/** The container registry: repositories with their tags, and the bulk tag deletions asked of it. */

export interface TagRecord {
  name: string;
  created_at: string | null;
  digest: string;
  total_size: number;
}

export interface RepositoryRecord {
  id: number;
  project_id: number;
  name: string;
  created_at: string;
  status: 'delete_scheduled' | null;
  tags: Map<string, TagRecord>;
}

export interface BulkDeletionRecord {
  repository_id: number;
  requested_at: string;
  params: Record<string, string | number>;
  applied_at: string | null;
  deleted: string[];
  /** Why the background job deleted nothing (the API had already answered 202). */
  error: string | null;
}

export class RegistryState {
  registryHost = 'registry.sandbox.test';
  readonly repositories = new Map<number, RepositoryRecord>();
  readonly bulkDeletions: BulkDeletionRecord[] = [];
  /** Repository id → sandbox-clock time (ms) until which another bulk deletion is refused. */
  readonly cleanupLeases = new Map<number, number>();

  constructor(private readonly namespaces: NamespacesState) {}

  /** Tags of a repository (sorted by name, as the registry lists them). */
  tags(repositoryId: number): TagRecord[] {
    const repository = this.repositories.get(repositoryId);
    if (!repository) return [];
    return [...repository.tags.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  repositoryPath(repository: RepositoryRecord): string {
    const project = this.namespaces.projects.get(repository.project_id);
    const base = project ? this.namespaces.projectFullPath(project).toLowerCase() : '';
    return repository.name ? `${base}/${repository.name}` : base;
  }

  // ---- seeding ------------------------------------------------------------------------------------------------

  /** The registry host and the repositories of the seeded projects, with their tags. */
  seed(world: ParsedWorld, projects: SeededProject[], seeding: WorldSeeding): void {
    this.registryHost = world.registry_host;
    for (const { world: p } of projects) p.registry.forEach((r) => seeding.ids.reserve('repository', r.id));
    for (const { world: p, record } of projects) {
      for (const r of p.registry) this.seedRepository(r, record, seeding);
    }
  }

  private seedRepository(r: WorldRepository, project: ProjectRecord, seeding: WorldSeeding): void {
    const repository: RepositoryRecord = {
      id: r.id ?? seeding.ids.next('repository'),
      project_id: project.id,
      name: r.name,
      created_at: r.created_at ? seeding.time(r.created_at) : seeding.ago(90 * DAY_MS),
      status: null,
      tags: new Map(),
    };
    this.repositories.set(repository.id, repository);
    // Digests and sizes the world leaves out are derived from the tag's path, so they are the same on every run.
    const path = this.repositoryPath(repository);
    for (const t of r.tags) {
      const digest = t.digest ?? `sha256:${createHash('sha256').update(`${path}:${t.name}`).digest('hex')}`;
      repository.tags.set(t.name, {
        name: t.name,
        created_at: t.created_at === null ? null : seeding.time(t.created_at),
        digest,
        total_size: t.total_size ?? 10_000_000 + (parseInt(digest.slice(7, 13), 16) % 190_000_000),
      });
    }
  }
}
