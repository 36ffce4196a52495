import type { AccessRequest } from '../../../src/gitlab/types/access-requests';
import type { Job } from '../../../src/gitlab/types/jobs';
import type { DeployKey, SshKey } from '../../../src/gitlab/types/keys';
import type { RegistryRepository, RegistryTag } from '../../../src/gitlab/types/registry';
import type { AdminUser, CurrentUser, PublicUser } from '../../../src/gitlab/types/users';

/**
 * Forge records as a well-behaved forge answers them, for unit tests on MockForge: complete enough for the shape
 * checks, with only what a test is about spelled out.
 */

const AT = '2024-01-01T12:00:00.000Z';

/** Failed job `id` of `test-unit`, in pipeline 100 of project 1. */
export function aJob(fields: Partial<Job> = {}): Job {
  return {
    id: 812,
    name: 'test-unit',
    stage: 'test',
    ref: 'main',
    tag: false,
    status: 'failed',
    allow_failure: false,
    coverage: null,
    created_at: AT,
    started_at: AT,
    finished_at: AT,
    duration: 1,
    queued_duration: 0,
    commit: {
      author_email: 'a@example.com',
      author_name: 'A',
      created_at: AT,
      id: 'abc',
      message: 'm',
      short_id: 'abc',
      title: 'm',
    },
    pipeline: { id: 100, project_id: 1, ref: 'main', sha: 'abc', status: 'failed' },
    artifacts: [],
    runner: null,
    web_url: 'https://forge.test/acme/api/-/jobs/812',
    user: null,
    ...fields,
  };
}

/** Jobs `from`, `from - 1`, … (newest first, as the forge lists them). */
export function jobs(from: number, count: number): Job[] {
  return Array.from({ length: count }, (_, i) => aJob({ id: from - i }));
}

export function aUser(fields: Partial<PublicUser> = {}): PublicUser {
  return {
    id: 4,
    username: 'ann',
    name: 'Ann',
    state: 'active',
    avatar_url: '',
    web_url: 'https://forge.test/ann',
    bio: '',
    bio_html: '',
    location: null,
    public_email: '',
    skype: '',
    linkedin: '',
    twitter: '',
    website_url: '',
    organization: '',
    job_title: '',
    created_at: AT,
    bot: false,
    followers: 0,
    following: 0,
    ...fields,
  };
}

/** Users `from`, `from - 1`, …, named `user<id>`. */
export function users(from: number, count: number): PublicUser[] {
  return Array.from({ length: count }, (_, i) => aUser({ id: from - i, username: `user${from - i}` }));
}

export function aCurrentUser(fields: Partial<CurrentUser> = {}): CurrentUser {
  return {
    ...aUser(),
    email: 'ann@example.com',
    last_sign_in_at: null,
    confirmed_at: AT,
    theme_id: 1,
    last_activity_on: '2024-01-01',
    color_scheme_id: 1,
    projects_limit: 10,
    current_sign_in_at: AT,
    identities: [],
    can_create_group: true,
    can_create_project: true,
    two_factor_enabled: true,
    external: false,
    private_profile: false,
    ...fields,
  };
}

/** The administrator view of `aCurrentUser()`: no followers, with what only administrators see. */
export function anAdminUser(fields: Partial<AdminUser> = {}): AdminUser {
  const { followers: _followers, following: _following, ...user } = aCurrentUser();
  return {
    ...user,
    is_admin: false,
    note: '',
    current_sign_in_ip: '',
    last_sign_in_ip: '',
    commit_email: user.email,
    sign_in_count: 10,
    ...fields,
  };
}

export function aRepository(fields: Partial<RegistryRepository> = {}): RegistryRepository {
  return {
    id: 9,
    name: 'app',
    path: 'acme/api/app',
    project_id: 1,
    location: 'registry.forge.test/acme/api/app',
    created_at: AT,
    cleanup_policy_started_at: AT,
    ...fields,
  };
}

export function aTag(fields: Partial<RegistryTag> = {}): RegistryTag {
  return {
    name: 'v1.2.3',
    path: 'acme/api/app:v1.2.3',
    location: 'registry.forge.test/acme/api/app:v1.2.3',
    revision: 'f'.repeat(64),
    short_revision: 'fffffffff',
    digest: `sha256:${'f'.repeat(64)}`,
    created_at: AT,
    total_size: 1024,
    ...fields,
  };
}

export function anAccessRequest(fields: Partial<AccessRequest> = {}): AccessRequest {
  return { id: 12, username: 'bob', name: 'Bob', state: 'active', created_at: AT, requested_at: AT, ...fields };
}

export function anSshKey(fields: Partial<SshKey> = {}): SshKey {
  return { id: 3, title: 'ci', key: 'ssh-ed25519 AAAA', created_at: AT, expires_at: null, ...fields };
}

export function aDeployKey(fields: Partial<DeployKey> = {}): DeployKey {
  return { id: 6, title: 'release', key: 'ssh-ed25519 AAAA', created_at: AT, can_push: false, ...fields };
}
