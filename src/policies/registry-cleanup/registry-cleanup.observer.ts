import type { ProjectRef } from '../../config/validators';
import type { ObserveContext } from '../../engine/policy';
import { NotFoundError } from '../../gitlab/transport/errors';
import type { RegistryRepository } from '../../gitlab/types/registry';
import { selectProjects } from '../../engine/discovery';
import { limitedRunner } from '../../engine/map-limited';
import { observeTargets } from '../../engine/observe-targets';
import {
  bulkStatus,
  nextFollowUp,
  previewRepository,
  previewRules,
  type RegistryCleanupSnapshot,
  type RepositorySnapshot,
} from './registry-cleanup.decide';
import {
  BULK_CALL_INTERVAL_MS,
  type BulkLedgerEntry,
  FOLLOW_UP_MARGIN_MS,
  ledgerKey,
  parseLedger,
} from './registry-cleanup.ledger';
import { needsCreationTimes, nameFilter, type PreviewTag } from './registry-cleanup.preview';
import type { RegistryCleanupConfig } from './registry-cleanup.schema';
import { readJsonObject } from '../../engine/json';

/**
 * Reading what the registry_cleanup rules need, and no more: the repositories of the configured projects and groups,
 * each one's tag names (streamed), and a tag's creation time only when the rules look at it (`keep_n`,
 * `older_than`, or the per-tag key) and the tag passes the name rules. Creation times are cached in the policy's
 * state, so a second pass within hours reads names only.
 */

/** Tag detail reads in flight at once per repository. */
export const DETAIL_CONCURRENCY = 8;

/** How long a tag's creation time is reused; a tag pushed again under its name within this time is seen late. */
export const DETAIL_CACHE_TTL_MS = 6 * 60 * 60 * 1000;

/** Progress is reported every this many tags, so only large repositories report at all. */
export const PROGRESS_EVERY = 500;

export function detailCacheKey(repositoryId: number): string {
  return `details:${repositoryId}`;
}

export async function observeRegistryCleanup(
  config: RegistryCleanupConfig,
  context: ObserveContext,
): Promise<RegistryCleanupSnapshot> {
  // Several repositories at once, in path order; the client's concurrency cap and budget hold every request. Each
  // project, group and repository on its own: one the token may not read is recorded against it, the others go on.
  const projects = config.projects ? await selectProjects(context, config.projects, config.include_archived) : [];
  const repositories = await listRepositories(config, projects, context);
  const observed = await observeTargets(
    context,
    repositories,
    (repository) => ({ target: `repository ${repository.path}`, listed: false }),
    (repository) => observeRepository(config, repository, context),
  );
  return {
    repositories: observed.filter((snapshot): snapshot is RepositorySnapshot => snapshot !== undefined),
    projects: projects.map(String),
  };
}

/** The configured projects' and groups' repositories, each once, filtered by `repositories`, in path order. */
async function listRepositories(
  config: RegistryCleanupConfig,
  projects: readonly ProjectRef[],
  context: ObserveContext,
): Promise<RegistryRepository[]> {
  const { registry } = context.client;
  // tags_count lets progress say how far a large repository's listing is.
  const sources = [
    ...projects.map((project) => ({
      target: `project ${project}`,
      listed: config.projects?.names(project) ?? false,
      list: () => registry.all(project, { tags_count: true }),
    })),
    // Groups are always named in the file.
    ...(config.groups ?? []).map((group) => ({
      target: `group ${group}`,
      listed: true,
      list: () => registry.allForGroup(group, { tags_count: true }),
    })),
  ];
  const lists = await observeTargets(
    context,
    sources,
    (source) => source,
    async (source) => {
      const repositories: RegistryRepository[] = [];
      for await (const repository of source.list()) repositories.push(repository);
      return repositories;
    },
  );
  const found = new Map<number, RegistryRepository>();
  for (const repository of lists.flatMap((list) => list ?? [])) found.set(repository.id, repository);
  const wanted = (path: string) => config.repositories?.some((pattern) => pattern.test(path)) ?? true;
  return [...found.values()]
    .filter((repository) => wanted(repository.path))
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.id - b.id));
}

