import { Inject, Injectable, Logger } from '@nestjs/common';
import { CLOCK, type Clock } from '../clock';
import { MetricsService } from '../metrics/metrics.service';
import { AuditTrail } from './stores/audit';
import { type Pause, PolicyPauses } from './stores/pauses';

/** What a pause or resume changed. */
export interface PauseChange {
  /** The pause before the change, if the policy was paused. */
  readonly before?: Pause;
  /** The pause after it, if the policy is paused now. */
  readonly after?: Pause;
}

/**
 * Pausing and resuming a policy, cluster-wide (`forgewarden pause`/`resume`, the console's button): the pause is kept
 * in Redis, where every replica's executor reads it before each action, and each change is in the audit trail with
 * who made it and why.
 */
@Injectable()
export class PauseSwitch {
  private readonly logger = new Logger('Engine');

  constructor(
    private readonly pauses: PolicyPauses,
    private readonly audit: AuditTrail,
    private readonly metrics: MetricsService,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async pause(policy: string, reason: string, by: string): Promise<PauseChange> {
    const now = new Date(this.clock.now()).toISOString();
    const after: Pause = { reason, by, since: now };
    const before = await this.pauses.pause(policy, after);
    await this.audit.record({
      time: now,
      policy,
      target: `policy ${policy}`,
      action: 'pause',
      reason,
      outcome: 'done',
      dry_run: false,
      detail: `by ${by}`,
    });
    this.metrics.policyPaused.set({ policy }, 1);
    this.logger.log(`${policy}: paused by ${by}: ${reason}`);
    return { ...(before ? { before } : {}), after };
  }

  async resume(policy: string, by: string): Promise<PauseChange> {
    const now = new Date(this.clock.now()).toISOString();
    const before = await this.pauses.resume(policy);
    if (before) {
      const paused = `paused since ${before.since} by ${before.by}: ${before.reason}`;
      await this.audit.record({
        time: now,
        policy,
        target: `policy ${policy}`,
        action: 'resume',
        reason: 'resumed',
        outcome: 'done',
        dry_run: false,
        detail: `by ${by}; it was ${paused}`,
      });
      this.logger.log(`${policy}: resumed by ${by}`);
    }
    this.metrics.policyPaused.set({ policy }, 0);
    return before ? { before } : {};
  }
}
