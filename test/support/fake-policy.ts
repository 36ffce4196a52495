import { Injectable, Module, type OnModuleInit } from '@nestjs/common';
import { z } from 'zod';
import { definePolicyType } from '../../src/config/policy-type';
import { duration } from '../../src/config/validators';
import { defineAction, param, readParams } from '../../src/engine/action-params';
import type { ActionParams, Decision, PolicyMeasure, PolicyType } from '../../src/engine/policy';
import { KnownPolicies } from '../../src/engine/known-policies';
import { ForbiddenError, NotFoundError, ServerError } from '../../src/gitlab';
import { observeTargets } from '../../src/engine/observe-targets';

/**
 * A policy type for engine tests: it "touches" the targets listed in its config. Its effect records every call in
 * `touched`, so a test can count exactly how often the engine acted; `fail` makes chosen targets fail.
 */
export const fakePolicy = definePolicyType('fake_touch', 'Touches targets, for engine tests.', {
  interval: duration(),
  targets: z.array(z.string()),
  skip: z.array(z.string()).default([]),
  delay: duration().prefault('0s'),
  max_actions_per_run: z.number().int().default(100),
  follow_up: duration().optional(),
  /** Targets whose touch mends a harm of the bot's own (Decision.repairs): run first, never parked or capped. */
  repairs: z.array(z.string()).default([]),
});
type FakeConfig = z.output<typeof fakePolicy.schema>;

export const touched: string[] = [];
export const failures = new Map<string, 'gone' | 'server' | 'rate_limited' | 'refused'>();
/** Targets whose read the forge refuses (403): observe records them and goes on with the others. */
export const unreadable = new Set<string>();
/**
 * What the engine handed to observe and commit, pass by pass: the unsettled targets' keys, and each commit's records
 * as `target outcome`.
 */
export const seen: {
  unsettled: string[][];
  commits: string[][];
  redisDataLostAt?: Date;
  actedAt: Date[];
  onObserve?: () => void;
} = {
  unsettled: [],
  commits: [],
  actedAt: [],
};
/** Targets whose precondition finds the action no longer needed (a person changed the forge meanwhile). */
export const stale = new Set<string>();

/** A measure the fake type publishes, cluster-wide: when each target was last touched. */
export const LAST_TOUCH: PolicyMeasure = {
  name: 'fake_last_touch_timestamp_seconds',
  help: 'When each target was last touched.',
  kind: 'gauge',
  labels: ['target'],
  clusterWide: true,
};

/** The harm the fake type's repairs mend. */
export const FAKE_HARM = 'half_touched';

const touchParams = z.object({ target: param.text() });
const readTouch = (params: ActionParams): string => readParams('fake_touch', touchParams, params).target;

export const fakePolicyType: PolicyType<FakeConfig, string[]> = {
  definition: fakePolicy,
  trigger: (config) => ({ every: config.interval }),
  observe: async (config, context) => {
    seen.unsettled.push(context.unsettled.map((target) => target.key));
    seen.redisDataLostAt = context.redisDataLostAt;
    seen.onObserve?.();
    const read = await observeTargets(
      context,
      config.targets,
      (target) => ({ target: `thing ${target}`, listed: true }),
      async (target) => {
        if (unreadable.has(target)) throw forbidden('GET', target);
        return target;
      },
    );
    return read.filter((target): target is string => target !== undefined);
  },
  commit: async (_config, _targets, _context, records) => {
    seen.commits.push(records.map((record) => `${record.decision.target} ${record.outcome}`));
  },
  decide: (config, targets): Decision[] =>
    targets.map((target): Decision =>
      config.skip.includes(target)
        ? { action: 'skip', target, key: target, reason: `skip: ${target} is listed in skip`, params: {} }
        : {
            action: 'touch',
            target,
            key: target,
            reason: `touch ${target}`,
            delayMs: config.delay,
            params: { target },
            ...(config.repairs.includes(target) ? { repairs: FAKE_HARM } : {}),
          },
    ),
  nextPass: (config, _targets, now) => (config.follow_up ? new Date(now.getTime() + config.follow_up) : undefined),
  actions: {
    touch: defineAction({
      read: readTouch,
      precondition: async (target) => (stale.has(target) ? `${target} changed meanwhile` : undefined),
      run: async (target, context) => {
        touched.push(target);
        seen.actedAt.push(context.now);
        const failure = failures.get(target);
        if (failure === 'rate_limited')
          return { outcome: 'rate_limited', detail: `the forge refused ${target} for now` };
        if (failure === 'gone')
          throw new NotFoundError({
            status: 404,
            method: 'POST',
            path: `things/${target}`,
            body: { message: '404 Not Found' },
            message: '404 Not Found',
          });
        if (failure === 'server')
          throw new ServerError({
            status: 500,
            method: 'POST',
            path: `things/${target}`,
            body: { message: '500 Internal Server Error' },
            message: '500 Internal Server Error',
          });
        if (failure === 'refused') throw forbidden('POST', target);
        await context.measures.set(LAST_TOUCH, { target }, context.now.getTime() / 1000);
        return { detail: `touched ${target}` };
      },
    }),
  },
  limits: (config) => ({ actionsPerPass: config.max_actions_per_run }),
  measures: [LAST_TOUCH],
  harms: [{ kind: FAKE_HARM, says: 'a thing left half touched' }],
  summarize: (_config, targets) => `${targets.length} things`,
  covered: () => ({}),
  probes: () => [],
};

function forbidden(method: 'GET' | 'POST', target: string): ForbiddenError {
  return new ForbiddenError({
    status: 403,
    method,
    path: `things/${target}`,
    body: { message: '403 Forbidden' },
    message: '403 Forbidden',
  });
}

@Injectable()
class FakeRegistration implements OnModuleInit {
  constructor(private readonly registry: KnownPolicies) {}

  onModuleInit(): void {
    this.registry.register(fakePolicyType);
  }
}

@Module({ providers: [FakeRegistration] })
export class FakePolicyModule {}
