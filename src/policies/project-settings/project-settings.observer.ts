import { selectProjects } from '../../engine/discovery';
import { observeTargets } from '../../engine/observe-targets';
import type { ObserveContext } from '../../engine/policy';
import type { ProjectSettingsProjectSnapshot, ProjectSettingsSnapshot } from './project-settings.decide';
import type { ProjectSettingsConfig } from './project-settings.schema';
import { observeProject } from './project-settings.section';
import { SECTIONS } from './project-settings.sections';
import { readRecordsElsewhere } from './protected-branches/protected-branches.observer';

/** Reading every selected project, each section only where the policy declares it. */
export async function observeProjectSettings(
  config: ProjectSettingsConfig,
  context: ObserveContext,
): Promise<ProjectSettingsSnapshot> {
  const selected = await selectProjects(context, config.projects, config.include_archived);
  // Each project on its own: one the forge refuses, or that the file names and is gone, is recorded against that
  // project and the others go on (the pass ends partial); one a glob found that is gone since drops out.
  const projects = await observeTargets(
    context,
    selected,
    (project) => ({ target: `project ${project}`, listed: config.projects.names(project) }),
    (project) => observeProject<ProjectSettingsProjectSnapshot>(SECTIONS, config, project, context),
  );
  const read = projects.filter((project): project is ProjectSettingsProjectSnapshot => project !== undefined);
  const elsewhere = await readRecordsElsewhere(context, new Set(read.map((project) => project.projectId)));
  return { projects: read, ...(elsewhere.length > 0 ? { recordsElsewhere: elsewhere } : {}) };
}
