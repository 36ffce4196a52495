import type { StepContext } from '../../engine/policy';
import { ForbiddenError, NotFoundError } from '../../gitlab/transport/errors';
import type { SetProject } from './group-backup.project-progress';
import { relativeProjectPath } from './group-backup.set';

/** The projects of the newest set before this one (those it holds and those it lacks): this one expects them. */
export interface LastSet {
  readonly set: string;
  readonly projects: ReadonlyArray<{ readonly id: number; readonly path: string }>;
}

/** A project of the last set the forge's listing no longer has, which this set lacks, and why. */
export interface UnseenProject {
  readonly project: SetProject;
  readonly why: string;
}

/**
 * The last set's projects the listing no longer has, read by id: moved out of the tree or deleted (404 to an
 * administrator) they are left out; out of the token's sight (404 or 403 otherwise) they are missing from this set
 * too, so the set is partial rather than complete without them. Unseen is not gone (docs/architecture.md).
 */
export async function unseenProjects(
  context: StepContext,
  groupPath: string,
  listed: readonly SetProject[],
  last: LastSet | undefined,
): Promise<UnseenProject[]> {
  const ids = new Set(listed.map((project) => project.id));
  const gone = (last?.projects ?? []).filter((project) => !ids.has(project.id));
  if (!last || gone.length === 0) return [];
  const me = await context.client.users.current();
  const administrator = 'is_admin' in me && me.is_admin === true;
  const unseen: UnseenProject[] = [];
  for (const project of gone) {
    const where = `${groupPath}/${project.path} (id ${project.id})`;
    try {
      const now = await context.client.projects.show(project.id);
      if (!now.path_with_namespace.toLowerCase().startsWith(`${groupPath.toLowerCase()}/`)) {
        context.logger.log(`${where}: moved out of ${groupPath} (now ${now.path_with_namespace}); not in this set`);
        continue;
      }
      unseen.push({
        project: { id: project.id, path: relativeProjectPath(groupPath, now.path_with_namespace), name: now.name },
        why: `not listed by the forge now although it answers for it (${now.path_with_namespace})`,
      });
    } catch (error) {
      if (!(error instanceof NotFoundError || error instanceof ForbiddenError)) throw error;
      if (error instanceof NotFoundError && administrator) {
        context.logger.log(`${where}: deleted (an administrator's token no longer finds it); not in this set`);
        continue;
      }
      unseen.push({
        project: { id: project.id, path: project.path, name: project.path },
        why: `not visible to the token now (${error.summary}); it was in the set ${last.set}`,
      });
    }
  }
  return unseen;
}
