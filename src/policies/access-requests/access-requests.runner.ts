import { configOf, defineAction } from '../../engine/action-params';
import type { PolicyContext, PolicyRunner } from '../../engine/policy';
import { groupSelectionProbes, onePage, readFirstPage, selectionProbes } from '../../engine/probe';
import { count } from '../../engine/words';
import { APPROVE, type AccessRequestsSnapshot, decideAccessRequests, DENY } from './access-requests.decide';
import { observeAccessRequests, observeRequest } from './access-requests.observer';
import { type ApproveTarget, approveTarget, type RequestTarget, requestTarget } from './access-requests.params';
import { type AccessRequestsConfig, accessRequestsPolicy } from './access-requests.schema';

/**
 * The precondition of an approval or denial: the request is still pending as decided on, and the rules, applied to the
 * requester's record read again now, still decide the same (a person may have blocked the user, or the user changed
 * what a rule looks at). Otherwise what changed, and nothing is sent.
 */
async function stillDecided(action: typeof APPROVE | typeof DENY, target: RequestTarget | ApproveTarget, context: PolicyContext): Promise<string | undefined> {
  const config = configOf<AccessRequestsConfig>(context, accessRequestsPolicy);
  const now = await observeRequest(context, target);
  if (typeof now === 'string') return now;
  const [decision] = decideAccessRequests(config, now, context.now);
  if (!decision) return `the request of user ${target.userId} is no longer pending`;
  const level = 'accessLevel' in target ? target.accessLevel : undefined;
  if (decision.action !== action || (level !== undefined && decision.params.access_level !== level)) {
    return `the rules decide otherwise now: ${decision.reason}`;
  }
  return undefined;
}

/** Facts of a requester that only the administrator's view of a user carries. */
const ADMIN_FACTS = ['email_domains', 'two_factor', 'external', 'confirmed'] as const;

/**
 * The access_requests policy as the engine runs it: every `interval`. Each action is taken at most once per request
 * (the executor's ledger, keyed by the request); a request approved or denied by someone else meanwhile answers 404,
 * which the executor records as gone.
 */
export const accessRequestsRunner: PolicyRunner<AccessRequestsConfig, AccessRequestsSnapshot> = {
  definition: accessRequestsPolicy,
  trigger: (config) => ({ every: config.interval }),
  observe: observeAccessRequests,
  decide: decideAccessRequests,
  actions: {
    [APPROVE]: defineAction({
      read: approveTarget,
      precondition: (target, context) => stillDecided(APPROVE, target, context),
      run: async (target, { client }) => {
        const member =
          target.source === 'group'
            ? await client.groupAccessRequests.approve(target.id, target.userId, { access_level: target.accessLevel })
            : await client.projectAccessRequests.approve(target.id, target.userId, { access_level: target.accessLevel });
        return { detail: `member at access level ${member.access_level}` };
      },
    }),
    [DENY]: defineAction({
      read: requestTarget,
      precondition: (target, context) => stillDecided(DENY, target, context),
      run: async (target, { client }) => {
        const resource = target.source === 'group' ? client.groupAccessRequests : client.projectAccessRequests;
        await resource.deny(target.id, target.userId);
      },
    }),
  },
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
    // Without the administrator's view these facts are unknown, so rules on them never hold: nothing is approved.
    return facts.size === 0 ? undefined : `its rules look at ${[...facts].join(', ')}, which only an administrator's token can see`;
  },
  // Only where globs or excludes decide which groups and projects these are: a list written out needs no echo.
  coveredGroups: (config, snapshot) =>
    config.groups && config.groups.globs.length + config.groups.excludes.length > 0
      ? snapshot.sources.filter((source) => source.kind === 'group').map((source) => String(source.ref))
      : undefined,
  covered: (config, snapshot) =>
    config.projects && config.projects.globs.length + config.projects.excludes.length > 0
      ? snapshot.sources.filter((source) => source.kind === 'project').map((source) => String(source.ref))
      : undefined,
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
  maxActionsPerRun: (config) => config.max_actions_per_run,
};
