import type { DeployKeyRecord, ProjectRecord } from '../state';
import { Presenter } from './presenter';

/** A deploy key as the forge's Deploy keys API shows it: on one project, or in the instance-wide list. */
export class DeployKeyPresenter extends Presenter {
  deployKeyInProject(key: DeployKeyRecord, projectId: number): Record<string, unknown> {
    return {
      ...this.sshKey(key),
      fingerprint: key.fingerprint,
      fingerprint_sha256: key.fingerprint_sha256,
      can_push: key.projects.get(projectId)?.can_push ?? false,
    };
  }

  /** The instance-wide list has no `can_push`; it names the projects instead. */
  deployKeyInstance(key: DeployKeyRecord): Record<string, unknown> {
    const linked = (canPush: boolean): Record<string, unknown>[] =>
      [...key.projects.entries()]
        .filter(([, link]) => link.can_push === canPush)
        .map(([id]) => this.state.projects.get(id))
        .filter((p): p is ProjectRecord => p !== undefined)
        .map((p) => this.projectSummary(p));
    return {
      ...this.sshKey(key),
      fingerprint: key.fingerprint,
      fingerprint_sha256: key.fingerprint_sha256,
      projects_with_write_access: linked(true),
      projects_with_readonly_access: linked(false),
    };
  }
}
