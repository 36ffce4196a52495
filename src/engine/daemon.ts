import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { CLOCK, type Clock } from '../clock';
import type { PolicyConfig } from '../config/policy-type';
import type { AppConfig } from '../config/schema';
import { MetricsService } from '../metrics/metrics.service';
import { QueueService } from '../queue/queue.service';
import { ActiveConfig } from './active-config';
import { PolicyContexts } from './contexts';
import { EngineGauges } from './gauges';
import { errorText } from './pass-runner';
import { policyTickJob } from './pass-cycle';
import { DataMarker } from './stores/data-marker';
import { PassHistory } from './stores/pass-history';
import { ReplicaPresence } from './stores/replicas';

/** How often the daemon checks that Redis still holds its data (the marker key). */
const REDIS_WATCH_MS = 5_000;

/**
 * How often the daemon puts every schedule's next run back if it went missing (a replica killed at the wrong moment
 * breaks Bull's chain of runs; see QueueService.syncSchedules).
 */
const SCHEDULE_REPAIR_MS = 30_000;

/** Whether the daemon is set up in Redis: schedules in place, the data marker found. */
export interface EngineReadiness {
  readonly ready: boolean;
  readonly reason?: string;
}

/**
 * Whether the policies that run are those of the policy file: not after a refused reload (the file has problems, or
 * names a policy type this build lacks) while the previous policies go on, until a reload is taken again.
 */
export interface ConfigStatus {
  readonly ok: boolean;
  readonly reason?: string;
}

/**
 * The daemon's schedules: one Bull repeatable job per policy (each fires once cluster-wide), a first pass at start,
 * reloads, the repair of broken schedules, and the watch that notices Redis without its data. Readiness says when
 * it is set up, and whether the last reload was taken. What a tick then runs is the PassCycle's.
 */
@Injectable()
export class DaemonSchedules implements OnModuleDestroy {
  private readonly logger = new Logger('Engine');
  private watch: NodeJS.Timeout | undefined;
  /** Not ready until the daemon has set itself up in Redis: /readyz must not say 200 before the work can start. */
  private readinessState: EngineReadiness = { ready: false, reason: 'starting' };
  private configState: ConfigStatus = { ok: true };

