import { z } from 'zod';
import { param, readParams } from '../../engine/action-params';
import type { ActionParams } from '../../engine/policy';
import type { BulkDeleteTagsParams } from '../../gitlab/types/registry';

/**
 * What each registry_cleanup action carries (plain JSON, so it survives the queue) and how it is read back. A
 * missing or mistyped value is a bug, never something to send to the forge.
 */

/** A bulk deletion: the forge's parameters exactly as the policy gives them, and the counts the report needs. */
export interface BulkDeleteTarget {
  readonly project: number;
  readonly repositoryId: number;
  readonly forge: BulkDeleteTagsParams;
  /** Tags in the repository when the pass read it. */
  readonly tagsBefore: number;
  /** Tags the preview says this call deletes (a capped forge may delete fewer). */
  readonly planned: number;
  /** 0 for a cleanup's first call, then 1, 2… up to max_follow_ups. */
  readonly followUp: number;
}

export function bulkDeleteParams(target: BulkDeleteTarget): ActionParams {
  const { forge } = target;
  return {
    project: target.project,
    repository_id: target.repositoryId,
    name_regex_delete: forge.name_regex_delete,
    ...(forge.name_regex_keep !== undefined ? { name_regex_keep: forge.name_regex_keep } : {}),
    ...(forge.keep_n !== undefined ? { keep_n: forge.keep_n } : {}),
    ...(forge.older_than !== undefined ? { older_than: forge.older_than } : {}),
    tags_before: target.tagsBefore,
    planned: target.planned,
    follow_up: target.followUp,
  };
}

const repositorySchema = z.object({ project: param.integer(), repository_id: param.integer() });

const bulkDeleteSchema = repositorySchema.extend({
  name_regex_delete: param.text(),
  name_regex_keep: param.text().optional(),
  keep_n: z.number({ error: 'a number' }).optional(),
  older_than: param.text().optional(),
  tags_before: param.integer(),
  planned: param.integer(),
  follow_up: param.integer(),
});

export function bulkDeleteTarget(params: ActionParams): BulkDeleteTarget {
  const read = readParams('registry_cleanup', bulkDeleteSchema, params);
  return {
    project: read.project,
    repositoryId: read.repository_id,
    forge: {
      name_regex_delete: read.name_regex_delete,
      ...(read.name_regex_keep !== undefined ? { name_regex_keep: read.name_regex_keep } : {}),
      ...(read.keep_n !== undefined ? { keep_n: read.keep_n } : {}),
      ...(read.older_than !== undefined ? { older_than: read.older_than } : {}),
    },
    tagsBefore: read.tags_before,
    planned: read.planned,
    followUp: read.follow_up,
  };
}

export interface TagTarget {
  readonly project: number;
  readonly repositoryId: number;
  readonly name: string;
  /** As the preview saw it: the precondition compares it with the forge's current answer. */
  readonly createdAt: string | null;
  /**
   * The newer tags `keep_n` keeps, which make this one deletable: the deletion goes out only while all of them are
   * still there (a person deleting them meanwhile would leave fewer than keep_n). Empty without keep_n.
   */
  readonly keptNewer: readonly string[];
}

export function tagParams(target: TagTarget): ActionParams {
  return {
    project: target.project,
    repository_id: target.repositoryId,
    tag: target.name,
    created_at: target.createdAt,
    kept_newer: [...target.keptNewer],
  };
}

const tagSchema = repositorySchema.extend({
  tag: param.text(),
  created_at: z.string({ error: 'a string or null' }).nullable(),
  // Deletions queued by a version that did not carry it: only the tag itself is checked.
  kept_newer: z.array(param.text(), { error: 'a list of tag names' }).optional(),
});

export function tagTarget(params: ActionParams): TagTarget {
  const read = readParams('registry_cleanup', tagSchema, params);
  return {
    project: read.project,
    repositoryId: read.repository_id,
    name: read.tag,
    createdAt: read.created_at,
    keptNewer: read.kept_newer ?? [],
  };
}

export interface RepositoryTarget {
  readonly project: number;
  readonly repositoryId: number;
}

export function repositoryParams(target: RepositoryTarget): ActionParams {
  return { project: target.project, repository_id: target.repositoryId };
}

export function repositoryTarget(params: ActionParams): RepositoryTarget {
  const read = readParams('registry_cleanup', repositorySchema, params);
  return { project: read.project, repositoryId: read.repository_id };
}
