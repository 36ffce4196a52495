import { type Decision, SKIP } from '../../engine/policy';
import { latestRunAtOrBefore } from '../../engine/schedule-runs';
import { BULK_CALL_INTERVAL_MS, type BulkLedgerEntry, nextCallAllowedMs } from './registry-cleanup.ledger';
import { bulkDeleteParams, repositoryParams, tagParams } from './registry-cleanup.params';
import {
  type Preview,
  type PreviewRules,
  type PreviewTag,
  previewCleanup,
  type TagVerdict,
} from './registry-cleanup.preview';
import { deletePattern, type RegistryCleanupConfig } from './registry-cleanup.schema';

/**
 * Deciding what to delete in each repository: pure, no I/O, no clock. The preview says which tags the forge's rules
 * remove; this file turns it into one bulk call per repository (within the hourly limit and `max_follow_ups`), or
 * one deletion per tag, and explains every skip and every kept tag for `plan`.
 */

export const BULK_DELETE = 'bulk_delete';
export const DELETE_TAG = 'delete_tag';
export const DELETE_REPOSITORY = 'delete_repository';

export interface RepositorySnapshot {
  readonly id: number;
  /** Full path as the forge lists it (`acme/api/app`; the project's path for its root repository). */
  readonly path: string;
  readonly projectId: number;
  /** Every tag of the repository, creation times read where the rules need them. */
  readonly tags: readonly PreviewTag[];
  /** This policy's record of bulk calls on the repository; undefined when it made none. */
  readonly ledger: BulkLedgerEntry | undefined;
  /**
   * Set when there is no record and Redis lost this policy's records within the last hour: a call made before the
   * loss may still hold the forge's hourly limit, which no read of the forge shows.
   */
  readonly recordsLostAt?: string;
}

export interface RegistryCleanupSnapshot {
  readonly repositories: readonly RepositorySnapshot[];
  /** The projects `projects:` selected, as their references (for `plan`, where globs chose them). */
  readonly projects?: readonly string[];
}

/** The preview rules of a policy. */
export function previewRules(config: RegistryCleanupConfig): PreviewRules {
  return {
    nameRegexDelete: deletePattern(config),
    ...(config.name_regex_keep !== undefined ? { nameRegexKeep: config.name_regex_keep.source } : {}),
    ...(config.keep_n !== undefined ? { keepN: config.keep_n } : {}),
    ...(config.older_than !== undefined ? { olderThanMs: config.older_than.ms } : {}),
  };
}

/** Which tags of `repository` go, and why each other one stays (verdicts in name order, so plan reads the same every time). */
export function previewRepository(config: RegistryCleanupConfig, repository: RepositorySnapshot, now: Date): Preview {
  const tags = [...repository.tags].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return previewCleanup(tags, previewRules(config), now);
}

/**
 * The number the next bulk call on a repository would have in its cleanup: 0 opens a new cleanup, 1… are
 * follow-ups. A cleanup stays open from its first call until a pass finds nothing left to delete, or until the
 * schedule fires again: each scheduled run starts afresh, so a cleanup that ran out of follow-ups is taken up by the
 * next run instead of being stuck.
 */
export function nextFollowUp(config: RegistryCleanupConfig, entry: BulkLedgerEntry | undefined, now: Date): number {
  if (!entry || entry.cleanup_started_at === null) return 0;
  const lastRun = previousScheduledRun(config, now);
  if (lastRun && lastRun.getTime() > Date.parse(entry.cleanup_started_at)) return 0;
  return entry.follow_ups + 1;
}

/** The schedule's latest time at or before `now` (pure: croner only computes). */
function previousScheduledRun(config: RegistryCleanupConfig, now: Date): Date | undefined {
  return latestRunAtOrBefore({ cron: config.schedule, ...(config.timezone ? { timezone: config.timezone } : {}) }, now);
}

/**
 * Per repository, in path order: in `bulk` mode one decision (`bulk_delete` or a skip); in `per_tag` mode one
 * `delete_tag` per previewed tag (oldest first) and a skip naming the tags kept; with `delete_empty_repositories`, a
 * `delete_repository` for a repository without tags.
 */
