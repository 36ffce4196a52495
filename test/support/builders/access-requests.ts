import type {
  AccessRequestsSnapshot,
  PendingRequest,
  Requester,
  SourceSnapshot,
} from '../../../src/policies/access-requests/access-requests.decide';
import {
  type AccessRequestsConfig,
  accessRequestsPolicy,
} from '../../../src/policies/access-requests/access-requests.schema';
import type { AdminUser, PublicUser } from '../../../src/gitlab/types/users';
import { anAdminUser as adminViewOf, aUser } from '../gitlab/records';
import { BASE_NOW } from '../world-builders';

/**
 * Builders for access_requests tests: small, readable defaults, with only what a test is about spelled out. The
 * config goes through the real schema, so defaults and conversions (levels, RE2, durations) are a policy file's.
 */

/** The clock of the tests: the sandbox worlds' start, 2025-06-02 12:00 UTC. */
export const NOW = new Date(BASE_NOW);
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

/** The public view of a user: no email, two-factor, external or confirmation; alice (12) by default. */
export function aPublicUser(fields: Partial<PublicUser> = {}): PublicUser {
  const id = fields.id ?? 12;
  const username = fields.username ?? 'alice';
  return aUser({
    name: username,
    web_url: `https://gitlab.example.com/${username}`,
    created_at: daysAgo(400),
    ...fields,
    id,
    username,
  });
}

/** The administrator view of a user: alice@acme.com, two-factor on, not external, confirmed, 400 days old. */
export function anAdminUser(fields: Partial<AdminUser> & { bot?: boolean } = {}): AdminUser {
  const {
    followers: _followers,
    following: _following,
    ...profile
  } = aPublicUser({ id: fields.id, username: fields.username });
  const email = `${profile.username}@acme.com`;
  return adminViewOf({
    ...profile,
    email,
    commit_email: email,
    confirmed_at: daysAgo(399),
    current_sign_in_at: daysAgo(1),
    last_activity_on: '2025-06-01',
    projects_limit: 100,
    ...fields,
  });
}

/** Group acme with these requests. */
export function aGroup(requests: readonly PendingRequest[], ref: string | number = 'acme'): SourceSnapshot {
  return { kind: 'group', ref, requests };
}

export function aProject(requests: readonly PendingRequest[], ref: string | number = 'acme/api'): SourceSnapshot {
  return { kind: 'project', ref, requests };
}

/** A pass's snapshot; `admin` says whether the token is an administrator's (default: yes). */
export function aSnapshot(
  sources: readonly SourceSnapshot[],
  users: ReadonlyArray<[number, Requester]>,
  admin = true,
): AccessRequestsSnapshot {
  return { admin, sources, users: new Map(users) };
}
