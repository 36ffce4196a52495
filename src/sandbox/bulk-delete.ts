import { RE2JS } from 're2js';
import type { BulkDeleteTagsParams } from '../gitlab/types/registry';
import { parseDuration } from './duration';

/**
 * The forge's bulk tag deletion (`DELETE /projects/:id/registry/repositories/:repository_id/tags`; docs/api-client.md,
 * "Container registry"), as a pure function so its semantics are tested on their own. The order of the steps is the
 * forge's own (Projects::ContainerRepository::CleanupTagsService): drop `latest`, filter by name, drop the `keep_n`
 * newest, keep only those older than `older_than`, then (hosted edition only) cap the batch.
 */

/**
 * The parameters as a request gave them, any of them missing (`name_regex_delete` and its deprecated synonym
 * `name_regex` both missing is the forge's 400). When both are given, `name_regex_delete` wins, as on the forge.
 */
export type BulkDeleteParams = Partial<BulkDeleteTagsParams>;

export interface TagForCleanup {
  name: string;
  /** Manifest creation time; null for tags the registry has no timestamp for. */
  createdAt: Date | null;
}

export type RegexCheck = { ok: true } | { ok: false; param: keyof BulkDeleteParams; message: string };

export type BulkDeleteOutcome = { ok: true; toDelete: string[] } | { ok: false; error: string };

/**
 * Validates the regex parameters as the API does before scheduling anything: each pattern as written must compile
 * under RE2. The error text is the forge's (`<param> is an invalid regexp: <reason>`).
 */
export function checkRegexParams(params: BulkDeleteParams): RegexCheck {
  for (const param of ['name_regex_delete', 'name_regex', 'name_regex_keep'] as const) {
    const pattern = params[param];
    if (pattern === undefined) continue;
    try {
      RE2JS.compile(pattern);
    } catch (error) {
      return { ok: false, param, message: `is an invalid regexp: ${regexReason(error)}` };
    }
  }
  return { ok: true };
}

/**
 * The forge wraps each pattern as `\A` + pattern + `\z` with no group around it, then searches (unanchored). So
 * `a|b` becomes `\Aa|b\z`: names starting with `a` or ending with `b`. This quirk is reproduced on purpose.
 */
export function forgeTagMatcher(pattern: string): (name: string) => boolean {
  const regex = RE2JS.compile(`\\A${pattern}\\z`);
  return (name) => regex.matcher(name).find();
}

/**
 * Names of the tags one bulk call deletes. `cap`, when given, simulates the hosted edition's per-call limit: only
 * the first `cap` tags to delete (oldest first) go in this call.
 */
export function selectTagsToDelete(
  tags: readonly TagForCleanup[],
  params: BulkDeleteParams,
  now: Date,
  cap?: number,
): BulkDeleteOutcome {
  const deletePattern = params.name_regex_delete ?? params.name_regex;
  if (deletePattern === undefined) return { ok: false, error: 'name_regex_delete is missing' };
  let matchesDelete: (name: string) => boolean;
  let matchesKeep: (name: string) => boolean;
  try {
    matchesDelete = forgeTagMatcher(deletePattern);
    matchesKeep = forgeTagMatcher(params.name_regex_keep ?? '');
  } catch (error) {
    return { ok: false, error: `invalid regexp: ${regexReason(error)}` };
  }

  let candidates = tags.filter((tag) => tag.name !== 'latest');
  candidates = candidates.filter((tag) => matchesDelete(tag.name) && !matchesKeep(tag.name));

  if (params.keep_n !== undefined) {
    candidates = [...candidates].sort(newestFirst).slice(Math.max(0, params.keep_n));
  }

  if (params.older_than !== undefined) {
    const intervalMs = parseDuration(params.older_than);
    // The forge's worker fails on an interval it cannot parse and deletes nothing.
    if (intervalMs === undefined) return { ok: false, error: `older_than is not a duration: ${params.older_than}` };
    const cutoff = now.getTime() - intervalMs;
    candidates = candidates.filter((tag) => tag.createdAt !== null && tag.createdAt.getTime() < cutoff);
  }

  let toDelete = [...candidates].sort(newestFirst).reverse();
  if (cap !== undefined && cap > 0) toDelete = toDelete.slice(0, cap);
  return { ok: true, toDelete: toDelete.map((tag) => tag.name) };
}

/** A tag without a timestamp counts as the newest (as on the forge); ties break by name for a stable order. */
function newestFirst(a: TagForCleanup, b: TagForCleanup): number {
  const at = a.createdAt?.getTime() ?? Number.POSITIVE_INFINITY;
  const bt = b.createdAt?.getTime() ?? Number.POSITIVE_INFINITY;
  if (at !== bt) return at < bt ? 1 : -1;
  return a.name < b.name ? 1 : a.name > b.name ? -1 : 0;
}

function regexReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/^error parsing regexp: /, '');
}