export function decideRegistryCleanup(
  config: RegistryCleanupConfig,
  snapshot: RegistryCleanupSnapshot,
  now: Date,
): Decision[] {
  const repositories = [...snapshot.repositories].sort((a, b) =>
    a.path < b.path ? -1 : a.path > b.path ? 1 : a.id - b.id,
  );
  return repositories.flatMap((repository) => decideRepository(config, repository, now));
}

function decideRepository(config: RegistryCleanupConfig, repository: RepositorySnapshot, now: Date): Decision[] {
  const target = repositoryTarget(repository);
  const ids = { project: repository.projectId, repositoryId: repository.id };
  if (repository.tags.length === 0) {
    if (config.delete_empty_repositories) {
      return [
        {
          action: DELETE_REPOSITORY,
          target,
          key: `repository:${repository.id}:delete`,
          reason: 'delete: the repository has no tags',
          params: repositoryParams(ids),
        },
      ];
    }
    return [
      {
        action: SKIP,
        target,
        key: `repository:${repository.id}`,
        reason: 'skip: no tags',
        params: repositoryParams(ids),
      },
    ];
  }
  const preview = previewRepository(config, repository, now);
  return config.mode === 'per_tag'
    ? decidePerTag(config, repository, preview)
    : [decideBulk(config, repository, preview, now)];
}

/** Where a repository stands in bulk mode; decide and nextPass both read it. */
export type BulkStatus =
  | { readonly kind: 'nothing' }
  | { readonly kind: 'blocked'; readonly untilMs: number; readonly lastMs: number; readonly recordsLost?: true }
  | { readonly kind: 'exhausted'; readonly made: number }
  | { readonly kind: 'call'; readonly followUp: number };

export function bulkStatus(
  config: RegistryCleanupConfig,
  repository: RepositorySnapshot,
  preview: Preview,
  now: Date,
): BulkStatus {
  if (preview.deleted.length === 0) return { kind: 'nothing' };
  const entry = repository.ledger;
  if (entry && now.getTime() < nextCallAllowedMs(entry)) {
    return { kind: 'blocked', untilMs: nextCallAllowedMs(entry), lastMs: Date.parse(entry.last_call_at) };
  }
  const lostMs = entry ? Number.NaN : Date.parse(repository.recordsLostAt ?? '');
  if (!Number.isNaN(lostMs) && now.getTime() < lostMs + BULK_CALL_INTERVAL_MS) {
    return { kind: 'blocked', untilMs: lostMs + BULK_CALL_INTERVAL_MS, lastMs: lostMs, recordsLost: true };
  }
  const followUp = nextFollowUp(config, entry, now);
  if (followUp > config.max_follow_ups) return { kind: 'exhausted', made: followUp - 1 };
  return { kind: 'call', followUp };
}

function decideBulk(
  config: RegistryCleanupConfig,
  repository: RepositorySnapshot,
  preview: Preview,
  now: Date,
): Decision {
  const target = repositoryTarget(repository);
  const total = repository.tags.length;
  const details = [...cleanupReport(repository, preview), ...previewLines(preview)];
  const skip = (reason: string): Decision => ({
    action: SKIP,
    target,
    key: `repository:${repository.id}`,
    reason,
    params: repositoryParams({ project: repository.projectId, repositoryId: repository.id }),
    details,
  });

  const status = bulkStatus(config, repository, preview, now);
  switch (status.kind) {
    case 'nothing':
      return skip(`skip: nothing to delete (${total} ${plural(total, 'tag')} kept)`);
    case 'blocked':
      if (status.recordsLost) {
        return skip(
          `skip: this policy's records went at ${clockTime(status.lastMs)} (Redis lost its data, or held another forge's); a call made before may hold the forge's hourly limit until ${clockTime(status.untilMs)}`,
        );
      }
      return skip(
        `skip: the forge allows the next bulk call at ${clockTime(status.untilMs)} (last at ${clockTime(status.lastMs)})`,
      );
    case 'exhausted':
      return skip(`skip: ${status.made} ${plural(status.made, 'follow-up')} made, tags remain`);
    case 'call':
      break;
  }

  const { followUp } = status;
  const planned = preview.deleted.length;
  const forge = {
    name_regex_delete: deletePattern(config),
    ...(config.name_regex_keep !== undefined ? { name_regex_keep: config.name_regex_keep.source } : {}),
    ...(config.keep_n !== undefined ? { keep_n: config.keep_n } : {}),
    ...(config.older_than !== undefined ? { older_than: config.older_than.text } : {}),
  };
  return {
    action: BULK_DELETE,
    target,
    // The ledger entry the decision was made on is part of the key: replicas deciding on the same entry collide in
    // the executor's claim, so one bulk call goes out; once the call is recorded, the next one has a new key.
    key: `bulk:${repository.id}:${repository.ledger?.last_call_at ?? 'never'}`,
    reason: `delete ${planned} of ${total} ${plural(total, 'tag')}${followUp > 0 ? ` (follow-up ${followUp} of ${config.max_follow_ups})` : ''}`,
    params: bulkDeleteParams({
      project: repository.projectId,
      repositoryId: repository.id,
      forge,
      tagsBefore: total,
      planned,
      followUp,
    }),
    details,
  };
}

