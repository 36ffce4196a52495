import { Logger } from '@nestjs/common';
import { systemClock } from '../clock';
import type { PolicyConfig } from '../config/policy-type';
import { LocalFiles } from '../effects/local-files';
import type { GitlabClient } from '../gitlab/client';
import { LISTED_ONLY } from './discovery';
import { UnobservedList } from './observe-targets';
import { unpaced } from './pace';
import type { PolicyContext, PolicyState } from './policy';
import { localForgeLimits } from './stores/forge-limits';

/**
 * A context built by hand, outside the engine (a test of one policy against the sandbox, a benchmark): the forge's
 * client, the policy and a state given, the rest plain: the system clock, listed projects only (no discovery of
 * globs), one target at a time, measures and notes discarded, the forge's limits counted in memory, the real disk. `fields`
 * replace any part.
 */
export function handContext(
  client: GitlabClient,
  policy: PolicyConfig,
  state: PolicyState,
  fields: Partial<PolicyContext> = {},
): PolicyContext {
  return {
    client,
    policy,
    state,
    logger: new Logger(`policy:${policy.name}`),
    now: new Date(systemClock.now()),
    clock: { now: () => new Date(systemClock.now()), sleep: (ms) => systemClock.sleep(ms) },
    mode: 'act',
    occasion: 'command',
    measures: { set: async () => undefined, add: () => undefined },
    progress: () => undefined,
    unsettled: [],
    unobserved: new UnobservedList(),
    concurrency: 1,
    discovery: LISTED_ONLY,
    pace: unpaced,
    forgeLimits: localForgeLimits(),
    files: new LocalFiles(),
    note: async () => undefined,
    ...fields,
  };
}
