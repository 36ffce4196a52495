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

export function bulkDeleteTarget(params: ActionParams): BulkDeleteTarget {
  const keepN = optional(params, 'keep_n', 'number');
  const keep = optional(params, 'name_regex_keep', 'string');
  const olderThan = optional(params, 'older_than', 'string');
  return {
    project: integer(params, 'project'),
    repositoryId: integer(params, 'repository_id'),
    forge: {
      name_regex_delete: text(params, 'name_regex_delete'),
      ...(keep !== undefined ? { name_regex_keep: keep } : {}),
      ...(keepN !== undefined ? { keep_n: keepN } : {}),
      ...(olderThan !== undefined ? { older_than: olderThan } : {}),
    },
    tagsBefore: integer(params, 'tags_before'),
    planned: integer(params, 'planned'),
    followUp: integer(params, 'follow_up'),
  };
}

export interface TagTarget {
  readonly project: number;
  readonly repositoryId: number;
  readonly name: string;
  /** As the preview saw it: a recheck compares it with the forge's current answer. */
  readonly createdAt: string | null;
}

export function tagParams(target: TagTarget): ActionParams {
  return { project: target.project, repository_id: target.repositoryId, tag: target.name, created_at: target.createdAt };
}

export function tagTarget(params: ActionParams): TagTarget {
  const createdAt = params.created_at;
  if (createdAt !== null && typeof createdAt !== 'string') throw mistyped('created_at', 'a string or null', createdAt);
  return { project: integer(params, 'project'), repositoryId: integer(params, 'repository_id'), name: text(params, 'tag'), createdAt };
}

export interface RepositoryTarget {
  readonly project: number;
  readonly repositoryId: number;
}

export function repositoryParams(target: RepositoryTarget): ActionParams {
  return { project: target.project, repository_id: target.repositoryId };
}

export function repositoryTarget(params: ActionParams): RepositoryTarget {
  return { project: integer(params, 'project'), repositoryId: integer(params, 'repository_id') };
}

function integer(params: ActionParams, name: string): number {
  const value = params[name];
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw mistyped(name, 'an integer', value);
  return value;
}

function text(params: ActionParams, name: string): string {
  const value = params[name];
  if (typeof value !== 'string') throw mistyped(name, 'a string', value);
  return value;
}

function optional<T extends 'string' | 'number'>(
  params: ActionParams,
  name: string,
  type: T,
): (T extends 'string' ? string : number) | undefined {
  const value = params[name];
  if (value === undefined) return undefined;
  if (typeof value !== type) throw mistyped(name, `a ${type}`, value);
  return value as T extends 'string' ? string : number;
}

function mistyped(name: string, expected: string, value: unknown): TypeError {
  return new TypeError(`registry_cleanup: action parameter "${name}" must be ${expected}, got ${JSON.stringify(value)}`);
}
