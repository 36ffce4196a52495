import { Inject, Injectable, Logger } from '@nestjs/common';
import { CLOCK, type Clock } from '../clock';
import type { PolicyConfig } from '../config/policy-type';
import { defineJob } from '../queue/jobs';
import { QueueService } from '../queue/queue.service';
import { ActiveConfig } from './active-config';
import type { PassOccasion, Trigger } from './policy';
import { extraPassAt, nextTriggerRun } from './trigger-period';
import { errorText, PassRunner, type PassReport, type PassResult } from './pass-runner';
import type { Lease } from './stores/lease';
import { PassHistory } from './stores/pass-history';
import { wantsRetry } from './stores/unsettled';

export const policyTickJob = defineJob<{ policy: string }>('policy.tick');

/**
 * The pass lease: renewed while a pass runs, so a pass killed with its process holds the policy back by seconds; a
 * pass that loses it (Redis unreachable for that long) starts no further action.
 */
const PASS_LEASE_MS = 15_000;

/**
 * When a pass leaves targets open, or fails as a whole, the next pass comes at most this long after (then 10, 20…
 * minutes for passes that keep failing), however long the policy's interval or cron period.
 */
const RETRY_PASS_MS = 5 * 60_000;

/** The bot's own harm left open by a pass is looked at again within a minute, whatever the schedule. */
const HARM_PASS_MS = 30_000;
/** Extra passes are asked for on this grid, so replicas asking at about the same time queue one between them. */
const EXTRA_PASS_GRID_MS = 60_000;
const HARM_PASS_GRID_MS = 15_000;

/** How a pass is run: `plan` or `act`, and whether delayed actions and the next pass go to the queue. */
export interface CycleOptions {
  readonly mode: 'plan' | 'act';
  /** `queue` as the daemon's schedule runs it; `inline` as a command does (delays are waited out in the pass). */
  readonly delays: 'queue' | 'inline';
  readonly progress?: (message: string) => void;
  /** No action starts once it is lost. */
  readonly lease?: Lease;
}

/**
 * One pass from start to end, whoever asks for it (a tick, a command, a test): the PassRunner's pass, then what
 * follows it (the next pass sooner than the trigger, backoff after a pass that failed as a whole), then its log
 * line. When passes are scheduled is DaemonSchedules'; the queue's jobs are taken by the QueueConsumer.
 */
@Injectable()
export class PassCycle {
  private readonly logger = new Logger('Engine');
  /** Policies with a pass running in this process: a tick that finds its own pass still running is no news. */
  private readonly running = new Set<string>();

