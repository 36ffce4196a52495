import type { PolicyType } from '../../engine/policy';
import { groupSelectionProbes, onePage, readFirstPage, selectionProbes } from '../../engine/probe';
import { count } from '../../engine/words';
import { accessRequestsActions } from './access-requests.actions';
import { type AccessRequestsSnapshot, decideAccessRequests } from './access-requests.decide';
import { observeAccessRequests } from './access-requests.observer';
import { type AccessRequestsConfig, accessRequestsPolicy } from './access-requests.schema';

/** Facts of a requester that only the administrator's view of a user carries. */
const ADMIN_FACTS = ['email_domains', 'two_factor', 'external', 'confirmed'] as const;

/**
 * The access_requests policy as the engine runs it: every `interval`. Each action is taken at most once per request
 * (the executor's ledger, keyed by the request); a request approved or denied by someone else meanwhile answers 404,
 * which the executor records as gone.
 */
export const accessRequestsType: PolicyType<AccessRequestsConfig, AccessRequestsSnapshot> = {
  definition: accessRequestsPolicy,
  trigger: (config) => ({ every: config.interval }),
  observe: observeAccessRequests,
  decide: decideAccessRequests,
  actions: accessRequestsActions,
  summarize: (config, snapshot) => {
    const requests = snapshot.sources.reduce((sum, source) => sum + source.requests.length, 0);
    const groups = snapshot.sources.filter((source) => source.kind === 'group').length;
    return `${count(groups, 'group')} and ${count(snapshot.sources.length - groups, 'project')}, ${count(requests, 'pending request')}`;
  },
  needsAdministrator: (config) => {
    const facts = new Set<string>();
    for (const rule of config.rules) {
      for (const fact of ADMIN_FACTS) if (rule.when?.[fact] !== undefined) facts.add(fact);
    }
    // Without the administrator's view these facts are unknown: a request such a rule would decide is left pending.
    return facts.size === 0
      ? undefined
      : `its rules look at ${[...facts].join(', ')}, which only an administrator's token can see; until it can, the requests those rules would decide are left pending, neither approved nor denied`;
  },
  // Only where globs or excludes decide which groups and projects these are: a list written out needs no echo.
  covered: (config, snapshot) => {
    const globbed = (selection?: { globs: readonly unknown[]; excludes: readonly unknown[] }) =>
      selection !== undefined && selection.globs.length + selection.excludes.length > 0;
    const refs = (kind: 'group' | 'project') =>
      snapshot.sources.filter((source) => source.kind === kind).map((source) => String(source.ref));
    return {
      ...(globbed(config.groups) ? { groups: refs('group') } : {}),
      ...(globbed(config.projects) ? { projects: refs('project') } : {}),
    };
  },
  probes: (config) => [
    ...(config.groups
      ? groupSelectionProbes(config.groups, {
          what: 'access requests',
          needs: 'Owner role, or Maintainer where the forge allows it',
          read: (client, group) => readFirstPage(client.groupAccessRequests.all(group, onePage())),
        })
      : []),
    ...(config.projects
      ? selectionProbes(config.projects, {
          what: 'access requests',
          needs: 'Maintainer role or higher',
          read: (client, project) => readFirstPage(client.projectAccessRequests.all(project, onePage())),
        })
      : []),
  ],
  limits: (config) => ({ actionsPerPass: config.max_actions_per_run }),
};