function decidePerTag(config: RegistryCleanupConfig, repository: RepositorySnapshot, preview: Preview): Decision[] {
  const base = repositoryTarget(repository);
  const byName = new Map(repository.tags.map((tag) => [tag.name, tag]));
  const why = [
    'delete: matches the delete regex',
    ...(config.keep_n !== undefined ? [`not among the newest ${config.keep_n}`] : []),
    ...(config.older_than !== undefined ? [`older than ${config.older_than.text}`] : []),
  ].join(', ');
  // The tags keep_n keeps: every deleted tag is older than all of them, which is what makes it deletable.
  const keptNewer = preview.verdicts
    .filter((verdict) => !verdict.deleted && verdict.reason.startsWith('among the newest'))
    .map((verdict) => verdict.name);
  const decisions: Decision[] = preview.deleted.map((name): Decision => {
    const createdAt = byName.get(name)?.created_at ?? null;
    return {
      action: DELETE_TAG,
      target: `${base} tag ${name}`,
      // The creation time tells a tag pushed again under the same name from the one deleted before.
      key: `tag:${repository.id}:${name}:${createdAt ?? 'none'}`,
      reason: why,
      params: tagParams({ project: repository.projectId, repositoryId: repository.id, name, createdAt, keptNewer }),
    };
  });
  const total = repository.tags.length;
  const kept = total - preview.deleted.length;
  if (kept > 0 || decisions.length === 0) {
    decisions.push({
      action: SKIP,
      target: base,
      key: `repository:${repository.id}`,
      reason:
        decisions.length === 0
          ? `skip: nothing to delete (${total} ${plural(total, 'tag')} kept)`
          : `skip: ${kept} of ${total} ${plural(total, 'tag')} kept`,
      params: repositoryParams({ project: repository.projectId, repositoryId: repository.id }),
      details: preview.verdicts.filter((verdict) => !verdict.deleted).map(verdictLine),
    });
  }
  return decisions;
}

/** `acme/api/app (repository 12)`. */
export function repositoryTarget(repository: Pick<RepositorySnapshot, 'path' | 'id'>): string {
  return `${repository.path} (repository ${repository.id})`;
}

/** What `plan` shows under a repository: the tags that go (oldest first), then each kept tag with its reason. */
function previewLines(preview: Preview): string[] {
  return [
    ...preview.deleted.map((name) => `delete ${name}`),
    ...preview.verdicts.filter((verdict) => !verdict.deleted).map(verdictLine),
  ];
}

function verdictLine(verdict: TagVerdict): string {
  return verdict.deleted ? `delete ${verdict.name}` : `keep ${verdict.name}: ${verdict.reason}`;
}

/**
 * The open cleanup's report (the forge deletes asynchronously and may cap each call, so what a call deleted shows
 * only on a later pass): tags before, planned, deleted, remaining.
 */
function cleanupReport(repository: RepositorySnapshot, preview: Preview): string[] {
  const entry = repository.ledger;
  if (!entry || entry.cleanup_started_at === null) return [];
  const deleted = Math.max(0, entry.tags_before - repository.tags.length);
  return [
    `cleanup since ${entry.cleanup_started_at}: ${entry.tags_before} tags before, ${entry.planned} planned, ${deleted} deleted, ${preview.deleted.length} remaining`,
  ];
}

/** `04:00:00Z`: the hourly limit is about the time of day. */
function clockTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(11, 19)}Z`;
}

function plural(n: number, word: string): string {
  return n === 1 ? word : `${word}s`;
}
