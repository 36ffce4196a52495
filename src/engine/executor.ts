import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG } from '../config/config.module';
import type { AppConfig } from '../config/schema';
import type { PolicyConfig } from '../config/policy-type';
import { ApiError, certainlyNotActed, NotFoundError } from '../gitlab';
import { fingerprintOf, isFinalRefusal, park, parkedText } from './refusals';
import { MetricsService } from '../metrics/metrics.service';
import { defineJob } from '../queue/jobs';
import { QueueService } from '../queue/queue.service';
import { ReplicationUnconfirmedError } from '../redis/replication';
import { AuditTrail } from './stores/audit';
import { CLOCK, type Clock } from '../clock';
import { type LedgerState, Ledger } from './stores/ledger';
import { mapUntilFailure } from './map-limited';
import { PassCap } from './pass-cap';
import type { Lease } from './stores/lease';
import {
  HarmLeftError,
  SKIP,
  type ActionRecord,
  type Decision,
  type Outcome,
  type PolicyContext,
  type PolicyType,
  type Refusal,
} from './policy';
import { UnsettledTargets } from './stores/unsettled';
import { type Pause, PolicyPauses } from './stores/pauses';
import { actionId, withPurpose } from '../gitlab/transport/purpose';
import { ANNOUNCE_AFTER_MS, delayLine } from '../logging/waiting';

export interface ExecuteOptions {
  readonly dryRun: boolean;
  /** `queue`: a delayed action waits in Bull (the daemon); `inline`: the pass sleeps (one-shot commands). */
  readonly delays: 'queue' | 'inline';
  /** The pass's lease: no action starts once it is lost, since another replica may be running the policy by then. */
  readonly passLease?: Lease;
}

/** A delayed action, waiting in the queue; performed by the engine through `perform`. */
export interface QueuedAction {
  readonly policy: string;
  readonly decision: Decision;
  /** Claims of the action's key made before this one was queued (absent in jobs queued by older versions: 0). */
  readonly attempts?: number;
}

export const policyActionJob = defineJob<QueuedAction>('policy.action');

/**
 * The one effectful path of every policy: dry run, the per-run action cap, the idempotency ledger, the audit trail,
 * metrics and one log line per action. Policies only decide; their action effects are called from here alone.
 * Every action at least once and at most once (docs/operations.md, "The guarantee"); a precondition read again after
 * the claim, and final refusals parked (docs/architecture.md, sections 1 and 3).
 */
/** How long a repair that failed waits before it is tried again within the same pass (then the next pass tries). */
export const REPAIR_WAITS_MS: readonly number[] = [2_000, 5_000];

@Injectable()
export class Executor {
  private readonly logger = new Logger('Executor');
  /**
   * How long after an attempt that may have acted the forge is trusted to show it: the forge may still be working
   * on a request whose answer was lost, for as long as the client would have waited for it.
   */
  private readonly lookAfterMs: number;

  constructor(
    private readonly ledger: Ledger,
    private readonly audit: AuditTrail,
    private readonly metrics: MetricsService,
    private readonly queue: QueueService,
    private readonly unsettled: UnsettledTargets,
    private readonly pauses: PolicyPauses,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.lookAfterMs = config.gitlab.timeout;
  }

  async execute(
    policy: PolicyConfig,
    policyType: PolicyType,
    decisions: readonly Decision[],
    context: PolicyContext,
    options: ExecuteOptions,
  ): Promise<ActionRecord[]> {
    for (const decision of decisions) {
      if (decision.action !== SKIP && !policyType.actions[decision.action]) {
        throw new Error(
          `policy type "${policyType.definition.type}" decided "${decision.action}" but has no effect for it`,
        );
      }
      if (decision.repairs !== undefined && !policyType.harms?.some((harm) => harm.kind === decision.repairs)) {
        throw new Error(
          `policy type "${policyType.definition.type}" decided a repair of "${decision.repairs}" but declares no such harm`,
        );
      }
    }
    // The bot's own harm is mended before anything else is started (docs/architecture.md, "Own harm").
    const ordered = [
      ...decisions.filter((decision) => decision.repairs !== undefined),
      ...decisions.filter((decision) => decision.repairs === undefined),
    ];
    const limits = policyType.limits(policy);
    // Taken between awaits (a check and its increment run together), so actions running side by side share it.
    const cap = new PassCap(limits.actionsPerPass);
    // Delays count from the decision, not from the previous action: ten retries with `delay: 30s` wait 30 s, not 5 min.
    const decidedAt = this.clock.now();
    const one = (decision: Decision): Promise<ActionRecord> =>
      this.executeOne(policy, policyType, decision, context, options, { cap, decidedAt });
    const concurrency = Math.max(1, limits.sideBySide ?? 1);
    // Side by side, a failure (Redis away, the lease lost) starts no further action and returns only once the started
    // ones ended: nothing of a pass acts after the pass is over.
    const records = concurrency > 1 ? await mapUntilFailure(ordered, concurrency, one) : [];
    if (concurrency <= 1) for (const decision of ordered) records.push(await one(decision));
    // Records in the order decided, as callers and `plan` list them.
    const byDecision = new Map(records.map((record) => [record.decision, record] as const));
    return decisions.map((decision) => byDecision.get(decision) as ActionRecord);
  }

