import { createHash } from 'node:crypto';
import type { DeployKeyRecord, MemberRecord, ProjectRecord, SandboxState, SshKeyRecord, UserRecord } from '../state';

/**
 * What every area's presenter (`<area>.presenter.ts`) builds on: records become the API's JSON field by field, and
 * addresses (web_url) use the address the client called, so the answers point back at the sandbox. Here are the
 * views several areas embed: a user's and a project's summary, an SSH key, a member.
 */
export class Presenter {
  constructor(
    protected readonly state: SandboxState,
    protected readonly baseUrl: string,
  ) {}

  userSummary(user: UserRecord): Record<string, unknown> {
    return {
      id: user.id,
      username: user.username,
      name: user.name,
      state: user.state,
      avatar_url: `https://www.gravatar.com/avatar/${md5(user.email.toLowerCase())}?s=80&d=identicon`,
      web_url: `${this.baseUrl}/${user.username}`,
    };
  }

  projectSummary(project: ProjectRecord): Record<string, unknown> {
    return {
      id: project.id,
      description: project.description,
      name: project.name,
      name_with_namespace: this.state.projectFullName(project),
      path: project.path,
      path_with_namespace: this.state.projectFullPath(project),
      created_at: project.created_at,
    };
  }

  /** A user's key and a deploy key share these fields. */
  sshKey(key: SshKeyRecord | DeployKeyRecord): Record<string, unknown> {
    return { id: key.id, title: key.title, created_at: key.created_at, expires_at: key.expires_at, key: key.key };
  }

  /** The forge's `Member` entity: the user, their role there and the membership's dates. */
  member(user: UserRecord, member: MemberRecord): Record<string, unknown> {
    return {
      ...this.userSummary(user),
      created_at: member.created_at,
      access_level: member.access_level,
      expires_at: member.expires_at ?? null,
      membership_state: 'active',
    };
  }
}

function md5(text: string): string {
  return createHash('md5').update(text).digest('hex');
}
