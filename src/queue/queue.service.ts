import { InjectQueue } from '@nestjs/bull';
import { Inject, Injectable, Logger, type BeforeApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Job, Queue } from 'bull';
import { APP_CONFIG } from '../config/config.module';
import type { AppConfig } from '../config/schema';
import { BullConnections } from '../redis/bull-connections';
import { definedJobNames, type EnqueueOptions, type JobDefinition, type JobHandler, type ScheduleEntry } from './jobs';

/** The one Bull queue the daemon works from; job kinds are told apart by name. */
export const WORK_QUEUE = 'work';

/**
 * Jobs one replica runs at once. Policy work is I/O-bound and the client caps requests on its own; a scheduled pass
 * holds its slot while it spreads its reads over half its interval, so there are slots enough for a webhook's event
 * not to wait behind the passes of several large policies.
 */
const WORKER_CONCURRENCY = 16;

/**
 * The worker is looked at this often; jobs ready to run while the worker has free slots and takes none for
 * `STUCK_AFTER_MS` mean its blocking connection did not come back (Bull 4 can stay waiting on a socket a failed-over
 * primary never closed), and that connection is made anew.
 */
const WATCHDOG_INTERVAL_MS = 5_000;
const STUCK_AFTER_MS = 15_000;

/** Finished jobs kept for inspection; failed ones longer, as they are what an operator looks at. */
const KEEP_COMPLETED = { age: 3_600, count: 1_000 };
const KEEP_FAILED = { age: 7 * 86_400, count: 5_000 };

/**
 * The only code that touches Bull: enqueueing, handling by job name, and draining on shutdown. Handlers are
 * registered by the modules that define the jobs; `startWorking` refuses to start while a defined job has none.
 */