  constructor(
    private readonly active: ActiveConfig,
    private readonly runner: PassRunner,
    private readonly history: PassHistory,
    private readonly queue: QueueService,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  /**
   * One pass of one policy. An acting pass with queued delays is the schedule's: marked as running while it runs (one
   * killed with its process is run again at the next start) and followed by the extra pass it needs, queued here.
   * Any other acting pass only says when its next pass would come.
   */
  async run(name: string, options: CycleOptions): Promise<PassResult> {
    const scheduled = options.mode === 'act' && options.delays === 'queue';
    const occasion: Exclude<PassOccasion, 'event'> = options.delays === 'queue' ? 'schedule' : 'command';
    let marked = false;
    try {
      if (scheduled) {
        await this.history.markRunning(name, new Date(this.clock.now()));
        marked = true;
      }
      const report = await this.runner.run(name, {
        mode: options.mode,
        delays: options.delays,
        occasion,
        ...(options.progress && !scheduled ? { progress: options.progress } : {}),
        ...(options.lease ? { lease: options.lease } : {}),
      });
      let nextPassAt: Date | undefined;
      if (scheduled) nextPassAt = await this.followUp(report);
      else if (options.mode === 'act' && report.error === undefined) nextPassAt = this.nextPassOf(report);
      if (options.mode === 'act') await this.runner.logPass(report, occasion, nextPassAt);
      return { ...withoutReport(report), ...(nextPassAt ? { nextPassAt } : {}) };
    } finally {
      // Ended, well or not: only a killed pass leaves its mark.
      if (marked) await this.history.clearRunning(name).catch(() => undefined);
    }
  }

  /** A tick of the policy's schedule: its pass under the policy's lock, which one replica holds at a time. */
  async tick(name: string): Promise<void> {
    if (!this.active.find(name)) return; // removed since it was scheduled
    const lease = await this.history.lock(name, PASS_LEASE_MS);
    if (!lease) {
      if (this.running.has(name)) this.logger.debug(`${name}: the previous pass is still running; skipping this tick`);
      else this.logger.log(`${name}: a pass of this policy is running on another replica; skipping this tick`);
      return;
    }
    this.running.add(name);
    try {
      await this.run(name, { mode: 'act', delays: 'queue', lease });
    } finally {
      this.running.delete(name);
      await lease.release();
    }
  }

  /**
   * When the next pass comes sooner than the trigger, queued once however many replicas ask: the earliest of what the
   * policy asked for and a retry of its open targets (not the parked ones), or, after a pass that failed as a whole, a
   * retry with backoff (not when it lost its lease: another replica holds the policy, and its pass counts).
   */
  private async followUp(report: PassReport): Promise<Date | undefined> {
    const policy = this.active.policy(report.policy);
    const now = new Date(this.clock.now());
    if (report.error !== undefined) return report.leaseLost ? undefined : this.retryFailedPass(policy, now);
    const at = this.nextPassOf(report);
    if (at) await this.extraPass(policy.name, at, now);
    return at;
  }

  /** When the pass reported asks for the next one, sooner than the trigger (nothing is queued here). */
  private nextPassOf(report: PassReport): Date | undefined {
    const policy = this.active.policy(report.policy);
    const trigger = this.active.typeOf(policy).trigger(policy);
    const now = new Date(this.clock.now());
    const harmPass =
      report.harm && report.harm.length > 0 ? retryPassAt(trigger, 1, now, HARM_PASS_MS, HARM_PASS_GRID_MS) : undefined;
    return extraPassAt(
      trigger,
      [report.policyNextPass, retryPassAt(trigger, report.open.filter(wantsRetry).length, now), harmPass],
      now,
    );
  }

  /**
   * A scheduled pass that failed as a whole (the forge or Redis away while it observed) is tried again rather than left
   * to the next scheduled run: 5 minutes later, then 10, 20 and so on while it keeps failing, as long as that comes
   * before the next scheduled run. A nightly backup missed at 02:00 is taken at 02:05; a pass that cannot work (a
   * token without the role) is not run every 5 minutes all day. A success starts the count again.
   */
  private async retryFailedPass(policy: PolicyConfig, now: Date): Promise<Date | undefined> {
    try {
      const failures = await this.history.countFailure(policy.name);
      const nextRun = nextTriggerRun(this.active.typeOf(policy).trigger(policy), now)?.getTime();
      const at = roundedUp(now.getTime() + RETRY_PASS_MS * 2 ** Math.min(failures - 1, 20));
      if (nextRun !== undefined && at.getTime() >= nextRun) return undefined;
      await this.extraPass(policy.name, at, now);
      return at;
    } catch (error) {
      this.logger.warn(
        `${policy.name}: the failed pass could not be queued again (${errorText(error)}); it runs at its next scheduled time`,
      );
      return undefined;
    }
  }

  /** One extra pass at `at`; the job id makes the request once, however many replicas make it. */
  private async extraPass(name: string, at: Date, now: Date): Promise<void> {
    await this.queue.enqueue(
      policyTickJob,
      { policy: name },
      { jobId: `extra:${name}:${at.getTime()}`, delayMs: Math.max(0, at.getTime() - now.getTime()) },
    );
    this.logger.log(`${name}: next pass at ${at.toISOString()}`);
  }
}

/** An extra pass for open targets when the policy's own schedule would leave them longer than `afterMs`. */
export function retryPassAt(
  trigger: Trigger,
  open: number,
  now: Date,
  afterMs = RETRY_PASS_MS,
  gridMs = EXTRA_PASS_GRID_MS,
): Date | undefined {
  if (open === 0) return undefined;
  if ('every' in trigger && trigger.every <= afterMs) return undefined;
  return roundedUp(now.getTime() + afterMs, gridMs);
}

/** Rounded up to the grid, so replicas asking at about the same time queue one pass between them. */
function roundedUp(ms: number, gridMs = EXTRA_PASS_GRID_MS): Date {
  return new Date(Math.ceil(ms / gridMs) * gridMs);
}

/** The pass as the commands and tests see it: without what only the scheduler needs. */
export function withoutReport({
  open: _open,
  policyNextPass: _next,
  leaseLost: _lost,
  startedMs: _started,
  summary: _summary,
  ...result
}: PassReport): PassResult {
  return result;
}