async function observeRepository(
  config: RegistryCleanupConfig,
  repository: RegistryRepository,
  context: ObserveContext,
): Promise<RepositorySnapshot | undefined> {
  const { registry } = context.client;
  const label = repository.path;
  const total = repository.tags_count !== undefined ? String(repository.tags_count) : '?';
  const rules = previewRules(config);
  // per_tag keys each deletion by the tag's creation time, so a tag pushed again later is deleted again.
  const byName = nameFilter(rules);
  const details =
    needsCreationTimes(rules) || config.mode === 'per_tag' ? await CreationTimes.start(repository, context) : undefined;
  const names: string[] = [];
  try {
    for await (const tag of registry.allTags(repository.project_id, repository.id)) {
      names.push(tag.name);
      // The detail read starts while the listing goes on: a cold preview costs the reads, not the reads after the list.
      if (details && byName(tag.name) === undefined) details.want(tag.name);
      if (names.length % PROGRESS_EVERY === 0) context.progress(`${label}: ${names.length}/${total} tags read`);
    }
  } catch (error) {
    // What the detail reads found so far is kept for the next pass.
    await details?.finish().catch(() => undefined);
    // Deleted since it was listed: nothing to clean.
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }

  let tags: PreviewTag[] = names.map((name) => ({ name, created_at: null }));
  if (details) {
    const { times, gone } = await details.finish();
    tags = names.filter((name) => !gone.has(name)).map((name) => ({ name, created_at: times.get(name) ?? null }));
  }
  const ledger = parseLedger(await context.state.get(ledgerKey(repository.id)));
  const lost = !ledger && context.redisDataLostAt ? { recordsLostAt: context.redisDataLostAt.toISOString() } : {};
  return { id: repository.id, path: repository.path, projectId: repository.project_id, tags, ledger, ...lost };
}

interface CachedDetail {
  /** Creation time, null when the tag has none. */
  readonly c: string | null;
  /** When it was read (the pass's clock), ms. */
  readonly at: number;
}

type DetailRead =
  { readonly name: string; readonly created_at: string | null } | { readonly name: string; readonly gone: true };

/**
 * Creation times of the tags a repository's listing names, from the cache when fresh, else read with bounded
 * concurrency as the names arrive. `gone`: the tags deleted between the listing and the read of their detail, which
 * the caller leaves out of the repository.
 */
class CreationTimes {
  private readonly times = new Map<string, string | null>();
  private readonly reads: Array<Promise<DetailRead>> = [];
  private readonly run = limitedRunner(DETAIL_CONCURRENCY);
  private done = 0;

  private constructor(
    private readonly repository: RegistryRepository,
    private readonly context: ObserveContext,
    private readonly cache: Map<string, CachedDetail>,
  ) {}

  static async start(repository: RegistryRepository, context: ObserveContext): Promise<CreationTimes> {
    const cache = parseCache(await context.state.get(detailCacheKey(repository.id)), context.now.getTime());
    return new CreationTimes(repository, context, cache);
  }

  want(name: string): void {
    const cached = this.cache.get(name);
    if (cached) {
      this.times.set(name, cached.c);
      return;
    }
    const read = this.run(() => this.read(name));
    // Awaited in finish; until then a failure must not count as unhandled.
    read.catch(() => undefined);
    this.reads.push(read);
  }

  /**
   * The creation times, once every read ended. What was read is cached even when a read failed: the next pass reads
   * only what is missing, instead of every tag again (under faults, each tag was read a dozen times).
   */
  async finish(): Promise<{ times: Map<string, string | null>; gone: Set<string> }> {
    const settled = await Promise.allSettled(this.reads);
    const failure = settled.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    const now = this.context.now.getTime();
    const gone = new Set<string>();
    for (const result of settled) {
      if (result.status === 'rejected') continue;
      const detail = result.value;
      if ('gone' in detail) {
        gone.add(detail.name);
        this.cache.delete(detail.name);
      } else {
        this.times.set(detail.name, detail.created_at);
        this.cache.set(detail.name, { c: detail.created_at, at: now });
      }
    }
    if (this.reads.length > 0) {
      // One value per repository: one Redis round trip per pass instead of one per tag.
      await this.context.state.set(
        detailCacheKey(this.repository.id),
        JSON.stringify(Object.fromEntries(this.cache)),
        DETAIL_CACHE_TTL_MS,
      );
    }
    if (failure) throw failure.reason;
    return { times: this.times, gone };
  }