@Injectable()
export class QueueService implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger(QueueService.name);
  private readonly handlers = new Map<string, JobHandler<object>>();
  private working = false;
  private active = 0;
  private lastTakenAt = Date.now();
  /** Since when jobs have been waiting with slots free and none taken; undefined while the worker keeps up. */
  private waitingSince: number | undefined;
  private watchdog: NodeJS.Timeout | undefined;

  constructor(
    @InjectQueue(WORK_QUEUE) private readonly queue: Queue,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly connections: BullConnections,
  ) {}

  onModuleInit(): void {
    // Bull re-emits connection errors on the queue; without a listener Node would throw them.
    this.queue.on('error', (error: Error) => this.logger.warn(`queue: ${error.message}`));
    this.queue.on('failed', (job: Job, error: Error) =>
      this.logger.error(
        `job ${job.name} ${String(job.id)} failed (attempt ${job.attemptsMade}): ${error.message}`,
        error.stack,
      ),
    );
    this.queue.on('stalled', (job: Job) =>
      this.logger.warn(`job ${job.name} ${String(job.id)} stalled; it will run again`),
    );
  }

  handle<Payload extends object>(job: JobDefinition<Payload>, handler: JobHandler<Payload>): void {
    if (this.handlers.has(job.name)) throw new Error(`job "${job.name}" has two handlers`);
    if (this.working) throw new Error(`job "${job.name}" got a handler after the worker started`);
    this.handlers.set(job.name, handler as JobHandler<object>);
  }

  async enqueue<Payload extends object>(
    job: JobDefinition<Payload>,
    payload: Payload,
    options: EnqueueOptions = {},
  ): Promise<void> {
    await this.queue.add(job.name, payload, {
      jobId: options.jobId,
      delay: options.delayMs,
      attempts: options.attempts ?? 1,
      backoff: { type: 'exponential', delay: 5_000 },
      removeOnComplete: KEEP_COMPLETED,
      removeOnFail: KEEP_FAILED,
    });
  }

  /**
   * Makes the repeating schedules of `job` exactly `entries`, adding every wanted one again so that none is left listed
   * but never firing; `prune: false` removes nothing (see docs/architecture.md, "Repeating schedules").
   */
  async syncSchedules<Payload extends object>(
    job: JobDefinition<Payload>,
    entries: readonly ScheduleEntry<Payload>[],
    options: { prune?: boolean } = {},
  ): Promise<void> {
    const wanted = new Map(entries.map((entry) => [repeatIdentity(entry.id, entry.repeat), entry]));
    for (const existing of options.prune === false ? [] : await this.queue.getRepeatableJobs()) {
      if (existing.name !== job.name) continue;
      const repeat = existing.cron
        ? { cron: existing.cron, timezone: existing.tz ?? undefined }
        : { every: Number(existing.every) };
      const identity = repeatIdentity(existing.id ?? '', repeat);
      if (!wanted.has(identity)) await this.queue.removeRepeatableByKey(existing.key);
    }
    for (const entry of wanted.values()) {
      const repeat =
        'every' in entry.repeat
          ? { every: entry.repeat.every }
          : { cron: entry.repeat.cron, tz: entry.repeat.timezone };
      await this.queue.add(job.name, entry.payload, {
        jobId: entry.id,
        repeat,
        removeOnComplete: KEEP_COMPLETED,
        removeOnFail: KEEP_FAILED,
      });
    }
  }

  /** The schedules of `job` as Bull holds them: id and next run, for status output and tests. */
  async schedules<Payload extends object>(
    job: JobDefinition<Payload>,
  ): Promise<Array<{ id: string; next: number; every?: number; cron?: string }>> {
    return (await this.queue.getRepeatableJobs())
      .filter((existing) => existing.name === job.name)
      .map((existing) => ({
        id: existing.id ?? '',
        next: existing.next,
        ...(existing.every ? { every: Number(existing.every) } : {}),
        ...(existing.cron ? { cron: existing.cron } : {}),
      }));
  }

  /** Starts taking jobs (the daemon does; one-shot commands never do). */
  startWorking(): void {
    const missing = definedJobNames().filter((name) => !this.handlers.has(name));
    if (missing.length > 0) throw new Error(`no handler for job ${missing.map((name) => `"${name}"`).join(', ')}`);
    this.working = true;
    // '*' takes every job name; the dispatch below fails a job whose name has no handler instead of losing it.
    void this.queue
      .process('*', WORKER_CONCURRENCY, (job: Job<object>) => this.dispatch(job))
      .catch((error: Error) => {
        this.logger.error(`worker stopped: ${error.message}`, error.stack);
      });
    this.watchdog = setInterval(() => void this.watchWorker(), WATCHDOG_INTERVAL_MS);
    this.watchdog.unref();
  }

  /** Renews the worker's blocking connection when jobs wait, slots are free and none was taken for a while. */
  private async watchWorker(): Promise<void> {
    let waiting: number;
    try {
      waiting = await this.queue.getWaitingCount();
    } catch {
      return; // Redis away: nothing to judge the worker by
    }
    const now = Date.now();
    if (!this.working || waiting === 0 || this.active >= WORKER_CONCURRENCY) {
      this.waitingSince = undefined;
      return;
    }
    // A job taken since the last look: the worker keeps up, and the watch starts again from now.
    if (this.waitingSince === undefined || this.lastTakenAt >= this.waitingSince) {
      this.waitingSince = now;
      return;
    }
    const stuckMs = now - this.waitingSince;
    if (stuckMs < STUCK_AFTER_MS) return;
    this.logger.warn(
      `${waiting} job(s) ready and none taken for ${Math.round(stuckMs / 1000)}s: renewing the worker's Redis connection`,
    );
    this.waitingSince = undefined;
    await this.connections.renewBlocking();
  }

  get activeJobs(): number {
    return this.active;
  }

  /**
   * On SIGTERM: stop taking jobs, let the running ones finish within `shutdown_timeout`, then close the queue and
   * its connections. A job cut off by the bound is not lost: Bull sees it stalled and another replica (or the next
   * start) runs it again, which is why handlers are idempotent.
   */
  async beforeApplicationShutdown(): Promise<void> {
    let finished = true;
    clearInterval(this.watchdog);
    this.connections.closing();
    if (this.working) {
      this.working = false;
      const bound = this.config.shutdown_timeout;
      if (this.active > 0) this.logger.log(`waiting up to ${bound / 1000}s for ${this.active} running job(s)`);
      let timer: NodeJS.Timeout | undefined;
      finished = await Promise.race([
        this.queue.pause(true).then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), bound);
        }),
      ]).finally(() => clearTimeout(timer));
      if (!finished)
        this.logger.warn(`${this.active} job(s) still running after ${bound / 1000}s; they will run again`);
    }
    await this.queue.close(!finished);
    await this.connections.closeAll();
  }

  private async dispatch(job: Job<object>): Promise<void> {
    const handler = this.handlers.get(job.name);
    if (!handler) throw new Error(`no handler for job "${job.name}"`);
    this.lastTakenAt = Date.now();
    this.active++;
    try {
      await handler(job.data, { jobId: String(job.id), attempt: job.attemptsMade + 1 });
    } finally {
      this.active--;
    }
  }
}

function repeatIdentity(id: string, repeat: { every: number } | { cron: string; timezone?: string }): string {
  return 'every' in repeat ? `${id}|every|${repeat.every}` : `${id}|cron|${repeat.cron}|${repeat.timezone ?? ''}`;
}
