import { z } from 'zod';
import { ACCESS_LEVEL_NAMES, ACCESS_LEVEL_VALUES, ACCESS_LEVELS } from '../../gitlab/types/access-levels';
import { VISIBILITIES } from '../../gitlab/types/common';
import { parseDuration } from '../duration';

/** The values every part of a world file is written with: timestamps, dates, ids, roles, visibilities. */

const RELATIVE = /^now\s*(?:([+-])\s*(.+))?$/;

/**
 * Timestamps are ISO 8601, or relative to the clock's start: `now`, `now-3d`, `now+20d` (durations as for
 * `older_than`), so a world stays believable whatever day it is served.
 */
export function resolveTimestamp(value: string, startMs: number): string {
  const relative = RELATIVE.exec(value.trim());
  if (!relative) return new Date(value).toISOString();
  const offset = relative[2] !== undefined ? (parseDuration(relative[2]) ?? 0) : 0;
  return new Date(startMs + (relative[1] === '-' ? -offset : offset)).toISOString();
}

function isTimestamp(value: string): boolean {
  const relative = RELATIVE.exec(value.trim());
  if (relative) return relative[2] === undefined || parseDuration(relative[2]) !== undefined;
  return /^\d{4}-\d{2}-\d{2}/.test(value) && !Number.isNaN(Date.parse(value));
}

export const timestamp = z
  .string()
  .refine(isTimestamp, { message: 'must be an ISO 8601 timestamp or relative to now (now-3d, now+2w)' });
export const date = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, { message: 'must be a date YYYY-MM-DD' });
export const id = z.number().int().positive();

/** A member's role by name (`developer`) or number (`30`); yields the number. */
export const accessLevel = z
  .union([z.literal(ACCESS_LEVEL_VALUES), z.enum(ACCESS_LEVEL_NAMES)])
  .transform((value) => (typeof value === 'number' ? value : ACCESS_LEVELS[value]));

export const visibility = z.enum(VISIBILITIES);

/** A group's or a project's path: one segment of a full path. */
export const pathSegment = z.string().regex(/^[A-Za-z0-9_.-]+$/, { message: 'must be a single path segment' });
