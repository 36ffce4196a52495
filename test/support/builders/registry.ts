import type {
  RegistryCleanupSnapshot,
  RepositorySnapshot,
} from '../../../src/policies/registry-cleanup/registry-cleanup.decide';
import type { BulkLedgerEntry } from '../../../src/policies/registry-cleanup/registry-cleanup.ledger';
import type { PreviewTag } from '../../../src/policies/registry-cleanup/registry-cleanup.preview';
import {
  type RegistryCleanupConfig,
  registryCleanupPolicy,
} from '../../../src/policies/registry-cleanup/registry-cleanup.schema';
import { BASE_NOW } from '../world-builders';

/**
 * Builders for registry_cleanup tests: small, readable defaults, with only what a test is about spelled out. The
 * config goes through the real schema, so defaults and conversions (RE2, older_than) are the ones a policy file gets.
 */

/** The clock of the tests: the sandbox worlds' start, 2025-06-02 12:00 UTC, a Monday. */
export const NOW = new Date(BASE_NOW);

/** A registry_cleanup policy as written in YAML, parsed by the real schema: delete everything in acme/api, nightly. */
export function aCleanupConfig(fields: Record<string, unknown> = {}): RegistryCleanupConfig {
  return registryCleanupPolicy.schema.parse({
    name: 'image-cleanup',
    type: 'registry_cleanup',
    schedule: '0 3 * * *',
    projects: ['acme/api'],
    name_regex_delete: '.*',
    ...fields,
  });
}

/** A tag created `daysAgo` days before NOW (null: no creation time). */
export function aTag(name: string, daysAgo: number | null = 30): PreviewTag {
  return { name, created_at: daysAgo === null ? null : new Date(NOW.getTime() - daysAgo * 86_400_000).toISOString() };
}

/** Tags `<prefix>0`, `<prefix>1`…, the first `n` days old, each next one a day newer. */
export function someTags(n: number, prefix = 'build-'): PreviewTag[] {
  return Array.from({ length: n }, (_, i) => aTag(`${prefix}${i}`, n - i));
}

/** Repository 12 `acme/api/app` of project 1, without a ledger entry unless told. */
export function aRepository(
  tags: readonly PreviewTag[],
  fields: Partial<Omit<RepositorySnapshot, 'tags'>> = {},
): RepositorySnapshot {
  return { id: 12, path: 'acme/api/app', projectId: 1, ledger: undefined, tags, ...fields };
}

/** A ledger entry: one call `minutesAgo` before NOW that opened a cleanup, unless told otherwise. */
export function aLedger(minutesAgo: number, fields: Partial<BulkLedgerEntry> = {}): BulkLedgerEntry {
  const at = new Date(NOW.getTime() - minutesAgo * 60_000).toISOString();
  return { last_call_at: at, follow_ups: 0, cleanup_started_at: at, tags_before: 10, planned: 5, ...fields };
}

export function aSnapshot(...repositories: RepositorySnapshot[]): RegistryCleanupSnapshot {
  return { repositories };
}
