import type { UserState } from '../gitlab/types/common';
import { parseGpgPublicKey } from './gpg-key';
import { DAY_MS, type WorldSeeding } from './seeding';
import { parseSshPublicKey } from './ssh-key';
import type { ParsedWorld, WorldDeployKey, WorldGroup, WorldUser } from './world';

/** People and what they may reach: users with their SSH and GPG keys, memberships, access requests, deploy keys. */

export type SourceKind = 'group' | 'project';

export interface UserRecord {
  id: number;
  username: string;
  name: string;
  email: string;
  is_admin: boolean;
  state: UserState;
  two_factor_enabled: boolean;
  external: boolean;
  user_type: string;
  confirmed_at: string | null;
  created_at: string;
  last_sign_in_at: string | null;
  current_sign_in_at: string | null;
  last_activity_on: string | null;
  bio: string;
  location: string | null;
  public_email: string;
  organization: string;
  job_title: string;
  skype: string;
  linkedin: string;
  twitter: string;
  website_url: string;
  note: string | null;
  identities: { provider: string; extern_uid: string }[];
  custom_attributes: Record<string, string>;
  projects_limit: number;
  can_create_group: boolean;
  can_create_project: boolean;
  private_profile: boolean;
  /** The user's personal namespace (ids shared with groups, as on the forge). */
  namespace_id: number;
}

export interface MemberRecord {
  source: SourceKind;
  source_id: number;
  user_id: number;
  access_level: number;
  created_at: string;
  /** The day (`YYYY-MM-DD`) the membership ends, set through the members API; shown, not enforced. */
  expires_at?: string | null;
}

export interface AccessRequestRecord {
  source: SourceKind;
  source_id: number;
  user_id: number;
  /**
   * The requester as they were when asking. The forge always lists a request with its user's summary; a test that
   * removes the user behind the sandbox's back still gets a well-formed listing (the race: listed, then deleted).
   */
  username: string;
  user_state: UserRecord['state'];
  requested_at: string;
}

/** What the forge keeps of any public key, a user's or a deploy key. */
interface PublicKeyRecord {
  id: number;
  title: string;
  key: string;
  normalized: string;
  fingerprint: string;
  fingerprint_sha256: string;
  created_at: string;
  expires_at: string | null;
}

export interface SshKeyRecord extends PublicKeyRecord {
  user_id: number;
}

export interface DeployKeyRecord extends PublicKeyRecord {
  /** Project id → whether the key may push there. */
  projects: Map<number, { can_push: boolean }>;
}

export interface GpgKeyRecord {
  id: number;
  user_id: number;
  /** The armored block as given (trimmed). */
  key: string;
  /** SHA-1 of the decoded body (see gpg-key.ts), 40 upper-case hex digits; unique across users. */
  fingerprint: string;
  primary_keyid: string;
  created_at: string;
}

/** Groups and projects list their members and access requests alike. */
type WorldMemberships = Pick<WorldGroup, 'members' | 'access_requests'>;

export class PeopleState {
  readonly users = new Map<number, UserRecord>();
  readonly members: MemberRecord[] = [];
  readonly accessRequests: AccessRequestRecord[] = [];
  readonly sshKeys = new Map<number, SshKeyRecord>();
  readonly deployKeys = new Map<number, DeployKeyRecord>();
  readonly gpgKeys = new Map<number, GpgKeyRecord>();

  userByUsername(username: string): UserRecord | undefined {
    const lower = username.toLowerCase();
    for (const user of this.users.values()) if (user.username.toLowerCase() === lower) return user;
    return undefined;
  }

  member(source: SourceKind, sourceId: number, userId: number): MemberRecord | undefined {
    return this.members.find((m) => m.source === source && m.source_id === sourceId && m.user_id === userId);
  }

  /** Fingerprint already used by a user SSH key or a deploy key (the forge keeps both in one table). */
  keyWithFingerprint(fingerprintSha256: string): SshKeyRecord | DeployKeyRecord | undefined {
    for (const key of this.sshKeys.values()) if (key.fingerprint_sha256 === fingerprintSha256) return key;
    for (const key of this.deployKeys.values()) if (key.fingerprint_sha256 === fingerprintSha256) return key;
    return undefined;
  }

  gpgKeyWithFingerprint(fingerprint: string): GpgKeyRecord | undefined {
    for (const key of this.gpgKeys.values()) if (key.fingerprint === fingerprint) return key;
    return undefined;
  }

  // ---- seeding ------------------------------------------------------------------------------------------------

  /** Users with their SSH and GPG keys: seeded first, as every other area refers to users. */
  seedUsers(world: ParsedWorld, seeding: WorldSeeding): void {
    const { ids } = seeding;
    world.users.forEach((u) => ids.reserve('user', u.id));
    // Deploy keys are seeded last but share the key ids of user SSH keys.
    world.users.forEach((u) => u.ssh_keys.forEach((k) => ids.reserve('key', k.id)));
    world.deploy_keys.forEach((k) => ids.reserve('key', k.id));
    world.users.forEach((u) => u.gpg_keys.forEach((k) => ids.reserve('gpgKey', k.id)));
    for (const u of world.users) {
      const user = userRecord(u, seeding);
      this.users.set(user.id, user);
      for (const k of u.ssh_keys) this.seedSshKey(user, k, seeding);
      for (const k of u.gpg_keys) this.seedGpgKey(user, k, seeding);
    }
  }