  private async read(name: string): Promise<DetailRead> {
    const { repository, context } = this;
    try {
      const tag = await context.client.registry.showTag(repository.project_id, repository.id, name);
      return { name, created_at: tag.created_at };
    } catch (error) {
      if (error instanceof NotFoundError) return { name, gone: true };
      throw error;
    } finally {
      this.done++;
      if (this.done % PROGRESS_EVERY === 0)
        context.progress(`${repository.path}: ${this.done}/${this.reads.length} tag details read`);
    }
  }
}

/** The fresh entries of a cached value; anything damaged or stale reads as not cached. */
function parseCache(text: string | undefined, now: number): Map<string, CachedDetail> {
  const cache = new Map<string, CachedDetail>();
  for (const [name, entry] of Object.entries(readJsonObject(text) ?? {})) {
    if (typeof entry !== 'object' || entry === null) continue;
    const { c, at } = entry as Record<string, unknown>;
    if ((c !== null && typeof c !== 'string') || typeof at !== 'number') continue;
    if (now - at >= DETAIL_CACHE_TTL_MS || at > now) continue;
    cache.set(name, { c, at });
  }
  return cache;
}

/**
 * After an acting pass: a repository with nothing left to delete closes its open cleanup, so the next call opens a
 * new one with a fresh follow-up count. The time of the last call stays: the forge's hourly limit still holds.
 */
export async function commitRegistryCleanup(
  config: RegistryCleanupConfig,
  snapshot: RegistryCleanupSnapshot,
  context: ObserveContext,
): Promise<void> {
  if (config.mode !== 'bulk') return;
  for (const repository of snapshot.repositories) {
    const entry = repository.ledger;
    if (!entry || entry.cleanup_started_at === null) continue;
    if (repository.tags.length > 0 && previewRepository(config, repository, context.now).deleted.length > 0) continue;
    // Re-read: a replica may have called meanwhile, and its record must not be overwritten with an older one.
    const current = parseLedger(await context.state.get(ledgerKey(repository.id)));
    if (!current || current.last_call_at !== entry.last_call_at) continue;
    const closed: BulkLedgerEntry = { ...current, follow_ups: 0, cleanup_started_at: null };
    await context.state.set(ledgerKey(repository.id), JSON.stringify(closed));
  }
}

/**
 * Pure: when a follow-up pass should run. A repository the pass just called, or one the hourly limit held back, may
 * still have tags to delete after the hour (the forge deletes asynchronously and may cap each call), so the pass
 * after the earliest such hour is asked for; a repository out of follow-ups asks for nothing.
 */
export function nextRegistryCleanupPass(
  config: RegistryCleanupConfig,
  snapshot: RegistryCleanupSnapshot,
  now: Date,
): Date | undefined {
  // A dry run calls nothing, so there is nothing to follow up (the engine does not say when the whole file is dry).
  if (config.mode !== 'bulk' || config.dry_run === true) return undefined;
  let earliest: number | undefined;
  for (const repository of snapshot.repositories) {
    if (repository.tags.length === 0) continue;
    const status = bulkStatus(config, repository, previewRepository(config, repository, now), now);
    let due: number | undefined;
    if (status.kind === 'call' && status.followUp < config.max_follow_ups) due = now.getTime() + BULK_CALL_INTERVAL_MS;
    if (status.kind === 'blocked' && status.recordsLost) due = status.untilMs;
    else if (status.kind === 'blocked' && repository.ledger) {
      // Only when a follow-up will still be allowed once the hour is over.
      if (nextFollowUp(config, repository.ledger, new Date(status.untilMs)) <= config.max_follow_ups)
        due = status.untilMs;
    }
    if (due !== undefined) earliest = Math.min(earliest ?? due, due);
  }
  return earliest === undefined ? undefined : new Date(earliest + FOLLOW_UP_MARGIN_MS);
}
