import { Inject, Injectable, Logger } from '@nestjs/common';
import { CLOCK, type Clock } from '../clock';
import type { PolicyConfig } from '../config/policy-type';
import { ApiError } from '../gitlab/transport/errors';
import { withPurpose } from '../gitlab/transport/purpose';
import { MetricsService } from '../metrics/metrics.service';
import { ActiveConfig } from './active-config';
import { PolicyContexts } from './contexts';
import type { ForgeEvent } from './events';
import { type ExecuteOptions, Executor } from './executor';
import type {
  ActionRecord,
  Decision,
  PassOccasion,
  PolicyContext,
  PolicyType,
  Refusal,
  UnobservedTarget,
  UnsettledTarget,
} from './policy';
import { AuditTrail } from './stores/audit';
import { DataMarker } from './stores/data-marker';
import { type Lease, LeaseLostError } from './stores/lease';
import { type OpenHarm, OwnHarm } from './stores/own-harm';
import { PassHistory } from './stores/pass-history';
import { PassLog } from './stores/pass-log';
import { type Pause, PolicyPauses } from './stores/pauses';
import { THIS_REPLICA } from './stores/replicas';
import { UnsettledTargets } from './stores/unsettled';

/** What one pass of one policy decided and, when acting, what came of each decision. */
export interface PassResult {
  readonly policy: string;
  readonly type: string;
  readonly dryRun: boolean;
  readonly decisions: readonly Decision[];
  /** Empty in `plan`. */
  readonly records: readonly ActionRecord[];
  /** Set when the pass itself failed (the forge unreachable, Redis away); the daemon goes on. */
  readonly error?: string;
  /**
   * Targets the pass could not read (a 403, a project gone, an odd answer), each with the forge's answer; the others
   * were decided and acted on. With any of these, or an action the forge refused for good, the pass is `partial`.
   */
  readonly unobserved?: readonly UnobservedTarget[];
  /** In `plan`: decisions parked after a final refusal of the forge, by key. */
  readonly parked?: Readonly<Record<string, Refusal>>;
  /** When the next pass is due sooner than the trigger says (a follow-up, open targets, a failed pass). */
  readonly nextPassAt?: Date;
  /** The projects the pass looked at, when the policy says (its globs resolved): `plan` shows them. */
  readonly covered?: readonly string[];
  /** The groups the pass looked at, when globs chose them: `plan` shows them. */
  readonly coveredGroups?: readonly string[];
  /** In `plan`: the policy is paused, so an acting pass now would start none of its actions. */
  readonly paused?: Pause;
  /** The bot's own harm the pass's repairs did not mend: the next pass comes within a minute (see PassCycle). */
  readonly harm?: readonly OpenHarm[];
}

/** A pass as the runner reports it to whoever plans the next one (the PassCycle). */
export interface PassReport extends PassResult {
  /** The targets left open after an acting pass (failed, refused, waiting…). */
  readonly open: readonly UnsettledTarget[];
  /** When the policy itself asked for an extra pass (a follow-up after the forge's hourly limit). */
  readonly policyNextPass?: Date;
  /** The pass stopped because its lease was lost: another replica holds the policy, and its pass is the one that counts. */
  readonly leaseLost?: true;
  /** When the pass began, epoch ms. */
  readonly startedMs: number;
  /** What the pass looked at, in the policy's words (absent when it failed). */
  readonly summary?: string;
}

export interface PassOptions {
  readonly mode: 'plan' | 'act';
  /** `queue`: a delayed action waits in Bull (the daemon); `inline`: the pass sleeps (one-shot commands). */
  readonly delays: 'queue' | 'inline';
  /** What started it: the daemon's schedule, or a person's command (`plan`, `once`). */
  readonly occasion: Exclude<PassOccasion, 'event'>;
  /** Progress of long reads, for a person watching a terminal. */
  readonly progress?: (message: string) => void;
  /** The pass lease: no action starts once it is lost. */
  readonly lease?: Lease;
}

