import type { ClearStatusAfter, UserPreferences } from '../gitlab/types/users';

/** A user's status, kept per user; `clear_status_at` is compared with the sandbox clock on every read. */
export interface UserStatusRecord {
  emoji: string;
  message: string;
  availability: string;
  /** ISO timestamp or null (never cleared automatically). */
  clear_status_at: string | null;
}

/** A user's preferences, kept as the forge answers them. */
export type UserPreferencesRecord = UserPreferences;

/** `clear_status_after` values (GitLab's "Users API", "Set your user status") and their length in milliseconds. */
export const CLEAR_STATUS_AFTER = {
  '30_minutes': 30 * 60_000,
  '3_hours': 3 * 3_600_000,
  '8_hours': 8 * 3_600_000,
  '1_day': 86_400_000,
  '3_days': 3 * 86_400_000,
  '7_days': 7 * 86_400_000,
  '30_days': 30 * 86_400_000,
} as const satisfies Record<ClearStatusAfter, number>;

/** The user-side state the world does not seed: statuses, preferences and who follows whom. */
export class UserWritesState {
  readonly statuses = new Map<number, UserStatusRecord>();
  readonly preferences = new Map<number, UserPreferencesRecord>();
  /** Follower id → ids of the users they follow. */
  readonly follows = new Map<number, Set<number>>();
  private lastPreferencesId = 0;

  /** The status in force at `nowMs`; an expired one is dropped. */
  status(userId: number, nowMs: number): UserStatusRecord | undefined {
    const status = this.statuses.get(userId);
    if (status?.clear_status_at && Date.parse(status.clear_status_at) <= nowMs) {
      this.statuses.delete(userId);
      return undefined;
    }
    return status;
  }

  preferencesOf(userId: number): UserPreferencesRecord {
    let record = this.preferences.get(userId);
    if (!record) {
      record = { id: ++this.lastPreferencesId, user_id: userId, view_diffs_file_by_file: false };
      this.preferences.set(userId, record);
    }
    return record;
  }

  /** False when already following or following oneself (the forge answers 304). */
  follow(followerId: number, followeeId: number): boolean {
    if (followerId === followeeId) return false;
    let set = this.follows.get(followerId);
    if (!set) this.follows.set(followerId, (set = new Set<number>()));
    if (set.has(followeeId)) return false;
    set.add(followeeId);
    return true;
  }

  unfollow(followerId: number, followeeId: number): boolean {
    return this.follows.get(followerId)?.delete(followeeId) ?? false;
  }

  following(userId: number): number[] {
    return [...(this.follows.get(userId) ?? [])];
  }

  followers(userId: number): number[] {
    const out: number[] = [];
    for (const [follower, set] of this.follows) if (set.has(userId)) out.push(follower);
    return out.sort((a, b) => a - b);
  }

  /** Drops everything about a deleted user. */
  forget(userId: number): void {
    this.statuses.delete(userId);
    this.preferences.delete(userId);
    this.follows.delete(userId);
    for (const set of this.follows.values()) set.delete(userId);
  }
}
