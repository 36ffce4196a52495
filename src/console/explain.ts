import { Inject, Injectable } from '@nestjs/common';
import { CLOCK, type Clock } from '../clock';
import { EngineService, type PassResult } from '../engine/engine.service';
import { PassHistory } from '../engine/stores/pass-history';

/** Held while an explain runs, renewed meanwhile: one killed with its process frees the policy within this. */
const EXPLAIN_LEASE_MS = 15_000;

export type Explanation =
  | { readonly kind: 'explained'; readonly result: PassResult; readonly tookMs: number }
  /** An explain of this policy runs already, here or on another replica. */
  | { readonly kind: 'busy' };

/**
 * The console's explain: one observe + decide pass of a policy, now, as `plan` runs it (nothing is acted on, nothing
 * is recorded). One at a time per policy across the replicas, since each spends the forge's request budget.
 */
@Injectable()
export class ConsoleExplain {
  constructor(
    private readonly engine: EngineService,
    private readonly history: PassHistory,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async explain(policy: string): Promise<Explanation> {
    const lease = await this.history.explainLock(policy, EXPLAIN_LEASE_MS);
    if (!lease) return { kind: 'busy' };
    try {
      const started = this.clock.now();
      const result = await this.engine.runPass(policy, 'plan');
      return { kind: 'explained', result, tookMs: this.clock.now() - started };
    } finally {
      await lease.release().catch(() => undefined);
    }
  }
}