/**
 * One pass of one policy: observe → decide → act, the same path for the daemon's scheduled passes, `plan`, `once` and
 * a webhook's event. It reports what it found (decisions, outcomes, open targets, failure, the policy's own request
 * for a next pass) and leaves planning the next pass to the scheduler.
 */
@Injectable()
export class PassRunner {
  private readonly logger = new Logger('Engine');

  constructor(
    private readonly active: ActiveConfig,
    private readonly contexts: PolicyContexts,
    private readonly executor: Executor,
    private readonly unsettled: UnsettledTargets,
    private readonly history: PassHistory,
    private readonly marker: DataMarker,
    private readonly audit: AuditTrail,
    private readonly passLog: PassLog,
    private readonly pauses: PolicyPauses,
    private readonly harm: OwnHarm,
    private readonly metrics: MetricsService,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async run(name: string, options: PassOptions): Promise<PassReport> {
    const policy = this.active.policy(name);
    const policyType = this.active.typeOf(policy);
    const dryRun = this.active.dryRun(policy);
    const stopTimer = this.metrics.policyRunSeconds.startTimer({ policy: name });
    const base = { policy: name, type: policy.type, dryRun, open: [], startedMs: this.clock.now() };
    try {
      const unsettled = await this.unsettled.read(name);
      const { lostAt, forgeChangedAt } = await this.marker.times();
      const context: PolicyContext = {
        ...this.contexts.for(policy, options.mode, options.occasion),
        progress: options.progress ?? (() => undefined),
        unsettled,
        ...(lostAt ? { redisDataLostAt: lostAt } : {}),
        ...(forgeChangedAt ? { forgeChangedAt } : {}),
      };
      const act = options.mode === 'act' ? { dryRun, delays: options.delays, passLease: options.lease } : undefined;
      const snapshot = await this.read(policy, () => policyType.observe(policy, context));
      const { decisions, records } = await this.decideAndAct(policy, policyType, snapshot, context, act);
      const unread = context.unobserved.list();
      const seen = unread.length > 0 ? { unobserved: unread } : {};
      const { projects: covered, groups: coveredGroups } = policyType.covered(policy, snapshot);
      const cover = { ...(coveredGroups ? { coveredGroups } : {}), ...(covered ? { covered } : {}) };
      if (options.mode === 'plan') {
        this.metrics.passes.inc({ policy: name, result: seen.unobserved ? 'partial' : 'ok' });
        const parked = Object.fromEntries(
          unsettled.flatMap((target) => (target.refusal ? [[target.key, target.refusal] as const] : [])),
        );
        const paused = await this.pauses.of(name);
        return {
          ...base,
          decisions,
          records,
          ...seen,
          ...(Object.keys(parked).length > 0 ? { parked } : {}),
          ...cover,
          ...(paused ? { paused } : {}),
        };
      }
      // What the repairs left open is kept in dry run too: the harm is there whether or not this pass may mend it.
      const harm = await this.harm.replace(name, records, context.now);
      if (harm.length > 0)
        this.logger.error(
          `${name}: the bot's own harm is open: ${harm.map((entry) => `${entry.target} (${entry.kind}: ${entry.last})`).join('; ')}`,
        );
      const partial = seen.unobserved !== undefined || records.some(leftPartial);
      this.metrics.passes.inc({ policy: name, result: partial ? 'partial' : 'ok' });
      // A dry run changes nothing an acting run depends on: no marks move, no target is dropped, nothing follows up.
      let open: readonly UnsettledTarget[] = [];
      let policyNextPass: Date | undefined;
      if (!dryRun) {
        await policyType.commit?.(policy, snapshot, context, records);
        open = await this.unsettled.replace(name, records, unsettled, context.now, {
          partial: seen.unobserved !== undefined,
        });
        policyNextPass = policyType.nextPass?.(policy, snapshot, context.now, decisions);
      }
      // Observing, deciding and acting went through (actions may have failed; those are counted per decision).
      await this.history.recordSuccess(name, this.clock.now() / 1000);
      this.metrics.lastSuccessfulPass.set({ policy: name }, this.clock.now() / 1000);
      const left = seen.unobserved
        ? `; ${seen.unobserved.length} not read: ${seen.unobserved.map((target) => target.target).join(', ')}`
        : '';
      const summary = policyType.summarize(policy, snapshot, decisions);
      this.logger.log(`${name}: pass done: looked at ${summary}; ${passTally(records)}${left}`);
      return {
        ...base,
        decisions,
        records,
        ...seen,
        ...cover,
        open,
        summary,
        ...(policyNextPass ? { policyNextPass } : {}),
        ...(harm.length > 0 ? { harm } : {}),
      };
    } catch (error) {
      const message = errorText(error);
      // The stack is for a developer (LOG_LEVEL=debug); the operator gets the one line that says what failed.
      this.logger.error(`${name}: pass failed: ${message}`);
      this.logger.debug(`${name}: pass failed`, error instanceof Error ? error.stack : undefined);
      return {
        ...base,
        decisions: [],
        records: [],
        error: message,
        ...(error instanceof LeaseLostError ? { leaseLost: true as const } : {}),
      };
    } finally {
      stopTimer();
    }
  }

  /**
   * An acting pass in the policy's pass log, which the console shows (every replica reads it alike). Kept from
   * failing anything: the pass is over, and its outcomes are in the audit trail already.
   */
  async logPass(report: PassReport, occasion: Exclude<PassOccasion, 'event'>, nextPassAt?: Date): Promise<void> {
    const outcomes: Record<string, number> = {};
    for (const record of report.records) outcomes[record.outcome] = (outcomes[record.outcome] ?? 0) + 1;
    const unread = report.unobserved ?? [];
    const partial = unread.length > 0 || report.records.some(leftPartial);
    const error =
      report.error ??
      (unread.length > 0
        ? `not read: ${unread.map((target) => `${target.target} (${target.reason})`).join('; ')}`
        : undefined);
    try {
      await this.passLog.record(report.policy, {
        started: new Date(report.startedMs).toISOString(),
        took_ms: Math.max(0, this.clock.now() - report.startedMs),
        occasion,
        result: report.error !== undefined ? 'failed' : partial ? 'partial' : 'ok',
        dry_run: report.dryRun,
        outcomes,
        ...(report.summary !== undefined ? { summary: report.summary } : {}),
        ...(error !== undefined ? { error } : {}),
        ...(nextPassAt ? { next_pass: nextPassAt.toISOString() } : {}),
        replica: THIS_REPLICA,
      });
    } catch (failure) {
      this.logger.warn(`${report.policy}: the pass could not be logged for the console: ${errorText(failure)}`);
    }
  }

  /**
   * A webhook's event, for every policy that takes events and covers its project: just what it concerns is observed,
   * decided and acted on, through the same executor as a poll (dry run, delay, ledger, preconditions, audit). Nothing
   * is committed: the poll's marks stay, and the ledger keeps the poll from acting on the same target again.
   */
  async event(event: ForgeEvent): Promise<PassResult[]> {
    try {
      const results = await this.eventPasses(event);
      this.metrics.webhookDeliveries.inc({ event: event.kind, result: results.length > 0 ? 'acted' : 'not_covered' });
      return results;
    } catch (error) {
      this.metrics.webhookDeliveries.inc({ event: event.kind, result: 'failed' });
      throw error;
    }
  }

  private async eventPasses(event: ForgeEvent): Promise<PassResult[]> {
    const results: PassResult[] = [];
    for (const policy of this.active.policies) {
      const policyType = this.active.typeOf(policy);
      const events = policyType.events;
      if (!events) continue;
      const dryRun = this.active.dryRun(policy);
      const context = this.contexts.for(policy, 'act', 'event');
      const snapshot = await this.read(policy, () => events.observe(policy, event, context));
      if (snapshot === undefined) continue;
      const { decisions, records } = await this.decideAndAct(policy, policyType, snapshot, context, {
        dryRun,
        delays: 'queue',
      });
      if (!dryRun) await this.unsettled.merge(policy.name, records, context.now);
      const finishedAt = event.kind === 'job' && event.finishedAt ? Date.parse(event.finishedAt) : undefined;
      for (const record of records) {
        if (record.outcome === 'done' && finishedAt !== undefined)
          this.metrics.failureToAction.observe(
            { policy: policy.name },
            Math.max(0, this.clock.now() - finishedAt) / 1000,
          );
      }
      this.logger.log(
        `${policy.name}: ${event.kind} event for project ${event.project.path ?? event.project.id}: ${passTally(records)}`,
      );
      results.push({ policy: policy.name, type: policy.type, dryRun, decisions, records });
    }
    return results;
  }

  /**
   * The targets a pass could not read, in the audit trail: one entry each, with the forge's answer, so a person finds
   * why a project was left out without reading logs.
   */
  private async reportUnobserved(policy: string, targets: readonly UnobservedTarget[], dryRun: boolean): Promise<void> {
    for (const { target, reason } of targets) {
      await this.audit.record({
        time: new Date(this.clock.now()).toISOString(),
        policy,
        target,
        action: 'observe',
        reason: 'could not be read; the other targets went on',
        outcome: 'unobserved',
        dry_run: dryRun,
        detail: reason,
      });
      this.logger.warn(`${policy}: ${target} could not be read: ${reason}`);
    }
  }

  /**
   * The one path of every pass, a poll's or an event's, after its read: decide, and when acting (`act`), report what
   * could not be read and hand the decisions to the executor. Deciding failing is the pass failing as a whole (failed
   * actions are counted per decision).
   */
  private async decideAndAct(
    policy: PolicyConfig,
    policyType: PolicyType,
    snapshot: unknown,
    context: PolicyContext,
    act: ExecuteOptions | undefined,
  ): Promise<{ decisions: Decision[]; records: ActionRecord[] }> {
    let decisions: Decision[];
    try {
      decisions = policyType.decide(policy, snapshot, context.now);
    } catch (error) {
      this.metrics.passes.inc({ policy: policy.name, result: 'failed' });
      throw error;
    }
    if (!act) return { decisions, records: [] };
    await this.reportUnobserved(policy.name, context.unobserved.list(), act.dryRun);
    return { decisions, records: await this.executor.execute(policy, policyType, decisions, context, act) };
  }

  /** A pass's read of the forge, its requests labelled as observing; its failure is the pass's. */
  private async read<S>(policy: PolicyConfig, observe: () => Promise<S>): Promise<S> {
    try {
      return await withPurpose({ policy: policy.name, phase: 'observe' }, observe);
    } catch (error) {
      this.metrics.passes.inc({ policy: policy.name, result: 'failed' });
      throw error;
    }
  }
}

/** A decision that leaves its pass partial: refused for good, or done without all of it (a backup set lacking projects). */
export function leftPartial(record: ActionRecord): boolean {
  return record.outcome === 'refused' || (record.incomplete?.length ?? 0) > 0;
}

/** `2 done, 1 failed, 5 skipped`, or `nothing to do`. */
export function passTally(records: readonly ActionRecord[]): string {
  const counts = new Map<string, number>();
  for (const record of records) counts.set(record.outcome, (counts.get(record.outcome) ?? 0) + 1);
  if (counts.size === 0) return 'nothing to do';
  return [...counts].map(([outcome, n]) => `${n} ${outcome.replace('_', ' ')}`).join(', ');
}

/** A forge's refusal says which request it was (`GET projects/acme%2Fgone/jobs → 404: ...`): it names the target. */
export function errorText(error: unknown): string {
  if (error instanceof ApiError) return error.summary;
  return error instanceof Error ? error.message : String(error);
}
