import { Inject, Injectable, Logger } from '@nestjs/common';
import type { PolicyConfig } from '../config/policy-type';
import { certainlyNotActed, NotFoundError } from '../gitlab';
import { MetricsService } from '../metrics/metrics.service';
import { defineJob } from '../queue/jobs';
import { QueueService } from '../queue/queue.service';
import { AuditTrail } from './audit';
import { CLOCK, sleepOn, type Clock } from './clock';
import { Ledger } from './ledger';
import { SKIP, type Decision, type PolicyContext, type PolicyRunner } from './policy';

/**
 * skipped: decided not to act, or found no longer needed when a delay ended · would_act: dry run · done · duplicate: the ledger had it already · gone: the target
 * no longer exists (someone else handled it) · failed · scheduled: queued to run after its delay · deferred: over
 * `max_actions_per_run`, decided again next pass · rate_limited: the forge refused for now and did nothing.
 */
export type Outcome = 'skipped' | 'would_act' | 'done' | 'duplicate' | 'gone' | 'failed' | 'scheduled' | 'deferred' | 'rate_limited';

export interface ActionRecord {
  readonly decision: Decision;
  readonly outcome: Outcome;
  readonly detail?: string;
}

export interface ExecuteOptions {
  readonly dryRun: boolean;
  /** `queue`: a delayed action waits in Bull (the daemon); `inline`: the pass sleeps (one-shot commands). */
  readonly delays: 'queue' | 'inline';
}

/** A delayed action, waiting in the queue; performed by the engine through `perform`. */
export interface QueuedAction {
  readonly policy: string;
  readonly decision: Decision;
}

export const policyActionJob = defineJob<QueuedAction>('policy.action');

/**
 * The one effectful path of every policy: dry run, the per-run action cap, the idempotency ledger, the audit trail,
 * metrics and one log line per action. Policies only decide; their action effects are called from here alone.
 */
@Injectable()
export class Executor {
  private readonly logger = new Logger('Executor');

