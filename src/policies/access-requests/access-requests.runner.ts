import type { ActionParams, PolicyContext, PolicyRunner } from '../../engine/policy';
import { APPROVE, type AccessRequestsSnapshot, decideAccessRequests, DENY } from './access-requests.decide';
import { observeAccessRequests } from './access-requests.observer';
import { approveTarget, requestTarget } from './access-requests.params';
import { type AccessRequestsConfig, accessRequestsPolicy } from './access-requests.schema';

/**
 * The access_requests policy as the engine runs it: every `interval`. Each action is taken at most once per request
 * (the executor's ledger, keyed by the request); a request approved or denied by someone else meanwhile answers 404,
 * which the executor records as gone.
 */
export const accessRequestsRunner: PolicyRunner<AccessRequestsConfig, AccessRequestsSnapshot> = {
  type: accessRequestsPolicy.type,
  schema: accessRequestsPolicy.schema,
  trigger: (config) => ({ every: config.interval }),
  observe: observeAccessRequests,
  decide: decideAccessRequests,
  actions: {
    [APPROVE]: async (params: ActionParams, context: PolicyContext) => {
      const target = approveTarget(params);
      const { client } = context;
      const member =
        target.source === 'group'
          ? await client.groupAccessRequests.approve(target.id, target.userId, { access_level: target.accessLevel })
          : await client.projectAccessRequests.approve(target.id, target.userId, { access_level: target.accessLevel });
      return { detail: `member at access level ${member.access_level}` };
    },
    [DENY]: async (params: ActionParams, context: PolicyContext) => {
      const target = requestTarget(params);
      const resource = target.source === 'group' ? context.client.groupAccessRequests : context.client.projectAccessRequests;
      await resource.deny(target.id, target.userId);
    },
  },
  maxActionsPerRun: (config) => config.max_actions_per_run,
};
