import { RE2JS } from 're2js';

/**
 * Which tags the forge's bulk tag deletion removes, computed locally and independently of the forge (and of the
 * sandbox, which plays the forge in tests, so the integration tests really compare the two). Pure: no I/O, no clock.
 *
 * The forge's rules (docs/api-client.md, "Container registry", and the forge's CleanupTagsService), in its order:
 * 1. `latest` is never deleted;
 * 2. each expression is compiled as `\A` + pattern + `\z` exactly as written, with no group, so `a|b` means "starts
 *    with a" or "ends with b"; a candidate matches the delete expression and not the keep expression;
 * 3. `keep_n` keeps the newest candidates by `created_at`, a tag without one counting as the newest;
 * 4. `older_than` deletes only tags strictly older than now − interval, never one without a timestamp.
 */

export interface PreviewTag {
  readonly name: string;
  /** ISO 8601, or null when the tag has no creation time (or the rules do not need it and it was not read). */
  readonly created_at: string | null;
}

export interface PreviewRules {
  /** The delete expression as written (`name_regex_delete`, or its synonym `name_regex`). */
  readonly nameRegexDelete: string;
  readonly nameRegexKeep?: string;
  readonly keepN?: number;
  /** `older_than` in milliseconds. */
  readonly olderThanMs?: number;
}

/** Why a tag stays, in the words `plan` shows. */
export type KeptReason =
  | 'latest'
  | 'not matched by delete regex'
  | 'matches keep regex'
  | `among the newest ${number}`
  | 'no creation time'
  | `too recent (created ${string})`;

export type TagVerdict =
  | { readonly name: string; readonly created_at: string | null; readonly deleted: true }
  | { readonly name: string; readonly created_at: string | null; readonly deleted: false; readonly reason: KeptReason };

export interface Preview {
  /** Every tag given, in the order given, each with its verdict. */
  readonly verdicts: readonly TagVerdict[];
  /** Names of the tags that go, oldest first (the order a capped forge deletes them in). */
  readonly deleted: readonly string[];
}

/** A name matcher the forge's way: `\A` + pattern + `\z`, then an unanchored search. */
export function forgeMatcher(pattern: string): (name: string) => boolean {
  const regex = RE2JS.compile(`\\A${pattern}\\z`);
  return (name) => regex.test(name);
}

/**
 * The name rules alone (1 and 2): whether a tag can be deleted at all, whatever its age. The observer fetches
 * creation times only for tags that pass them.
 */
export function nameFilter(
  rules: Pick<PreviewRules, 'nameRegexDelete' | 'nameRegexKeep'>,
): (name: string) => KeptReason | undefined {
  const matchesDelete = forgeMatcher(rules.nameRegexDelete);
  const matchesKeep = rules.nameRegexKeep === undefined ? () => false : forgeMatcher(rules.nameRegexKeep);
  return (name) => {
    if (name === 'latest') return 'latest';
    if (!matchesDelete(name)) return 'not matched by delete regex';
    if (matchesKeep(name)) return 'matches keep regex';
    return undefined;
  };
}

/** Whether rules 3 and 4 need creation times. */
export function needsCreationTimes(rules: PreviewRules): boolean {
  return rules.keepN !== undefined || rules.olderThanMs !== undefined;
}

export function previewCleanup(tags: readonly PreviewTag[], rules: PreviewRules, now: Date): Preview {
  const byName = nameFilter(rules);
  const kept = new Map<string, KeptReason>();
  const candidates: PreviewTag[] = [];
  for (const tag of tags) {
    const reason = byName(tag.name);
    if (reason) kept.set(tag.name, reason);
    else candidates.push(tag);
  }

  let remaining = candidates;
  if (rules.keepN !== undefined) {
    const newest = [...candidates].sort(newestFirst);
    const keepN = Math.max(0, rules.keepN);
    for (const tag of newest.slice(0, keepN)) kept.set(tag.name, `among the newest ${keepN}`);
    remaining = newest.slice(keepN);
  }

  if (rules.olderThanMs !== undefined) {
    const cutoff = now.getTime() - rules.olderThanMs;
    remaining = remaining.filter((tag) => {
      if (tag.created_at === null) {
        kept.set(tag.name, 'no creation time');
        return false;
      }
      // Strictly older: a tag created exactly at the cut-off stays, as on the forge.
      if (Date.parse(tag.created_at) >= cutoff) {
        kept.set(tag.name, `too recent (created ${tag.created_at})`);
        return false;
      }
      return true;
    });
  }

  const verdicts = tags.map((tag): TagVerdict => {
    const reason = kept.get(tag.name);
    return reason === undefined
      ? { name: tag.name, created_at: tag.created_at, deleted: true }
      : { name: tag.name, created_at: tag.created_at, deleted: false, reason };
  });
  const deleted = [...remaining]
    .sort(newestFirst)
    .reverse()
    .map((tag) => tag.name);
  return { verdicts, deleted };
}

/** A tag without a timestamp counts as the newest, as on the forge; equal times fall back to the name, for a stable order. */
function newestFirst(a: PreviewTag, b: PreviewTag): number {
  const at = a.created_at === null ? Number.POSITIVE_INFINITY : Date.parse(a.created_at);
  const bt = b.created_at === null ? Number.POSITIVE_INFINITY : Date.parse(b.created_at);
  if (at !== bt) return at < bt ? 1 : -1;
  return a.name < b.name ? 1 : a.name > b.name ? -1 : 0;
}
