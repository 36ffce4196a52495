import { z } from 'zod';
import { param, readParams } from '../../engine/action-params';
import type { ActionParams } from '../../engine/policy';
import { GRANT_LEVELS, type GrantLevel } from './access-requests.schema';

/**
 * What each access_requests action carries (plain JSON, so it survives the queue) and how it is read back. A
 * missing or mistyped value is a bug, never something to send to the forge.
 */

export type SourceKind = 'group' | 'project';

export interface RequestTarget {
  readonly source: SourceKind;
  /** The group or project as configured: numeric id or full path (the forge takes either). */
  readonly id: string | number;
  /** The requester; access requests are addressed by the user's id. */
  readonly userId: number;
  /**
   * When the request decided on was made: a request withdrawn and made again since is another one, decided afresh.
   * Absent in actions queued by a version that did not carry it.
   */
  readonly requestedAt?: string;
}

/** Owner (50) exists only in groups, so the level's type follows the source. */
export type ApproveTarget =
  | (RequestTarget & { readonly source: 'group'; readonly accessLevel: GrantLevel })
  | (RequestTarget & { readonly source: 'project'; readonly accessLevel: Exclude<GrantLevel, 50> });

export function requestParams(target: RequestTarget): ActionParams {
  return {
    source: target.source,
    id: target.id,
    user_id: target.userId,
    ...(target.requestedAt !== undefined ? { requested_at: target.requestedAt } : {}),
  };
}

export function approveParams(target: RequestTarget & { readonly accessLevel: GrantLevel }): ActionParams {
  return { ...requestParams(target), access_level: target.accessLevel };
}

const requestSchema = z.object({
  source: z.enum(['group', 'project'], { error: '"group" or "project"' }),
  id: param.idOrPath(),
  user_id: param.integer(),
  requested_at: param.text().optional(),
});

const approveSchema = requestSchema.extend({
  access_level: z.union(
    Object.values(GRANT_LEVELS).map((level) => z.literal(level)),
    { error: 'one of 10, 20, 30, 40, 50' },
  ),
});

export function requestTarget(params: ActionParams): RequestTarget {
  const read = readParams('access_requests', requestSchema, params);
  return {
    source: read.source,
    id: read.id,
    userId: read.user_id,
    ...(read.requested_at !== undefined ? { requestedAt: read.requested_at } : {}),
  };
}

export function approveTarget(params: ActionParams): ApproveTarget {
  const read = readParams('access_requests', approveSchema, params);
  const target = {
    source: read.source,
    id: read.id,
    userId: read.user_id,
    ...(read.requested_at !== undefined ? { requestedAt: read.requested_at } : {}),
  };
  const level = read.access_level;
  if (target.source === 'group') return { ...target, source: 'group', accessLevel: level };
  // The schema keeps owner from policies with projects; a decision that carries it anyway is a bug.
  if (level === GRANT_LEVELS.owner) {
    throw new TypeError(
      `access_requests: action parameter "access_level" must be at most 40 for a project, got ${level}`,
    );
  }
  return { ...target, source: 'project', accessLevel: level };
}