  constructor(
    private readonly ledger: Ledger,
    private readonly audit: AuditTrail,
    private readonly metrics: MetricsService,
    private readonly queue: QueueService,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute(
    policy: PolicyConfig,
    runner: PolicyRunner,
    decisions: readonly Decision[],
    context: PolicyContext,
    options: ExecuteOptions,
  ): Promise<ActionRecord[]> {
    const records: ActionRecord[] = [];
    const cap = runner.maxActionsPerRun(policy);
    let taken = 0;
    // Delays count from the decision, not from the previous action: ten retries with `delay: 30s` wait 30 s, not 5 min.
    const decidedAt = this.clock.now().getTime();
    for (const decision of decisions) {
      if (decision.action === SKIP) {
        records.push(this.count(policy.name, { decision, outcome: 'skipped' }));
        this.logger.debug(`${policy.name}: ${decision.target}: ${decision.reason}`);
        continue;
      }
      if (!runner.actions[decision.action]) {
        throw new Error(`policy type "${runner.type}" decided "${decision.action}" but has no effect for it`);
      }
      // Actions already done do not count against the cap, or a deferred one could wait behind them forever.
      if (!options.dryRun && this.ledger.blocks(await this.ledger.lookup(policy.name, decision.key), context.now, runner.staleClaimAfterMs)) {
        records.push(this.count(policy.name, { decision, outcome: 'duplicate' }));
        continue;
      }
      if (taken >= cap) {
        records.push(await this.finish(policy.name, decision, 'deferred', options.dryRun, `over max_actions_per_run (${cap})`));
        continue;
      }
      taken++;
      if (options.dryRun) {
        records.push(await this.finish(policy.name, decision, 'would_act', true));
        continue;
      }
      if (decision.delayMs && decision.delayMs > 0) {
        if (options.delays === 'queue') {
          // The job id is the action's key: a second pass deciding the same action while it waits adds nothing.
          await this.queue.enqueue(policyActionJob, { policy: policy.name, decision }, {
            jobId: `${policy.name}:${decision.key}`,
            delayMs: decision.delayMs,
          });
          records.push(await this.finish(policy.name, decision, 'scheduled', false, `in ${Math.round(decision.delayMs / 1000)}s`));
          continue;
        }
        const wait = Math.max(0, decidedAt + decision.delayMs - this.clock.now().getTime());
        if (wait > 0) await sleepOn(this.clock, wait);
        records.push(await this.perform(policy, runner, decision, { ...context, now: this.clock.now() }, { recheck: true }));
        continue;
      }
      records.push(await this.perform(policy, runner, decision, context));
    }
    return records;
  }

  /**
   * Acts on one decision, at most once per key whoever else tries. With `recheck` (the action waited out a delay),
   * the policy first looks again at what may have changed meanwhile.
   */
  async perform(
    policyConfig: PolicyConfig,
    runner: PolicyRunner,
    decision: Decision,
    context: PolicyContext,
    options: { recheck?: boolean } = {},
  ): Promise<ActionRecord> {
    const policy = policyConfig.name;
    if (!(await this.ledger.claim(policy, decision.key, context.now, runner.staleClaimAfterMs))) {
      this.logger.debug(`${policy}: ${decision.target}: ${decision.action} already done or under way`);
      return this.count(policy, { decision, outcome: 'duplicate' });
    }
    if (options.recheck && runner.recheck) {
      let reason: string | undefined;
      try {
        reason = await runner.recheck(policyConfig, decision, context);
      } catch (error) {
        // Could not look: give the claim back so a later pass decides afresh, rather than act on stale facts.
        await this.ledger.release(policy, decision.key);
        return this.finish(policy, decision, 'failed', false, `recheck failed: ${error instanceof Error ? error.message : String(error)}`);
      }
      if (reason !== undefined) {
        await this.ledger.settle(policy, decision.key, 'skipped', context.now);
        return this.finish(policy, decision, 'skipped', false, reason);
      }
    }
    const effect = runner.actions[decision.action];
    try {
      const result = await effect(decision.params, context);
      const outcome = result?.outcome ?? 'done';
      await this.ledger.settle(policy, decision.key, outcome, context.now);
      return await this.finish(policy, decision, outcome, false, result?.detail);
    } catch (error) {
      if (error instanceof NotFoundError) {
        await this.ledger.settle(policy, decision.key, 'gone', context.now);
        return this.finish(policy, decision, 'gone', false, 'not found: handled or removed by someone else');
      }
      // Refused before acting, or never sent: give the claim back so a later pass can try again. Anything else (a
      // 5xx, a timeout after sending) may have acted, or (a 403, a validation error) will be refused the same way
      // again, so the action is not repeated and the audit trail shows it failed.
      if (certainlyNotActed(error)) await this.ledger.release(policy, decision.key);
      else await this.ledger.settle(policy, decision.key, 'failed', context.now);
      const message = error instanceof Error ? error.message : String(error);
      return this.finish(policy, decision, 'failed', false, message);
    }
  }

  private async finish(policy: string, decision: Decision, outcome: Outcome, dryRun: boolean, detail?: string): Promise<ActionRecord> {
    await this.audit.record({
      time: this.clock.now().toISOString(),
      policy,
      target: decision.target,
      action: decision.action,
      reason: decision.reason,
      outcome,
      dry_run: dryRun,
      detail,
    });
    const line = `${policy}: ${outcome === 'would_act' ? 'would ' : ''}${decision.action} ${decision.target} (${decision.reason})${outcomeSuffix(outcome, detail)}`;
    if (outcome === 'failed') this.logger.error(line);
    else this.logger.log(line);
    return this.count(policy, { decision, outcome, ...(detail !== undefined ? { detail } : {}) });
  }

  private count(policy: string, record: ActionRecord): ActionRecord {
    this.metrics.decisions.inc({ policy, action: record.decision.action, outcome: record.outcome });
    return record;
  }
}

function outcomeSuffix(outcome: Outcome, detail: string | undefined): string {
  if (outcome === 'done' || outcome === 'would_act') return detail ? `: ${detail}` : '';
  return `: ${outcome}${detail ? `, ${detail}` : ''}`;
}
