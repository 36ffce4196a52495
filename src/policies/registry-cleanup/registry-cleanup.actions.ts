import { defineAction } from '../../engine/action-params';
import type { ActionResult, PolicyAction, ActContext } from '../../engine/policy';
import {
  BulkDeleteAlreadyRequestedError,
  certainlyNotActed,
  ForbiddenError,
  ValidationError,
} from '../../gitlab/transport/errors';
import { BULK_DELETE, DELETE_REPOSITORY, DELETE_TAG } from './registry-cleanup.decide';
import {
  BULK_CALL_INTERVAL_MS,
  type BulkLedgerEntry,
  ledgerKey,
  nextCallAllowedMs,
  parseLedger,
} from './registry-cleanup.ledger';
import {
  type BulkDeleteTarget,
  bulkDeleteTarget,
  type RepositoryTarget,
  repositoryTarget,
  type TagTarget,
  tagTarget,
} from './registry-cleanup.params';

/**
 * One bulk deletion. The ledger entry is written before the call: a call that may have reached the forge counts,
 * so a crash right after it cannot lead to a second call within the hour. It is put back only when the request
 * certainly never acted.
 */
async function bulkDelete(target: BulkDeleteTarget, context: ActContext): Promise<ActionResult> {
  const key = ledgerKey(target.repositoryId);
  const previousText = await context.state.get(key);
  const previous = parseLedger(previousText);
  const now = context.now;
  // Read at the moment of acting, not decided again: the forge's hourly limit is kept in this record, which another
  // replica may have written since this pass read it (the decision's key keeps replicas deciding on the same record
  // apart; this guards a snapshot read before another call).
  if (previous && now.getTime() < nextCallAllowedMs(previous)) {
    return {
      outcome: 'rate_limited',
      detail: `not called: a bulk call at ${previous.last_call_at} is recorded; next after ${new Date(nextCallAllowedMs(previous)).toISOString()}`,
    };
  }
  const opening = target.followUp === 0 || !previous?.cleanup_started_at;
  const entry: BulkLedgerEntry = {
    last_call_at: now.toISOString(),
    follow_ups: opening ? 0 : target.followUp,
    cleanup_started_at: opening ? now.toISOString() : (previous?.cleanup_started_at ?? now.toISOString()),
    tags_before: opening ? target.tagsBefore : (previous?.tags_before ?? target.tagsBefore),
    planned: opening ? target.planned : (previous?.planned ?? target.planned),
  };
  try {
    await context.state.setGuard(key, JSON.stringify(entry));
  } catch (error) {
    // Not on the replicas, so not sent: the record goes back to what it was, and the executor defers the deletion.
    await restore(context, key, previousText);
    throw error;
  }
  // The forge's hour runs from when it accepted the call, which may be well after the entry above was written (the
  // client waits out 429s before the forge takes it): once the call is over, its end is recorded instead, the
  // latest moment the forge can have taken it.
  const recordEnd = async () => {
    const end = context.clock.now();
    await context.state.set(key, JSON.stringify({ ...entry, last_call_at: end.toISOString() }));
  };
  try {
    await context.client.registry.removeTags(target.project, target.repositoryId, target.forge);
    await recordEnd();
  } catch (error) {
    if (error instanceof BulkDeleteAlreadyRequestedError) {
      // Someone else (the forge's own cleanup policy, a person) called within the hour, and nothing was done: the
      // hour counts from now, and this call is no follow-up.
      const refused: BulkLedgerEntry = previous
        ? { ...previous, last_call_at: now.toISOString() }
        : { ...entry, follow_ups: 0, cleanup_started_at: null };
      await context.state.set(key, JSON.stringify(refused));
      return {
        outcome: 'rate_limited',
        detail: `the forge had a bulk call within the hour; next after ${new Date(now.getTime() + BULK_CALL_INTERVAL_MS).toISOString()}`,
      };
    }
    // Refused before acting (for now, or for good: a 403 on an archived project, a 400 rejecting the parameters) or
    // never sent: the hour has not started.
    if (certainlyNotActed(error) || error instanceof ForbiddenError || error instanceof ValidationError) {
      // As it was: the next decision has the same key, so a parked refusal keeps it parked.
      await restore(context, key, previousText);
    } else {
      await recordEnd();
    }
    throw error;
  }
  const followUp = target.followUp > 0 ? `, follow-up ${target.followUp}` : '';
  return {
    detail: `${target.tagsBefore} tags before, ${target.planned} planned${followUp}; the forge deletes them in the background`,
  };
}

async function restore(context: ActContext, key: string, previousText: string | undefined): Promise<void> {
  if (previousText === undefined) await context.state.delete(key);
  else await context.state.set(key, previousText);
}

/**
 * The precondition of a per-tag deletion, read at the moment of deleting (a large repository's deletions, spaced by the
 * client, take minutes, and people delete tags too): the tag is still the image the preview judged (same creation
 * time), and every newer tag keep_n keeps is still there, so the deletion cannot leave fewer than keep_n.
 */
async function tagStillDeletable(target: TagTarget, context: ActContext): Promise<string | undefined> {
  // A 404 here reaches the executor: the tag is gone already.
  const tag = await context.client.registry.showTag(target.project, target.repositoryId, target.name);
  if (tag.created_at !== target.createdAt)
    return `tag ${target.name} was pushed again since the preview (created ${tag.created_at ?? 'at no recorded time'})`;
  if (target.keptNewer.length === 0) return undefined;
  const present = new Set<string>();
  for await (const listed of context.client.registry.allTags(target.project, target.repositoryId))
    present.add(listed.name);
  const missing = target.keptNewer.filter((name) => !present.has(name));
  if (missing.length === 0) return undefined;
  return `keep_n no longer holds: ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} gone since the preview, so ${target.name} may be among the newest now`;
}

/** The precondition of deleting an empty repository: it still has no tags (someone may have pushed one meanwhile). */
async function repositoryStillEmpty(target: RepositoryTarget, context: ActContext): Promise<string | undefined> {
  for await (const tag of context.client.registry.allTags(target.project, target.repositoryId))
    return `the repository has a tag again (${tag.name})`;
  return undefined;
}

/** The effects of the registry_cleanup decisions, each with its precondition (or why it needs none). */
export const registryCleanupActions: Readonly<Record<string, PolicyAction>> = {
  [BULK_DELETE]: defineAction({
    read: bulkDeleteTarget,
    unchecked:
      'the forge applies the rules (keep_n, older_than, the keep pattern) to the tags present when its deletion runs',
    run: bulkDelete,
  }),
  [DELETE_TAG]: defineAction({
    read: tagTarget,
    precondition: tagStillDeletable,
    run: async (target, context) => {
      // A 404 reaches the executor, which counts the tag as gone.
      await context.client.registry.removeTag(target.project, target.repositoryId, target.name);
    },
  }),
  [DELETE_REPOSITORY]: defineAction({
    read: repositoryTarget,
    precondition: repositoryStillEmpty,
    run: async (target, context) => {
      await context.client.registry.remove(target.project, target.repositoryId);
      return { detail: 'the forge deletes it in the background' };
    },
  }),
};
