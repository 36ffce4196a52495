import type { AccessRequestsSnapshot, PendingRequest, Requester, SourceSnapshot } from '../../src/policies/access-requests/access-requests.decide';
import { type AccessRequestsConfig, accessRequestsPolicy } from '../../src/policies/access-requests/access-requests.schema';
import type { AdminUser, PublicUser } from '../../src/gitlab/types/users';

/**
 * Builders for access_requests tests: small, readable defaults, with only what a test is about spelled out. The
 * config goes through the real schema, so defaults and conversions (levels, RE2, durations) are a policy file's.
 */

/** The clock of the tests: 2025-06-02 12:00 UTC. */
export const NOW = new Date('2025-06-02T12:00:00.000Z');
const DAY_MS = 86_400_000;

/** `days` days before NOW, as the forge writes timestamps. */
export function daysAgo(days: number): string {
  return new Date(NOW.getTime() - days * DAY_MS).toISOString();
}

/** An access_requests policy as written in YAML, parsed by the real schema: group acme, one approve rule. */
export function aPolicy(fields: Record<string, unknown> = {}): AccessRequestsConfig {
  return accessRequestsPolicy.schema.parse({
    name: 'staff-access',
    type: 'access_requests',
    interval: '5m',
    groups: ['acme'],
    rules: [{ approve: 'developer', when: { email_domains: ['acme.com'] } }],
    ...fields,
  });
}

/** Alice (user 12) asked a day ago. */
export function aRequest(fields: Partial<PendingRequest> = {}): PendingRequest {
  return { id: 12, username: 'alice', state: 'active', requested_at: daysAgo(1), ...fields };
}

/** The public view of a user (spec 02 §2): no email, two-factor, external or confirmation. */
export function aPublicUser(fields: Partial<PublicUser> = {}): PublicUser {
  const id = fields.id ?? 12;
  const username = fields.username ?? 'alice';
  return {
    id,
    username,
    name: username,
    state: 'active',
    avatar_url: '',
    web_url: `https://gitlab.example.com/${username}`,
    created_at: daysAgo(400),
    bio: '',
    bio_html: '',
    bot: false,
    location: null,
    public_email: '',
    skype: '',
    linkedin: '',
    twitter: '',
    website_url: '',
    organization: '',
    job_title: '',
    followers: 0,
    following: 0,
    ...fields,
  };
}

/** The administrator view of a user: alice@acme.com, two-factor on, not external, confirmed, 400 days old. */
export function anAdminUser(fields: Partial<AdminUser> & { bot?: boolean } = {}): AdminUser {
  const { followers: _followers, following: _following, ...profile } = aPublicUser({ id: fields.id, username: fields.username });
  return {
    ...profile,
    email: `${profile.username}@acme.com`,
    is_admin: false,
    last_sign_in_at: null,
    confirmed_at: daysAgo(399),
    theme_id: 1,
    last_activity_on: '2025-06-01',
    color_scheme_id: 1,
    projects_limit: 100,
    current_sign_in_at: daysAgo(1),
    note: '',
    identities: [],
    can_create_group: true,
    can_create_project: true,
    two_factor_enabled: true,
    external: false,
    private_profile: false,
    current_sign_in_ip: '',
    last_sign_in_ip: '',
    commit_email: `${profile.username}@acme.com`,
    sign_in_count: 10,
    ...fields,
  };
}

/** Group acme with these requests. */
export function aGroup(requests: readonly PendingRequest[], ref: string | number = 'acme'): SourceSnapshot {
  return { kind: 'group', ref, requests };
}

export function aProject(requests: readonly PendingRequest[], ref: string | number = 'acme/api'): SourceSnapshot {
  return { kind: 'project', ref, requests };
}

/** A pass's snapshot; `admin` says whether the token is an administrator's (default: yes). */
export function aSnapshot(sources: readonly SourceSnapshot[], users: ReadonlyArray<[number, Requester]>, admin = true): AccessRequestsSnapshot {
  return { admin, sources, users: new Map(users) };
}
