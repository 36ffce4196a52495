import { Inject, Injectable } from '@nestjs/common';
import { CLOCK, type Clock } from '../clock';
import { MetricsService } from '../metrics/metrics.service';
import { ActiveConfig } from './active-config';
import { PassHistory } from './stores/pass-history';
import { OwnHarm } from './stores/own-harm';
import { PolicyPauses } from './stores/pauses';
import { PolicyMeasureStore } from './stores/policy-measures';
import { UnsettledTargets } from './stores/unsettled';
import { triggerPeriodMs } from './trigger-period';

/**
 * The per-policy gauges every replica exports alike: the configured policies and their periods, and what Redis holds
 * cluster-wide (last successful passes, open and parked targets, the measures policies publish), whichever replica
 * wrote it. Alerts then see one truth, not each replica's last pass.
 */
@Injectable()
export class EngineGauges {
  constructor(
    private readonly active: ActiveConfig,
    private readonly history: PassHistory,
    private readonly unsettled: UnsettledTargets,
    private readonly measures: PolicyMeasureStore,
    private readonly pauses: PolicyPauses,
    private readonly harm: OwnHarm,
    private readonly metrics: MetricsService,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {
    metrics.beforeScrape(() => this.refreshPauses());
    metrics.beforeScrape(() => this.refreshHarm());
  }

  /** `forgewarden_harm_open` of every configured policy and kind it declares, as Redis says now: 0 when mended. */
  async refreshHarm(): Promise<void> {
    const open = await this.harm.all();
    for (const policy of this.active.policies) {
      const counts = new Map<string, number>((this.active.typeOf(policy).harms ?? []).map((harm) => [harm.kind, 0]));
      for (const harm of open.get(policy.name) ?? []) counts.set(harm.kind, (counts.get(harm.kind) ?? 0) + 1);
      for (const [kind, count] of counts) this.metrics.harmOpen.set({ policy: policy.name, kind }, count);
    }
  }

  /** `forgewarden_policy_paused` of every configured policy, as Redis says now: a pause on any replica shows on all. */
  async refreshPauses(): Promise<void> {
    const paused = await this.pauses.all();
    for (const policy of this.active.policies)
      this.metrics.policyPaused.set({ policy: policy.name }, paused.has(policy.name) ? 1 : 0);
  }

  /** The configured policies by mode, and how long each may go between passes: at start and after a reload. */
  describe(): void {
    const now = new Date(this.clock.now());
    const periods = new Map(
      this.active.policies.map((policy) => [
        policy.name,
        triggerPeriodMs(this.active.typeOf(policy).trigger(policy), now) / 1000,
      ]),
    );
    this.metrics.describePolicies(this.active.current, periods);
    // The measures the configured policies publish, so that each is exported (empty) before its first value.
    for (const policy of this.active.policies)
      for (const measure of this.active.typeOf(policy).measures ?? []) this.metrics.policyMeasure(measure);
  }

  /** What Redis holds now; Redis away leaves the gauges as they were (forgewarden_redis_up says why). */
  async refresh(): Promise<void> {
    try {
      const last = await this.history.lastSuccessful();
      for (const policy of this.active.policies) {
        const seconds = last.get(policy.name);
        if (seconds !== undefined && seconds > 0) this.metrics.lastSuccessfulPass.set({ policy: policy.name }, seconds);
        const counts = await this.unsettled.counts(policy.name);
        this.metrics.unsettledTargets.set({ policy: policy.name }, counts.open);
        this.metrics.targetsRefused.set({ policy: policy.name }, counts.refused);
      }
      await this.measures.refresh((name) => {
        const policy = this.active.find(name);
        return policy && this.active.typeOf(policy).measures;
      });
    } catch {
      // Redis away: the gauges keep their values.
    }
  }
}
