import { Inject, Injectable } from '@nestjs/common';
import type { Counter, Gauge } from 'prom-client';
import { APP_CONFIG } from '../../config/config.module';
import type { AppConfig } from '../../config/schema';
import { MetricsService } from '../../metrics/metrics.service';
import type { PolicyMeasure } from '../../metrics/policy-measure';
import { REDIS, type RedisConnection } from '../../redis/redis.module';
import type { PolicyMeasures } from '../policy';
import { EngineKeys } from './keys';

/**
 * The measures policies publish (PolicyType.measures): counters of this replica, and gauges, of which the
 * cluster-wide ones are kept in one Redis hash (field: policy, measure and labels) that every replica exports alike.
 */
@Injectable()
export class PolicyMeasureStore {
  private readonly key: string;

  constructor(
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly metrics: MetricsService,
  ) {
    this.key = EngineKeys.of(config).policyMeasures();
  }

  of(policy: string): PolicyMeasures {
    return {
      set: async (measure, labels, value) => {
        (this.metrics.policyMeasure(measure) as Gauge).set({ policy, ...labels }, value);
        if (measure.clusterWide)
          await this.redis.hset(this.key, JSON.stringify([policy, measure.name, labels]), String(value));
      },
      add: (measure, labels, amount) => {
        (this.metrics.policyMeasure(measure) as Counter).inc({ policy, ...labels }, amount);
      },
    };
  }

  /**
   * Sets every cluster-wide gauge as Redis holds it, for the configured policies whose type declares the measure
   * (`measuresOf` names them by policy): whichever replica wrote it, each exports the same.
   */
  async refresh(measuresOf: (policy: string) => readonly PolicyMeasure[] | undefined): Promise<void> {
    for (const [field, text] of Object.entries(await this.redis.hgetall(this.key))) {
      const entry = readField(field);
      const value = Number(text);
      const measure =
        entry && measuresOf(entry.policy)?.find((candidate) => candidate.name === entry.name && candidate.clusterWide);
      if (!entry || !measure || !Number.isFinite(value)) continue;
      (this.metrics.policyMeasure(measure) as Gauge).set({ policy: entry.policy, ...entry.labels }, value);
    }
  }
}

/**
 * What the cluster-wide gauges that flag a condition say now (PolicyMeasure.notice), by policy: read from Redis, so
 * every replica's console says the same.
 */
export async function measureNotices(
  redis: RedisConnection,
  config: AppConfig,
  measuresOf: (policy: string) => readonly PolicyMeasure[] | undefined,
): Promise<Map<string, string[]>> {
  const notices = new Map<string, string[]>();
  for (const [field, text] of Object.entries(await redis.hgetall(EngineKeys.of(config).policyMeasures()))) {
    const entry = readField(field);
    const measure =
      entry && measuresOf(entry.policy)?.find((candidate) => candidate.name === entry.name && candidate.clusterWide);
    if (!entry || !measure?.notice || Number(text) === 0 || !Number.isFinite(Number(text))) continue;
    notices.set(entry.policy, [...(notices.get(entry.policy) ?? []), measure.notice(entry.labels)]);
  }
  return notices;
}

/** A field as written by `set`; anything else (damaged, or of an older layout) is skipped. */
function readField(field: string): { policy: string; name: string; labels: Record<string, string> } | undefined {
  try {
    const [policy, name, labels] = JSON.parse(field) as unknown[];
    if (typeof policy !== 'string' || typeof name !== 'string' || typeof labels !== 'object' || labels === null)
      return undefined;
    return {
      policy,
      name,
      labels: Object.fromEntries(Object.entries(labels).map(([label, value]) => [label, String(value)])),
    };
  } catch {
    return undefined;
  }
}
