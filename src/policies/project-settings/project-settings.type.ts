import { type PolicyType, SKIP } from '../../engine/policy';
import { onePage, readFirstPage, selectionProbes } from '../../engine/probe';
import { count } from '../../engine/words';
import { projectSettingsActions } from './project-settings.actions';
import { decideProjectSettings, type ProjectSettingsSnapshot } from './project-settings.decide';
import { observeProjectSettings } from './project-settings.observer';
import { type ProjectSettingsConfig, projectSettingsPolicy } from './project-settings.schema';
import { declaredSecrets } from './project-settings.secrets';
import { BRANCH_UNPROTECTED } from './protected-branches/protected-branches.decide';

/**
 * The project_settings policy as the engine runs it: every `interval`, read the declared sections of each project,
 * decide the changes (pure), and make them through the executor. Each change is its own action; a reprotect is one
 * action of two calls, and its failure between them is repaired first by the next pass (see decideProjectSettings).
 */
export const projectSettingsType: PolicyType<ProjectSettingsConfig, ProjectSettingsSnapshot> = {
  definition: projectSettingsPolicy,
  trigger: (config) => ({ every: config.interval }),
  observe: observeProjectSettings,
  decide: decideProjectSettings,
  actions: projectSettingsActions,
  secrets: declaredSecrets,
  harms: [BRANCH_UNPROTECTED],
  summarize: (_config, snapshot, decisions) => {
    const drifts = decisions.filter((decision) => decision.action !== SKIP).length;
    return `${count(snapshot.projects.length, 'project')}, ${count(drifts, 'drift')}`;
  },
  // Only where globs or excludes decide which projects these are: a list written out needs no echo.
  covered: (config, snapshot) =>
    config.projects.globs.length + config.projects.excludes.length > 0
      ? { projects: snapshot.projects.map((project) => String(project.project)) }
      : {},
  probes: (config) =>
    selectionProbes(config.projects, {
      what: 'protected branches',
      needs: 'Maintainer role or higher',
      read: (client, project) => readFirstPage(client.protectedBranches.all(project, {}, onePage())),
    }),
  limits: (config) => ({ actionsPerPass: config.max_actions_per_run }),
};
