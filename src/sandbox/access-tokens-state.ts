import { randomBytes } from 'node:crypto';
import type { PeopleState, SourceKind, UserRecord } from './people-state';

/**
 * Personal, project and group access tokens, kept as the forge keeps them: one table of personal access tokens, where
 * a project or group access token is the token of a bot user who is a member of that project or group. Rotation links
 * each token to the one it replaced (the forge's `previous_personal_access_token_id`): those links are a token family.
 * Every family revocation the forge's automatic reuse detection makes is recorded, so a test can assert there was none.
 */

export interface AccessTokenRecord {
  id: number;
  user_id: number;
  name: string;
  description: string | null;
  scopes: string[];
  created_at: string;
  /** `YYYY-MM-DD`: the token stops working at 00:00 UTC of that day; null: never. */
  expires_at: string | null;
  revoked: boolean;
  last_used_at: string | null;
  /** The token this one was rotated from. */
  previous_id: number | null;
  /** The value: shown once, in the answer that made the token. */
  value: string;
}

/** What made the forge revoke a family: a rotate of a revoked token, or a rotate request authenticated with one. */
export type FamilyRevocationCause = 'rotated_revoked_token' | 'authenticated_with_revoked_token';

export interface FamilyRevocationRecord {
  time: string;
  cause: FamilyRevocationCause;
  /** The revoked token that was named or used. */
  token_id: number;
  method: string;
  path: string;
  /** The family's tokens that were active and are revoked now (the newest among them); may be empty. */
  revoked_ids: number[];
}

/** Where a bot user belongs: the project or group its access token is for. */
export interface BotPlace {
  source: SourceKind;
  source_id: number;
}

/** The forge's default cap on an access token's lifetime (`MAX_PERSONAL_ACCESS_TOKEN_LIFETIME_IN_DAYS`). */
export const MAX_TOKEN_LIFETIME_DAYS = 365;
/** What a rotation without `expires_at` gives where the instance requires an expiry. */
export const ROTATION_DEFAULT_DAYS = 7;
const DAY_MS = 24 * 60 * 60 * 1000;

/** A new token value: the forge's `glpat-` prefix and 20 URL-safe characters (which a masked variable accepts). */
export function newTokenValue(prefix = 'glpat-'): string {
  return prefix + randomBytes(15).toString('base64url');
}

/** `date` plus `days`, as the day `YYYY-MM-DD` (UTC). */
export function dayAfter(date: Date, days: number): string {
  return new Date(date.getTime() + days * DAY_MS).toISOString().slice(0, 10);
}

export class AccessTokensState {
  readonly tokens = new Map<number, AccessTokenRecord>();
  readonly familyRevocations: FamilyRevocationRecord[] = [];
  /** Bot user id → the project or group its token is for. */
  readonly bots = new Map<number, BotPlace>();
  private readonly byValue = new Map<string, number>();

  constructor(private readonly people: PeopleState) {}

  add(record: AccessTokenRecord): AccessTokenRecord {
    this.tokens.set(record.id, record);
    this.byValue.set(record.value, record.id);
    return record;
  }

  byTokenValue(value: string): AccessTokenRecord | undefined {
    const id = this.byValue.get(value);
    return id === undefined ? undefined : this.tokens.get(id);
  }

  /** From 00:00 UTC of its expiry day on. */
  expired(record: AccessTokenRecord, now: Date): boolean {
    return record.expires_at !== null && now.getTime() >= Date.parse(`${record.expires_at}T00:00:00Z`);
  }

  active(record: AccessTokenRecord, now: Date): boolean {
    return !record.revoked && !this.expired(record, now);
  }

  /** The user's own tokens, oldest first. */
  ofUser(userId: number): AccessTokenRecord[] {
    return [...this.tokens.values()].filter((t) => t.user_id === userId).sort((a, b) => a.id - b.id);
  }

  /** The tokens of the bots of one project or group, oldest first. */
  ofPlace(source: SourceKind, sourceId: number): AccessTokenRecord[] {
    return [...this.tokens.values()]
      .filter((t) => {
        const place = this.bots.get(t.user_id);
        return place?.source === source && place.source_id === sourceId;
      })
      .sort((a, b) => a.id - b.id);
  }

