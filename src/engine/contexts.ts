import { Inject, Injectable, Logger } from '@nestjs/common';
import { CLOCK, type Clock } from '../clock';
import { LocalFiles } from '../effects/local-files';
import type { PolicyConfig } from '../config/policy-type';
import { GitlabClient } from '../gitlab/client';
import { ActiveConfig } from './active-config';
import { type DiscoveryCache, ProjectDiscovery } from './discovery';
import { UnobservedList } from './observe-targets';
import { evenPace, SPREAD_FRACTION, type TargetPace, unpaced } from './pace';
import type { PassOccasion, PolicyContext } from './policy';
import { RedisDiscoveryCache } from './stores/discovery-cache';
import { PolicyStates } from './stores/policy-state';
import { PolicyMeasureStore } from './stores/policy-measures';
import { RedisForgeLimits } from './stores/forge-limits';
import { LookOnlyDiscoveryCache, LookOnlyState } from './stores/look-only';
import { AuditTrail } from './stores/audit';

/**
 * The context every policy's observe, commit and actions are handed: the forge's client, the policy's own state,
 * its logger, the engine's clock, discovery of the policy file's globs, where it publishes its measures, and the disk. One
 * discovery for every policy, so a group several policies match is listed once per `discovery_interval`.
 */
@Injectable()
export class PolicyContexts {
  private readonly logger = new Logger('Engine');
  private discovery: ProjectDiscovery;
  /** The same for passes that change nothing: what they list stays in this process. */
  private lookOnlyDiscovery: ProjectDiscovery;
  private readonly lookOnlyCache: DiscoveryCache;

  constructor(
    private readonly active: ActiveConfig,
    private readonly client: GitlabClient,
    private readonly states: PolicyStates,
    private readonly discoveryCache: RedisDiscoveryCache,
    private readonly measures: PolicyMeasureStore,
    private readonly forgeLimits: RedisForgeLimits,
    private readonly files: LocalFiles,
    private readonly audit: AuditTrail,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {
    this.lookOnlyCache = new LookOnlyDiscoveryCache(discoveryCache);
    this.discovery = this.discoveryFor(this.discoveryCache);
    this.lookOnlyDiscovery = this.discoveryFor(this.lookOnlyCache);
  }

  /** After a reload: `discovery_interval` may have changed. */
  reloaded(): void {
    this.discovery = this.discoveryFor(this.discoveryCache);
    this.lookOnlyDiscovery = this.discoveryFor(this.lookOnlyCache);
  }

  private discoveryFor(cache: DiscoveryCache): ProjectDiscovery {
    return new ProjectDiscovery(
      this.client,
      cache,
      this.clock,
      this.active.current.discovery_interval,
      new Logger('discovery'),
    );
  }

  /**
   * A context for `policy`: `schedule` paces an `every:` policy's reads over its interval (see pace below); a
   * person's command reads as fast as the concurrency allows. The pass runner adds what it read before (unsettled).
   * A `plan` pass changes nothing in Redis: what it writes to its state or discovery stays in this process.
   */
  for(policy: PolicyConfig, mode: 'plan' | 'act', occasion: PassOccasion): PolicyContext {
    const clock = this.clock;
    const look = mode === 'plan';
    return {
      client: this.client,
      policy,
      state: look ? new LookOnlyState(this.states.of(policy.name)) : this.states.of(policy.name),
      logger: new Logger(`policy:${policy.name}`),
      now: new Date(clock.now()),
      clock: { now: () => new Date(clock.now()), sleep: (ms) => clock.sleep(ms) },
      mode,
      occasion,
      measures: this.measures.of(policy.name),
      progress: () => undefined,
      unsettled: [],
      unobserved: new UnobservedList(),
      concurrency: this.active.current.gitlab.concurrency,
      discovery: look ? this.lookOnlyDiscovery : this.discovery,
      pace: (occasion === 'schedule' ? this.pace(policy) : undefined) ?? unpaced,
      forgeLimits: this.forgeLimits,
      files: this.files,
      note: look
        ? async () => undefined
        : (entry) =>
            this.audit.record({
              time: new Date(clock.now()).toISOString(),
              policy: policy.name,
              dry_run: false,
              ...entry,
            }),
    };
  }

  /**
   * The pace of a scheduled pass of an `every:` policy: its targets spread over part of the interval (see TargetPace).
   * A pass that cannot read them all within the interval at the budget's pace says so: ticks would be skipped.
   */
  private pace(policy: PolicyConfig): ((count: number) => TargetPace) | undefined {
    const trigger = this.active.typeOf(policy).trigger(policy);
    if (!('every' in trigger)) return undefined;
    const budget = this.active.current.gitlab.max_requests_per_minute;
    const spread = { clock: this.clock, windowMs: trigger.every * SPREAD_FRACTION, requestsPerMinute: budget };
    return (count) => {
      const pace = evenPace(spread, count);
      if (pace.lastStartMs > trigger.every) {
        this.logger.warn(
          `${policy.name}: ${count} targets at most ${budget} requests a minute take longer than its interval; ` +
            'passes will be skipped: raise its interval or gitlab.max_requests_per_minute',
        );
      }
      return pace;
    };
  }
}