  /** Memberships and access requests of the seeded groups, then of the projects; then deploy keys on projects. */
  seedAccess(world: ParsedWorld, seeded: SeededSources, seeding: WorldSeeding): void {
    for (const { world: g, record } of seeded.groups) {
      this.seedMemberships('group', record.id, g, record.created_at, seeding);
    }
    for (const { world: p, record } of seeded.projects) {
      this.seedMemberships('project', record.id, p, record.created_at, seeding);
    }
    for (const k of world.deploy_keys) this.seedDeployKey(k, seeded, seeding);
  }

  private seedSshKey(user: UserRecord, k: WorldUser['ssh_keys'][number], seeding: WorldSeeding): void {
    const parsed = parseSshPublicKey(k.key);
    if (!parsed) return; // the schema already rejected it
    const key: SshKeyRecord = {
      id: k.id ?? seeding.ids.next('key'),
      user_id: user.id,
      title: k.title,
      key: k.key.trim(),
      normalized: parsed.normalized,
      fingerprint: parsed.fingerprintMd5,
      fingerprint_sha256: parsed.fingerprintSha256,
      created_at: k.created_at ? seeding.time(k.created_at) : seeding.ago(30 * DAY_MS),
      expires_at: seeding.timeOrNull(k.expires_at, null),
    };
    this.sshKeys.set(key.id, key);
  }

  private seedGpgKey(user: UserRecord, k: WorldUser['gpg_keys'][number], seeding: WorldSeeding): void {
    const parsed = parseGpgPublicKey(k.key);
    if (typeof parsed === 'string') return; // the schema already rejected it
    const key: GpgKeyRecord = {
      id: k.id ?? seeding.ids.next('gpgKey'),
      user_id: user.id,
      key: k.key.trim(),
      fingerprint: parsed.fingerprint,
      primary_keyid: parsed.primaryKeyId,
      created_at: k.created_at ? seeding.time(k.created_at) : seeding.ago(30 * DAY_MS),
    };
    this.gpgKeys.set(key.id, key);
  }

  private seedMemberships(
    source: SourceKind,
    sourceId: number,
    { members, access_requests: requests }: WorldMemberships,
    fallback: string,
    seeding: WorldSeeding,
  ): void {
    for (const m of members) {
      const user = this.userByUsername(m.user);
      if (!user) continue;
      const createdAt = m.created_at ? seeding.time(m.created_at) : fallback;
      this.members.push({
        source,
        source_id: sourceId,
        user_id: user.id,
        access_level: m.access_level,
        created_at: createdAt,
      });
    }
    for (const r of requests) {
      const user = this.userByUsername(r.user);
      if (!user) continue;
      const requestedAt = r.requested_at ? seeding.time(r.requested_at) : seeding.now();
      this.accessRequests.push({
        source,
        source_id: sourceId,
        user_id: user.id,
        username: user.username,
        user_state: user.state,
        requested_at: requestedAt,
      });
    }
  }

  private seedDeployKey(k: WorldDeployKey, seeded: SeededSources, seeding: WorldSeeding): void {
    const parsed = parseSshPublicKey(k.key);
    if (!parsed) return;
    const key: DeployKeyRecord = {
      id: k.id ?? seeding.ids.next('key'),
      title: k.title,
      key: k.key.trim(),
      normalized: parsed.normalized,
      fingerprint: parsed.fingerprintMd5,
      fingerprint_sha256: parsed.fingerprintSha256,
      created_at: k.created_at ? seeding.time(k.created_at) : seeding.ago(60 * DAY_MS),
      expires_at: seeding.timeOrNull(k.expires_at, null),
      projects: new Map(),
    };
    for (const link of k.projects) {
      const project = seeded.project(link.project);
      if (project) key.projects.set(project.id, { can_push: link.can_push });
    }
    this.deployKeys.set(key.id, key);
  }
}

/**
 * What seeding memberships and deploy keys needs of the groups and projects seeded before them (namespaces-state
 * gives it; the people area does not depend on that one, which depends on it).
 */
export interface SeededSources {
  readonly groups: readonly {
    readonly world: WorldMemberships;
    readonly record: { readonly id: number; readonly created_at: string };
  }[];
  readonly projects: readonly {
    readonly world: WorldMemberships;
    readonly record: { readonly id: number; readonly created_at: string };
  }[];
  /** A seeded project by id or full path. */
  project(ref: string | number): { readonly id: number } | undefined;
}

/** A world user as the forge keeps them; the personal namespace id comes later, after the groups' ids. */
function userRecord(u: WorldUser, seeding: WorldSeeding): UserRecord {
  const created = u.created_at ? seeding.time(u.created_at) : seeding.ago(365 * DAY_MS);
  return {
    id: u.id ?? seeding.ids.next('user'),
    username: u.username,
    name: u.name ?? u.username,
    email: u.email ?? `${u.username}@sandbox.test`,
    is_admin: u.admin,
    state: u.state,
    two_factor_enabled: u.two_factor,
    external: u.external,
    user_type: u.user_type ?? (u.bot ? 'project_bot' : 'human'),
    confirmed_at: seeding.timeOrNull(u.confirmed_at, created),
    created_at: created,
    last_sign_in_at: seeding.timeOrNull(u.last_sign_in_at, null),
    current_sign_in_at: seeding.timeOrNull(u.current_sign_in_at, null),
    last_activity_on: u.last_activity_on ?? null,
    bio: u.bio,
    location: u.location,
    public_email: u.public_email,
    organization: u.organization,
    job_title: u.job_title,
    skype: u.skype,
    linkedin: u.linkedin,
    twitter: u.twitter,
    website_url: u.website_url,
    note: u.note,
    identities: u.identities,
    custom_attributes: u.custom_attributes,
    projects_limit: u.projects_limit,
    can_create_group: u.can_create_group,
    can_create_project: u.can_create_project,
    private_profile: u.private_profile,
    namespace_id: 0,
  };
}