  /**
   * The forge's rotation: the old token is revoked and a new one made for the same user, name, description and
   * scopes, with its own id and value, linked to the old one.
   */
  rotate(old: AccessTokenRecord, id: number, expiresAt: string, now: Date): AccessTokenRecord {
    old.revoked = true;
    return this.add({
      id,
      user_id: old.user_id,
      name: old.name,
      description: old.description,
      scopes: [...old.scopes],
      created_at: now.toISOString(),
      expires_at: expiresAt,
      revoked: false,
      last_used_at: null,
      previous_id: old.id,
      value: newTokenValue(),
    });
  }

  /**
   * The forge's reuse detection (`RevokeTokenFamilyService`): every active token rotated from `from`, directly or
   * through its successors, is revoked; the event is recorded whether or not any was left active.
   */
  revokeFamily(
    from: AccessTokenRecord,
    cause: FamilyRevocationCause,
    request: { method: string; path: string },
    now: Date,
  ): void {
    const revoked: number[] = [];
    for (const token of this.descendants(from)) {
      if (!this.active(token, now)) continue;
      token.revoked = true;
      revoked.push(token.id);
    }
    this.familyRevocations.push({
      time: now.toISOString(),
      cause,
      token_id: from.id,
      method: request.method,
      path: request.path,
      revoked_ids: revoked,
    });
  }

  private descendants(from: AccessTokenRecord): AccessTokenRecord[] {
    const found: AccessTokenRecord[] = [];
    let frontier = new Set([from.id]);
    while (frontier.size > 0) {
      const next = [...this.tokens.values()].filter((t) => t.previous_id !== null && frontier.has(t.previous_id));
      found.push(...next);
      frontier = new Set(next.map((t) => t.id));
    }
    return found;
  }

  /**
   * A bot user for a project or group access token, member of it with `accessLevel`, as the forge's
   * `ResourceAccessTokens::CreateService` makes one: `project_<id>_bot_<hex>`, named after the token.
   */
  addBot(
    place: BotPlace,
    name: string,
    accessLevel: number,
    ids: { user: number; namespace: number },
    now: string,
    username?: string,
  ): UserRecord {
    const bot: UserRecord = {
      ...BOT_DEFAULTS,
      id: ids.user,
      username: username ?? `${place.source}_${place.source_id}_bot_${randomBytes(16).toString('hex')}`,
      name,
      email: '',
      created_at: now,
      confirmed_at: now,
      namespace_id: ids.namespace,
    };
    bot.email = `${bot.username}@noreply.sandbox.test`;
    this.people.users.set(bot.id, bot);
    this.people.members.push({
      source: place.source,
      source_id: place.source_id,
      user_id: bot.id,
      access_level: accessLevel,
      created_at: now,
    });
    this.bots.set(bot.id, place);
    return bot;
  }

  /** The tokens and bots of a deleted user. */
  forgetUser(userId: number): void {
    for (const token of this.ofUser(userId)) {
      this.tokens.delete(token.id);
      this.byValue.delete(token.value);
    }
    this.bots.delete(userId);
  }

  /** The bot users of a deleted project or group (the forge deletes them with it). */
  botsOf(source: SourceKind, sourceId: number): number[] {
    return [...this.bots.entries()]
      .filter(([, place]) => place.source === source && place.source_id === sourceId)
      .map(([id]) => id);
  }

  /** The records without their values, for `GET /__sandbox/state` and `/__sandbox/access-tokens`. */
  views(): Omit<AccessTokenRecord, 'value'>[] {
    return [...this.tokens.values()]
      .sort((a, b) => a.id - b.id)
      .map(({ value: _value, ...token }) => ({ ...token, ...this.placeOf(token.user_id) }));
  }

  private placeOf(userId: number): { resource?: BotPlace } {
    const place = this.bots.get(userId);
    return place ? { resource: place } : {};
  }
}

/** What a bot user is besides its id, names and dates. */
const BOT_DEFAULTS: Omit<
  UserRecord,
  'id' | 'username' | 'name' | 'email' | 'created_at' | 'confirmed_at' | 'namespace_id'
> = {
  is_admin: false,
  state: 'active',
  two_factor_enabled: false,
  external: false,
  user_type: 'project_bot',
  last_sign_in_at: null,
  current_sign_in_at: null,
  last_activity_on: null,
  bio: '',
  location: null,
  public_email: '',
  organization: '',
  job_title: '',
  skype: '',
  linkedin: '',
  twitter: '',
  website_url: '',
  note: null,
  identities: [],
  custom_attributes: {},
  projects_limit: 0,
  can_create_group: false,
  can_create_project: false,
  private_profile: false,
};
