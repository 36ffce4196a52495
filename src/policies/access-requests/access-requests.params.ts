import type { ActionParams } from '../../engine/policy';
import { ACCESS_LEVEL_NAMES, type GrantLevel } from './access-requests.schema';

/**
 * What each access_requests action carries (plain JSON, so it survives the queue) and how it is read back. A
 * missing or mistyped value is a bug, never something to send to the forge.
 */

export type SourceKind = 'group' | 'project';

export interface RequestTarget {
  readonly source: SourceKind;
  /** The group or project as configured: numeric id or full path (the forge takes either). */
  readonly id: string | number;
  /** The requester; access requests are addressed by the user's id (spec 02 §4). */
  readonly userId: number;
}

/** Owner (50) exists only in groups (spec 02 §2), so the level's type follows the source. */
export type ApproveTarget =
  | (RequestTarget & { readonly source: 'group'; readonly accessLevel: GrantLevel })
  | (RequestTarget & { readonly source: 'project'; readonly accessLevel: Exclude<GrantLevel, 50> });

export function requestParams(target: RequestTarget): ActionParams {
  return { source: target.source, id: target.id, user_id: target.userId };
}

export function approveParams(target: RequestTarget & { readonly accessLevel: GrantLevel }): ActionParams {
  return { ...requestParams(target), access_level: target.accessLevel };
}

export function requestTarget(params: ActionParams): RequestTarget {
  const source = params.source;
  if (source !== 'group' && source !== 'project') throw mistyped('source', '"group" or "project"', source);
  const id = params.id;
  if (typeof id !== 'string' && !(typeof id === 'number' && Number.isSafeInteger(id))) throw mistyped('id', 'a path or an integer', id);
  return { source, id, userId: integer(params, 'user_id') };
}

export function approveTarget(params: ActionParams): ApproveTarget {
  const target = requestTarget(params);
  const level = Object.values(ACCESS_LEVEL_NAMES).find((known) => known === params.access_level);
  if (level === undefined) throw mistyped('access_level', 'one of 10, 20, 30, 40, 50', params.access_level);
  if (target.source === 'group') return { ...target, source: 'group', accessLevel: level };
  // The schema keeps owner from policies with projects; a decision that carries it anyway is a bug.
  if (level === ACCESS_LEVEL_NAMES.owner) throw mistyped('access_level', 'at most 40 for a project', level);
  return { ...target, source: 'project', accessLevel: level };
}

function integer(params: ActionParams, name: string): number {
  const value = params[name];
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw mistyped(name, 'an integer', value);
  return value;
}

function mistyped(name: string, expected: string, value: unknown): TypeError {
  return new TypeError(`access_requests: action parameter "${name}" must be ${expected}, got ${JSON.stringify(value)}`);
}
