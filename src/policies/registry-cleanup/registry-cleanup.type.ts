import type { PolicyType } from '../../engine/policy';
import { onePage, readFirstPage, selectionProbes } from '../../engine/probe';
import { count } from '../../engine/words';
import type { GitlabClient } from '../../gitlab';
import { registryCleanupActions } from './registry-cleanup.actions';
import { decideRegistryCleanup, type RegistryCleanupSnapshot } from './registry-cleanup.decide';
import { commitRegistryCleanup, nextRegistryCleanupPass, observeRegistryCleanup } from './registry-cleanup.observer';
import { type RegistryCleanupConfig, registryCleanupPolicy } from './registry-cleanup.schema';

/** The registry_cleanup policy as the engine runs it: on its cron schedule, plus follow-ups after the hourly limit. */
export const registryCleanupType: PolicyType<RegistryCleanupConfig, RegistryCleanupSnapshot> = {
  definition: registryCleanupPolicy,
  trigger: (config) => ({ cron: config.schedule, ...(config.timezone ? { timezone: config.timezone } : {}) }),
  observe: observeRegistryCleanup,
  decide: decideRegistryCleanup,
  commit: commitRegistryCleanup,
  nextPass: nextRegistryCleanupPass,
  actions: registryCleanupActions,
  summarize: (config, snapshot) => {
    const tags = snapshot.repositories.reduce((sum, repository) => sum + repository.tags.length, 0);
    return `${count(snapshot.repositories.length, 'repository', 'repositories')}, ${count(tags, 'tag')}`;
  },
  covered: (config, snapshot) =>
    config.projects && config.projects.globs.length + config.projects.excludes.length > 0
      ? { projects: [...(snapshot.projects ?? [])] }
      : {},
  probes: (config) => [
    ...(config.projects
      ? selectionProbes(config.projects, {
          what: 'container registry',
          needs: 'Maintainer role or higher to delete tags',
          read: (client, project) => readFirstPage(client.registry.all(project, {}, onePage())),
        })
      : []),
    ...(config.groups ?? []).map((group) => ({
      target: `group ${group} (container registry)`,
      needs: 'Maintainer role or higher to delete tags',
      read: (client: GitlabClient) => readFirstPage(client.registry.allForGroup(group, {}, onePage())),
    })),
  ],
  limits: (config) => ({ actionsPerPass: config.max_actions_per_run }),
};