  /** One decision of a pass: skipped, answered from the ledger, deferred over the cap, recorded in dry run, or acted on. */
  private async executeOne(
    policy: PolicyConfig,
    policyType: PolicyType,
    decision: Decision,
    context: PolicyContext,
    options: ExecuteOptions,
    pass: { readonly cap: PassCap; readonly decidedAt: number },
  ): Promise<ActionRecord> {
    if (decision.action === SKIP) {
      this.logger.debug(`${policy.name}: ${decision.target}: ${decision.reason}`);
      return this.count(policy.name, { decision, outcome: 'skipped' });
    }
    if (decision.repairs !== undefined) return this.repair(policy, policyType, decision, context, options);
    // A paused policy decides (the pass shows what it would do) but starts nothing, not even a dry run's record.
    const pause = await this.pauses.of(policy.name);
    if (pause) return this.paused(policy.name, decision, pause);
    let attempts = 0;
    if (!options.dryRun) {
      // Actions settled or under way do not count against the cap, or a deferred one could wait behind them forever.
      const view = await this.ledger.inspect(policy.name, decision.key, context.now);
      if (view.kind === 'settled') return this.count(policy.name, { decision, outcome: 'duplicate' });
      if (view.kind === 'in_progress')
        return this.count(policy.name, { decision, outcome: 'in_progress', detail: `claimed at ${view.at}` });
      if (view.kind === 'uncertain' && context.now.getTime() < view.sinceMs + this.lookAfterMs) {
        const lookAt = new Date(view.sinceMs + this.lookAfterMs).toISOString();
        return this.finish(
          policy.name,
          decision,
          'uncertain',
          false,
          `the attempt at ${view.at} may have acted; the forge is looked at again after ${lookAt}`,
        );
      }
      attempts = view.attempts;
      // Parked after a final refusal: not sent again before its time, unless the decision itself changed.
      const parked = await this.unsettled.refusal(policy.name, decision.key);
      if (
        parked &&
        parked.fingerprint === fingerprintOf(decision) &&
        context.now.getTime() < Date.parse(parked.retry_at)
      ) {
        this.logger.debug(`${policy.name}: ${decision.target}: ${decision.action} parked until ${parked.retry_at}`);
        return this.count(policy.name, { decision, outcome: 'refused', detail: parkedText(parked), refusal: parked });
      }
    }
    if (!pass.cap.take())
      return this.finish(
        policy.name,
        decision,
        'deferred',
        options.dryRun,
        `over max_actions_per_run (${pass.cap.size})`,
      );
    if (options.dryRun) return this.finish(policy.name, decision, 'would_act', true);
    if (decision.delayMs && decision.delayMs > 0) {
      if (options.delays === 'queue') {
        // The job id is the action's key and attempt: a second pass deciding the same attempt while it waits adds
        // nothing, and an attempt after a failed one is queued anew (a finished job is kept for a while).
        await this.queue.enqueue(
          policyActionJob,
          { policy: policy.name, decision, attempts },
          {
            jobId: `${policy.name}:${decision.key}:${attempts}`,
            delayMs: decision.delayMs,
          },
        );
        return this.finish(policy.name, decision, 'scheduled', false, `in ${Math.round(decision.delayMs / 1000)}s`);
      }
      const wait = Math.max(0, pass.decidedAt + decision.delayMs - this.clock.now());
      if (wait > ANNOUNCE_AFTER_MS)
        context.progress(
          delayLine(`${decision.action} ${decision.target}`, "the policy's delay", wait, this.clock.now() + wait),
        );
      if (wait > 0) await this.clock.sleep(wait);
    }
    return this.perform(policy, policyType, decision, context, { attempts, passLease: options.passLease });
  }

