import { ACCESS_LEVEL_VALUES, ACCESS_LEVELS } from '../gitlab/types/access-levels';
import type { SourceKind } from './people-state';

/**
 * Access levels a test forces on one user for one project or group (`POST /__sandbox/access`): a person changed the
 * bot's role, or the token's scope, under it. An override replaces the level the sandbox computes from memberships,
 * administrators included, for exactly that project or group: it is not inherited by subgroups and projects, so a
 * test names each one it means.
 */

export interface AccessOverrideRecord {
  user_id: number;
  source: SourceKind;
  source_id: number;
  /** 0 hides the project or group from the user; otherwise a role (10 guest … 50 owner). */
  access_level: number;
}

/** Every level of the forge's table but minimal access: no access (hidden) or a role. */
export const OVERRIDE_LEVELS = ACCESS_LEVEL_VALUES.filter((level) => level !== ACCESS_LEVELS.minimal_access);

export class AccessOverrides {
  private readonly byKey = new Map<string, AccessOverrideRecord>();

  /** The forced level, or undefined when the sandbox computes it as usual. */
  level(userId: number, source: SourceKind, sourceId: number): number | undefined {
    // Listings ask once per project; without overrides (nearly always) no key is built.
    if (this.byKey.size === 0) return undefined;
    return this.byKey.get(key(userId, source, sourceId))?.access_level;
  }

  set(record: AccessOverrideRecord): void {
    this.byKey.set(key(record.user_id, record.source, record.source_id), record);
  }

  clear(): void {
    this.byKey.clear();
  }

  /** Drops the overrides of a deleted user, project or group. */
  forget(matches: (record: AccessOverrideRecord) => boolean): void {
    for (const [k, record] of this.byKey) if (matches(record)) this.byKey.delete(k);
  }

  list(): AccessOverrideRecord[] {
    return [...this.byKey.values()];
  }
}

function key(userId: number, source: SourceKind, sourceId: number): string {
  return `${source}:${sourceId}:${userId}`;
}
