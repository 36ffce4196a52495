import { Inject, Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { APP_CONFIG } from '../config/config.module';
import type { AppConfig } from '../config/schema';
import { VERSION } from '../version';

/**
 * The Prometheus registry of this process: Node's process metrics plus `forgewarden_*` ones. A registry of its own
 * (not prom-client's global one) so that two apps in one test process do not share counters.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  /** Every answer of the forge (or network failure), for error-rate and budget dashboards. */
  readonly apiRequests: Counter<'method' | 'status'>;
  readonly apiRequestDuration: Histogram<'method' | 'route'>;
  readonly decisions: Counter<'policy' | 'action' | 'outcome'>;
  readonly policyRunSeconds: Histogram<'policy'>;
  /** 1 while this replica's Redis connection answers; alert on 0. */
  readonly redisUp: Gauge;
  /** Targets whose decision is still open after the last acting pass; alert when one stays open for long. */
  readonly unsettledTargets: Gauge<'policy'>;
  /** Times the daemon found Redis without its data and set itself up again. */
  readonly redisDataLost: Counter;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    collectDefaultMetrics({ register: this.registry });
    this.apiRequests = new Counter({
      name: 'forgewarden_api_requests_total',
      help: 'Requests to the forge by method and answer status (network_error when none came).',
      labelNames: ['method', 'status'],
      registers: [this.registry],
    });
    this.apiRequestDuration = new Histogram({
      name: 'forgewarden_api_request_duration_seconds',
      help: 'Time to a complete answer from the forge, by method and route template.',
      labelNames: ['method', 'route'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [this.registry],
    });
    this.decisions = new Counter({
      name: 'forgewarden_decisions_total',
      help: 'Decisions by policy, action (skip included) and outcome.',
      labelNames: ['policy', 'action', 'outcome'],
      registers: [this.registry],
    });
    this.policyRunSeconds = new Histogram({
      name: 'forgewarden_policy_run_seconds',
      help: 'Duration of one pass of a policy: observe, decide and act.',
      labelNames: ['policy'],
      buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers: [this.registry],
    });
    this.redisUp = new Gauge({
      name: 'forgewarden_redis_up',
      help: '1 while Redis answered the last check (every 10 s), else 0.',
      registers: [this.registry],
    });
    this.unsettledTargets = new Gauge({
      name: 'forgewarden_unsettled_targets',
      help: 'Targets whose action failed, may have acted, waits or was deferred after the last acting pass; looked at again next pass.',
      labelNames: ['policy'],
      registers: [this.registry],
    });
    this.redisDataLost = new Counter({
      name: 'forgewarden_redis_data_lost_total',
      help: 'Times Redis was found without the daemon\'s data (restarted empty, failed over, flushed); schedules were made again.',
      registers: [this.registry],
    });
    new Gauge({
      name: 'forgewarden_build_info',
      help: 'Always 1; the labels tell which version runs.',
      labelNames: ['version'],
      registers: [this.registry],
    }).set({ version: VERSION }, 1);
    const policies = new Gauge({
      name: 'forgewarden_policies',
      help: 'Configured policies by type and whether they act or only record what they would do.',
      labelNames: ['type', 'mode'],
      registers: [this.registry],
    });
    for (const policy of config.policies) {
      policies.inc({ type: policy.type, mode: (policy.dry_run ?? config.dry_run) ? 'dry_run' : 'acting' });
    }
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  async render(): Promise<string> {
    return this.registry.metrics();
  }
}