  /**
   * A repair of the bot's own harm: never capped, never held back by a parked refusal, and tried again within the pass
   * (REPAIR_WAITS_MS apart) while it fails; what is still open after that is tried again by the next pass. Its action
   * is written to find the harm mended already, and its precondition re-reads the forge before every attempt, so an
   * attempt that may have acted is followed by another only once the forge says it is still needed.
   */
  private async repair(
    policy: PolicyConfig,
    policyType: PolicyType,
    decision: Decision,
    context: PolicyContext,
    options: ExecuteOptions,
  ): Promise<ActionRecord> {
    const pause = await this.pauses.of(policy.name);
    if (pause) return this.paused(policy.name, decision, pause);
    if (options.dryRun) return this.finish(policy.name, decision, 'would_act', true);
    let record: ActionRecord | undefined;
    for (const wait of [0, ...REPAIR_WAITS_MS]) {
      if (wait > 0) await this.clock.sleep(wait);
      const view = await this.ledger.inspect(policy.name, decision.key, new Date(this.clock.now()));
      if (view.kind === 'settled') return this.count(policy.name, { decision, outcome: 'duplicate' });
      if (view.kind === 'in_progress')
        return this.count(policy.name, { decision, outcome: 'in_progress', detail: `claimed at ${view.at}` });
      record = await this.perform(policy, policyType, decision, context, {
        attempts: view.attempts,
        passLease: options.passLease,
      });
      if (record.outcome !== 'failed') return record;
    }
    return record as ActionRecord;
  }

  /**
   * Acts on one decision, at most once per key and attempt whoever else tries. `attempts` is the number of claims of
   * the key the caller saw; the claim succeeds only if nobody claimed it since. Then the action's precondition
   * re-reads the forge, and only a decision whose premise still holds is sent.
   */
  async perform(
    policyConfig: PolicyConfig,
    policyType: PolicyType,
    decision: Decision,
    passContext: PolicyContext,
    options: { attempts?: number; passLease?: Lease } = {},
  ): Promise<ActionRecord> {
    const policy = policyConfig.name;
    options.passLease?.assertHeld();
    // The action's own time, not the pass's: after a long observe, a bulk deletion recorded at the pass's start would
    // let the next call go out before the forge's hour is over.
    // The policy as the file says now: a precondition applies its rules to what it reads again.
    const context: PolicyContext = { ...passContext, now: new Date(this.clock.now()), policy: policyConfig };
    // Read again at the moment of acting: a pause made while a long pass runs holds from its next action on.
    const pause = await this.pauses.of(policy);
    if (pause) return this.paused(policy, decision, pause);
    const claimed = await this.ledger.claim(policy, decision.key, options.attempts ?? 0, context.now);
    if (claimed.kind === 'unconfirmed')
      return this.finish(
        policy,
        decision,
        'deferred',
        false,
        `not sent: its claim is not on the replicas yet (${claimed.reason})`,
      );
    if (claimed.kind === 'taken') {
      this.logger.debug(`${policy}: ${decision.target}: ${decision.action} already done or under way`);
      const view = await this.ledger.inspect(policy, decision.key, context.now);
      return this.count(policy, { decision, outcome: view.kind === 'settled' ? 'duplicate' : 'in_progress' });
    }
    const { claim } = claimed;
    const settle = (state: Exclude<LedgerState, 'claimed'>) =>
      this.ledger.settle(policy, decision.key, claim, state, new Date(this.clock.now()));
    const action = policyType.actions[decision.action];
    // Every request of the precondition and the action names them (X-Forgewarden-* headers), for the forge's logs.
    const id = actionId(policy, decision.key);
    try {
      const { precondition } = action;
      if (precondition) {
        let changed: string | undefined;
        try {
          changed = await withPurpose({ policy, phase: 'precondition', action: id }, () =>
            precondition(decision.params, context),
          );
        } catch (error) {
          if (error instanceof NotFoundError && decision.repairs === undefined) {
            // Gone, or out of the token's sight: nothing was sent, and a pass that sees the target again decides afresh.
            await settle('released');
            return await this.finish(
              policy,
              decision,
              'gone',
              false,
              `not found when read again before acting: ${errorText(error)}`,
            );
          }
          // Could not look, so nothing was sent: a later pass decides afresh rather than act on what may be stale.
          await settle('released');
          return await this.finish(
            policy,
            decision,
            'failed',
            false,
            `not sent: its precondition could not be read: ${errorText(error)}`,
          );
        }
        if (changed !== undefined) {
          // The forge contradicts the decision: nothing is sent, and the next pass decides on what is there now.
          await settle('released');
          return await this.finish(policy, decision, 'stale', false, changed);
        }
      }
      let left: ActionRecord['leftHarm'];
      const withHarm = (record: ActionRecord): ActionRecord => (left ? { ...record, leftHarm: left } : record);
      try {
        const result = await withPurpose({ policy, phase: 'action', action: id }, async () => {
          try {
            return await action.run(decision.params, context);
          } catch (thrown) {
            // Judged as the failure it wraps; the harm it left is shown at once.
            if (!(thrown instanceof HarmLeftError)) throw thrown;
            left = { kind: thrown.kind, what: thrown.what };
            throw thrown.failure;
          }
        });
        const outcome = result?.outcome ?? 'done';
        // Rate limited or stale: the forge did nothing, and the next pass (or the policy's own record) takes it up.
        await settle(outcome === 'done' ? 'done' : 'released');
        const record = await this.finish(policy, decision, outcome, false, result?.detail);
        return result?.incomplete && result.incomplete.length > 0
          ? { ...record, incomplete: result.incomplete }
          : record;
      } catch (error) {
        if (error instanceof ReplicationUnconfirmedError) {
          await settle('released');
          return withHarm(
            await this.finish(
              policy,
              decision,
              'deferred',
              false,
              `not sent: what guards it is not on the replicas yet (${error.reason})`,
            ),
          );
        }
        if (error instanceof NotFoundError && decision.repairs !== undefined) {
          // Out of the token's sight is not gone: the harm stays open until the policy sees proof that its target is.
          await settle('released');
          return withHarm(
            await this.finish(
              policy,
              decision,
              'failed',
              false,
              `not visible now: ${errorText(error)}; tried again at every pass`,
            ),
          );
        }
        if (error instanceof NotFoundError) {
          // The forge did nothing: handled or removed by someone else, or out of the token's sight now, which a later
          // pass that sees the target still needing it decides afresh (404 is not proof of absence).
          await settle('released');
          return withHarm(
            await this.finish(
              policy,
              decision,
              'gone',
              false,
              "not found: handled or removed by someone else, or out of the token's sight",
            ),
          );
        }
        if (isFinalRefusal(error) && decision.repairs !== undefined) {
          // The bot's own harm is never parked: the forge may allow it again at any moment (rights given back).
          await settle('released');
          return withHarm(
            await this.finish(
              policy,
              decision,
              'failed',
              false,
              `${errorText(error)}; a repair of the bot's own harm is tried again, never parked`,
            ),
          );
        }
        if (isFinalRefusal(error)) {
          await settle('released');
          const refusal = park(decision, error, await this.unsettled.refusal(policy, decision.key), context.now);
          return withHarm(
            await this.finish(
              policy,
              decision,
              'refused',
              false,
              `${errorText(error)}; parked until ${refusal.retry_at}`,
              refusal,
            ),
          );
        }
        // Refused for now, or never sent: free to try again at once. Anything else may have acted: the next pass that
        // observed the forge after this attempt decides whether it is still needed.
        await settle(certainlyNotActed(error) ? 'released' : 'failed');
        return withHarm(await this.finish(policy, decision, 'failed', false, errorText(error)));
      }
    } finally {
      claim.lease.stop();
    }
  }