  constructor(
    private readonly active: ActiveConfig,
    private readonly contexts: PolicyContexts,
    private readonly history: PassHistory,
    private readonly marker: DataMarker,
    private readonly gauges: EngineGauges,
    private readonly presence: ReplicaPresence,
    private readonly queue: QueueService,
    private readonly metrics: MetricsService,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async onModuleDestroy(): Promise<void> {
    if (!this.watch) return;
    clearInterval(this.watch);
    this.watch = undefined;
    // Gone from the console's count at once, and `forgewarden clear` need not wait for it to age out.
    await this.presence.leave().catch(() => undefined);
  }

  /**
   * The daemon's start: its schedules, the data marker, and a watch that notices when Redis comes back without its
   * data (restarted without persistence, failed over, flushed). Redis holds schedules, ledgers and marks, but the
   * forge holds the truth: after such a loss the schedules are made again at once and every policy goes on as after
   * a restart, finding from the forge what is done.
   */
  async start(): Promise<void> {
    // The file the process started with is its first successful load, as Prometheus counts its own (a broken one
    // ended the start with exit 2 before this), so the time of the last good load has a value from the start.
    this.configTaken();
    await this.syncSchedules();
    await this.marker.ensure(new Date(this.clock.now()));
    this.gauges.describe();
    await this.gauges.refresh();
    await this.firstPasses(this.active.policies);
    this.readinessState = { ready: true };
    await this.presence.beat(Date.now()).catch(() => undefined);
    let sinceRepair = 0;
    this.watch = setInterval(() => {
      // Wall-clock time, not the engine's clock: the console counts the replicas seen in the last real minute.
      void this.presence.beat(Date.now()).catch(() => undefined);
      sinceRepair += REDIS_WATCH_MS;
      const repair = sinceRepair >= SCHEDULE_REPAIR_MS;
      if (repair) sinceRepair = 0;
      void this.checkRedisData(repair);
      void this.gauges.refresh();
    }, REDIS_WATCH_MS);
    this.watch.unref();
  }

  /**
   * Takes a new policy file (SIGHUP), already validated: from now on passes, queued actions and schedules follow it.
   * Policies that are new or whose trigger changed pass at once, as at start.
   */
  async reload(config: AppConfig): Promise<void> {
    const before = new Map(this.active.policies.map((policy) => [policy.name, this.triggerKey(policy)]));
    try {
      this.active.replace(config);
    } catch (error) {
      this.reloadFailed(errorText(error));
      throw error;
    }
    // Taken from here on, even if Redis fails the schedules below: the file is what runs, and the repair puts the
    // schedules right within 30 s.
    this.configTaken();
    this.contexts.reloaded();
    this.gauges.describe();
    await this.syncSchedules();
    await this.gauges.refresh();
    await this.firstPasses(
      this.active.policies.filter((policy) => before.get(policy.name) !== this.triggerKey(policy)),
    );
  }

  /**
   * A reload (SIGHUP) refused for the file's problems: the previous policies go on, and /readyz and the metrics say
   * that the file on disk is not what runs (a restart would now fail on it).
   */
  reloadRejected(file: string, problems: number): void {
    this.reloadFailed(`${problems} problem${problems === 1 ? '' : 's'} in ${file}`);
  }

  readiness(): EngineReadiness {
    return this.readinessState;
  }

  configStatus(): ConfigStatus {
    return this.configState;
  }

  /** The daemon's schedules: one per configured policy, and (unless `prune` is false) none for removed ones. */
  async syncSchedules(options: { prune?: boolean } = {}): Promise<void> {
    const schedules = this.active.policies.map((policy) => ({
      id: policy.name,
      payload: { policy: policy.name },
      repeat: this.active.typeOf(policy).trigger(policy),
    }));
    await this.queue.syncSchedules(policyTickJob, schedules, options);
  }

  /**
   * Checks the marker; when it is missing, makes the schedules again. With `repairSchedules`, puts back the next run of
   * any schedule that lost it. Redis not answering is left to its own check.
   */
  async checkRedisData(repairSchedules = false): Promise<void> {
    try {
      if (this.readinessState.ready) {
        if (await this.marker.present()) {
          if (repairSchedules) await this.syncSchedules({ prune: false });
          return;
        }
        this.readinessState = { ready: false, reason: 'Redis lost its data; making the schedules again' };
        this.logger.warn(
          "Redis has lost the daemon's data (restarted empty, failed over or flushed): making the schedules again; policies go on as after a restart",
        );
        this.metrics.redisDataLost.inc();
        // The marker first, with the time of the loss: a pass that starts as soon as its schedule is back must know
        // that the records of the forge's limits went with the data.
        await this.marker.markLost(new Date(this.clock.now()));
      }
      await this.syncSchedules();
      this.readinessState = { ready: true };
    } catch (error) {
      // Redis away again, or Bull refused: not ready, and the next check tries again.
      if (!this.readinessState.ready)
        this.readinessState = {
          ready: false,
          reason: `Redis lost its data and the schedules could not be made again yet: ${errorText(error)}`,
        };
    }
  }

  /**
   * A pass of each interval policy right away, not at the next multiple of its interval (a 1h policy would wait for
   * the top of the hour). Cron policies keep their schedule: a cleanup set for 03:00 does not run at a restart at
   * noon. A policy that passed less than one interval ago on any replica waits for its schedule, so a rolling restart
   * of several replicas does not make a pass each; the job id makes replicas starting together queue one.
   */
  private async firstPasses(policies: readonly PolicyConfig[]): Promise<void> {
    const now = this.clock.now();
    const last = await this.history.lastSuccessful();
    const interrupted = await this.history.interrupted();
    for (const policy of policies) {
      const trigger = this.active.typeOf(policy).trigger(policy);
      if (!('every' in trigger)) {
        // A scheduled pass whose process died in it (a backup half downloaded) goes on now, not at the next run. If
        // it still runs on another replica, this pass finds the policy's lock taken and does nothing.
        const began = interrupted.get(policy.name);
        if (began !== undefined)
          await this.queue.enqueue(policyTickJob, { policy: policy.name }, { jobId: `resume:${policy.name}:${began}` });
        continue;
      }
      const lastOk = (last.get(policy.name) ?? Number.NaN) * 1000;
      if (Number.isFinite(lastOk) && now - lastOk < trigger.every) continue;
      const slot = Math.floor(now / Math.min(trigger.every, 60_000));
      await this.queue.enqueue(policyTickJob, { policy: policy.name }, { jobId: `start:${policy.name}:${slot}` });
    }
  }

  private configTaken(): void {
    this.configState = { ok: true };
    this.metrics.configLastReloadSuccessful.set(1);
    this.metrics.configLastReloadSuccessTimestamp.set(this.clock.now() / 1000);
  }

  private reloadFailed(why: string): void {
    this.configState = { ok: false, reason: `reload failed at ${new Date(this.clock.now()).toISOString()}: ${why}` };
    this.metrics.configLastReloadSuccessful.set(0);
  }

  private triggerKey(policy: PolicyConfig): string {
    return JSON.stringify(this.active.typeOf(policy).trigger(policy));
  }
}
