import { configOf, defineAction } from '../../engine/action-params';
import type { PolicyAction, ActContext } from '../../engine/policy';
import { APPROVE, decideAccessRequests, DENY } from './access-requests.decide';
import { observeRequest } from './access-requests.observer';
import { type ApproveTarget, approveTarget, type RequestTarget, requestTarget } from './access-requests.params';
import { type AccessRequestsConfig, accessRequestsPolicy } from './access-requests.schema';

/**
 * The precondition of an approval or denial: the request is still pending as decided on, and the rules, applied to the
 * requester's record read again now, still decide the same (a person may have blocked the user, or the user changed
 * what a rule looks at). Otherwise what changed, and nothing is sent.
 */
async function stillDecided(
  action: typeof APPROVE | typeof DENY,
  target: RequestTarget | ApproveTarget,
  context: ActContext,
): Promise<string | undefined> {
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

/** Approving and denying a request, each after its precondition; the executor is their only caller. */
export const accessRequestsActions: Readonly<Record<string, PolicyAction>> = {
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
};