  private async finish(
    policy: string,
    decision: Decision,
    outcome: Outcome,
    dryRun: boolean,
    detail?: string,
    refusal?: Refusal,
  ): Promise<ActionRecord> {
    await this.audit.record({
      time: new Date(this.clock.now()).toISOString(),
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
    else if (outcome === 'uncertain' || outcome === 'refused' || outcome === 'stale') this.logger.warn(line);
    else this.logger.log(line);
    return this.count(policy, {
      decision,
      outcome,
      ...(detail !== undefined ? { detail } : {}),
      ...(refusal ? { refusal } : {}),
    });
  }

  /** Not sent, and not in the audit trail (the pause is): a pass every few seconds would fill it with the same lines. */
  private paused(policy: string, decision: Decision, pause: Pause): ActionRecord {
    this.logger.log(`${policy}: paused: would ${decision.action} ${decision.target} (${decision.reason})`);
    return this.count(policy, {
      decision,
      outcome: 'paused',
      detail: `paused since ${pause.since} (${pause.reason}): would ${decision.action} ${decision.target}`,
    });
  }

  private count(policy: string, record: ActionRecord): ActionRecord {
    this.metrics.decisions.inc({ policy, action: record.decision.action, outcome: record.outcome });
    return record;
  }
}

/** A forge refusal names its request (`POST projects/7/jobs/812/retry → 403: ...`), and so its target. */
function errorText(error: unknown): string {
  if (error instanceof ApiError) return error.summary;
  return error instanceof Error ? error.message : String(error);
}

function outcomeSuffix(outcome: Outcome, detail: string | undefined): string {
  if (outcome === 'done' || outcome === 'would_act') return detail ? `: ${detail}` : '';
  return `: ${outcome}${detail ? `, ${detail}` : ''}`;
}
