import { USER_STATES } from '../gitlab/types/common';
import type { SshKey } from '../gitlab/types/keys';
import type { World } from '../sandbox/world';
import type { Answer } from './recording-client';

/**
 * Pure: the people of a recorded world. The token's own user comes first (a test's policy acts as the world's first
 * administrator, else its first user) with a stand-in token; every other user is kept as the forge showed them (an
 * administrator's token sees emails and two-factor, another sees public facts only, and so will the test's token).
 * Anonymised, names and the part of an email before the `@` are replaced; usernames and mail domains, which rules
 * match, are kept.
 */

type WorldUser = NonNullable<World['users']>[number];
type Level = 10 | 20 | 30 | 40 | 50;

/** What the recorder found of the token itself besides observe's reads: its role in each group and project. */
export interface PeopleFacts {
  readonly token: string;
  readonly levels: { readonly group: ReadonlyMap<number, Level>; readonly project: ReadonlyMap<number, Level> };
}

/** A user as some answer showed them: an id and a username at least. */
interface Seen {
  readonly id: number;
  readonly username: string;
  readonly [field: string]: unknown;
}

export class RecordedPeople {
  private bot: Seen | undefined;
  private readonly seen = new Map<number, Seen>();
  private readonly keys = new Map<number, SshKey[]>();
  private readonly wanted = new Set<number>();

  constructor(
    private readonly facts: PeopleFacts,
    /** Users the forge did not show when asked by id (deleted): no longer asked for. */
    private readonly unreadable: ReadonlySet<number> = new Set(),
  ) {}

  learn({ resource, method, args, value }: Answer): void {
    if (resource === 'users' && method === 'current') {
      this.bot = value as Seen;
      this.add(value as Seen);
    } else if (resource === 'users') this.add(value as Seen);
    else if (resource === 'sshKeys') {
      const owner = method === 'all' ? this.bot?.id : Number(args[0]);
      if (owner !== undefined && Number.isInteger(owner))
        this.keys.set(owner, [...(this.keys.get(owner) ?? []), value as SshKey]);
    } else if (resource === 'groupAccessRequests' || resource === 'projectAccessRequests') this.named(value as Seen);
  }

  /** A user a record names (a job's user, an approver, a requester): kept with what it shows unless known better. */
  named(user: Seen): void {
    if (!this.seen.has(user.id)) this.seen.set(user.id, user);
  }

  /** A user read to complete the world, with everything the token may see of them. */
  add(user: Seen): void {
    this.seen.set(user.id, { ...this.seen.get(user.id), ...user });
    this.wanted.delete(user.id);
  }

  /** The username of a user named by id only (a protected branch's entry); asked for when unknown. */
  username(id: number): string | undefined {
    const user = this.seen.get(id);
    if (!user && !this.unreadable.has(id)) this.wanted.add(id);
    return user?.username;
  }

  missing(): number[] {
    return [...this.wanted];
  }

  /** A path that is a user's personal namespace, not a group. */
  isUser(path: string): boolean {
    return [...this.seen.values()].some((user) => user.username.toLowerCase() === path.toLowerCase());
  }

  /** The token's membership of a group or project, when it is no administrator and the forge said its role. */
  memberships(kind: 'group' | 'project', id: number): { user: string; access_level: Level }[] {
    if (!this.bot || this.bot.is_admin === true) return [];
    const level = this.facts.levels[kind].get(id);
    return level === undefined ? [] : [{ user: this.bot.username, access_level: level }];
  }

  users(anonymise: boolean): WorldUser[] {
    const bot = this.bot;
    const users = [...this.seen.values()].sort((a, b) => (a.id === bot?.id ? -1 : b.id === bot?.id ? 1 : a.id - b.id));
    return users.map((user) => {
      const string = (field: string): string | undefined => (typeof user[field] === 'string' ? user[field] : undefined);
      const flag = (field: string): boolean | undefined => (typeof user[field] === 'boolean' ? user[field] : undefined);
      const email = string('email');
      const state = string('state');
      const twoFactor = flag('two_factor_enabled');
      const external = flag('external');
      const confirmed = user.confirmed_at;
      return {
        id: user.id,
        username: user.username,
        ...(string('name') !== undefined ? { name: anonymise ? `User ${user.id}` : string('name') } : {}),
        ...(email !== undefined
          ? { email: anonymise ? `user-${user.id}${email.slice(email.lastIndexOf('@'))}` : email }
          : {}),
        ...(user.id === bot?.id ? { tokens: [this.facts.token] } : {}),
        admin: user.is_admin === true,
        ...(state !== undefined && (USER_STATES as readonly string[]).includes(state)
          ? { state: state as WorldUser['state'] }
          : {}),
        ...(twoFactor !== undefined ? { two_factor: twoFactor } : {}),
        ...(external !== undefined ? { external } : {}),
        ...(flag('bot') === true ? { bot: true } : {}),
        ...(typeof confirmed === 'string' || confirmed === null ? { confirmed_at: confirmed } : {}),
        ...(string('created_at') !== undefined ? { created_at: string('created_at') } : {}),
        ssh_keys: (this.keys.get(user.id) ?? []).map((key) => ({
          id: key.id,
          title: key.title,
          key: key.key,
          created_at: key.created_at,
          expires_at: key.expires_at ?? null,
        })),
      };
    });
  }
}
