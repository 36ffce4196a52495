import { formatDuration } from '../../config/duration';

/** When a credential is due, by its expiry or by its age, in the words plan shows: every kind picks one (or both). */

const DAY_MS = 86_400_000;

/** Whether a rotation starts now, and why, or why not. */
export interface Due {
  readonly rotate: boolean;
  readonly reason: string;
}

/** A credential expiring within `before`, or expired while still listed, is due; one without expiry never is. */
export function dueByExpiry(before: number, expiresAt: string | null, now: Date): Due {
  if (expiresAt === null) return { rotate: false, reason: 'skip: never expires' };
  const expires = Date.parse(expiresAt);
  if (Number.isNaN(expires)) return { rotate: false, reason: `skip: unreadable expires_at ${expiresAt}` };
  if (expires <= now.getTime()) return { rotate: true, reason: `rotate: expired ${day(expires)}, still listed` };
  if (expires - now.getTime() <= before) {
    return { rotate: true, reason: `rotate: expires ${day(expires)}, within rotate_before ${durationText(before)}` };
  }
  return { rotate: false, reason: `skip: expires in ${span(expires - now.getTime())}` };
}

/** A credential at least `after` old (by created_at) is due. */
export function dueByAge(after: number, createdAt: string, now: Date): Due {
  const created = Date.parse(createdAt);
  if (Number.isNaN(created)) return { rotate: false, reason: `skip: unreadable created_at ${createdAt}` };
  const age = now.getTime() - created;
  if (age >= after)
    return { rotate: true, reason: `rotate: created ${day(created)}, older than rotate_after ${durationText(after)}` };
  return { rotate: false, reason: `skip: ${span(age)} old, rotates after ${durationText(after)}` };
}

/** Key periods read best in days (`14d`, not `2w`), as policies usually write them. */
export function durationText(ms: number): string {
  return ms >= DAY_MS && ms % DAY_MS === 0 ? `${ms / DAY_MS}d` : formatDuration(ms);
}

function day(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** A rough span for reasons: whole days, else hours, else minutes. */
function span(ms: number): string {
  if (ms >= DAY_MS) return `${Math.floor(ms / DAY_MS)}d`;
  if (ms >= 3_600_000) return `${Math.floor(ms / 3_600_000)}h`;
  return `${Math.max(0, Math.floor(ms / 60_000))}m`;
}
