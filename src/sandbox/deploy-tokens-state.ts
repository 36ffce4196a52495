import type { DeployTokenScope } from '../gitlab/types/tokens';
import type { SourceKind } from './people-state';

/** Deploy tokens of projects and groups (GitLab's "Deploy tokens API"): they log in to Git and registries, not the API. */

export interface DeployTokenRecord {
  id: number;
  source: SourceKind;
  source_id: number;
  name: string;
  username: string;
  scopes: DeployTokenScope[];
  created_at: string;
  /** ISO 8601, or null: never expires. */
  expires_at: string | null;
  revoked: boolean;
  value: string;
}

export class DeployTokensState {
  readonly tokens = new Map<number, DeployTokenRecord>();

  add(record: DeployTokenRecord): DeployTokenRecord {
    this.tokens.set(record.id, record);
    return record;
  }

  expired(record: DeployTokenRecord, now: Date): boolean {
    return record.expires_at !== null && Date.parse(record.expires_at) <= now.getTime();
  }

  /** A project's or group's deploy tokens, oldest first. */
  of(source: SourceKind, sourceId: number): DeployTokenRecord[] {
    return [...this.tokens.values()]
      .filter((t) => t.source === source && t.source_id === sourceId)
      .sort((a, b) => a.id - b.id);
  }

  /** The tokens of a deleted project or group. */
  forget(source: SourceKind, sourceId: number): void {
    for (const token of this.of(source, sourceId)) this.tokens.delete(token.id);
  }

  /** The records without their values. */
  views(): Omit<DeployTokenRecord, 'value'>[] {
    return [...this.tokens.values()].sort((a, b) => a.id - b.id).map(({ value: _value, ...token }) => token);
  }
}
