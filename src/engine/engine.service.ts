import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type Redis from 'ioredis';
import { APP_CONFIG } from '../config/config.module';
import type { PolicyConfig } from '../config/policy-type';
import type { ProjectRef } from '../config/validators';
import type { AppConfig } from '../config/schema';
import { GitlabClient } from '../gitlab/client';
import { ApiError } from '../gitlab/transport/errors';
import { withPurpose } from '../gitlab/transport/purpose';
import { MetricsService } from '../metrics/metrics.service';
import { defineJob } from '../queue/jobs';
import { QueueService } from '../queue/queue.service';
import { REDIS } from '../redis/redis.module';
import { Executor, policyActionJob, type QueuedAction } from './executor';
import { CLOCK, type Clock } from '../clock';
import { ProjectDiscovery, RedisDiscoveryCache } from './discovery';
import { EngineKeys } from './keys';
import { type ForgeEvent, forgeEventJob } from './events';
import type { ActionRecord, Decision, PolicyContext, PolicyMetrics, PolicyRunner, Refusal, UnobservedTarget } from './policy';
import { UnobservedList } from './observe-targets';
import { Lease, LeaseLostError } from './lease';
import { nextRunAfter } from './schedule-runs';
import { evenPace, SPREAD_FRACTION, type TargetPace } from './pace';
import { PolicyRegistry } from './policy-registry';
import { readJsonObject, RedisPolicyState } from './policy-state';
import { triggerPeriodMs } from './trigger-period';
import { UnsettledTargets, wantsRetry } from './unsettled';

export const policyTickJob = defineJob<{ policy: string }>('policy.tick');

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
  /** When the policy asked for an extra pass (a follow-up after the forge's hourly limit). */
  readonly nextPassAt?: Date;
  /** The projects the pass looked at, when the policy says (its globs resolved): `plan` shows them. */
  readonly covered?: readonly string[];
  /** The groups the pass looked at, when globs chose them: `plan` shows them. */
  readonly coveredGroups?: readonly string[];
}

/**
 * The pass lease: renewed while a pass runs, so a pass killed with its process holds the policy back by seconds; a
 * pass that loses it (Redis unreachable for that long) starts no further action.
 */
const PASS_LEASE_MS = 15_000;

/** How often the daemon checks that Redis still holds its data (the marker key). */
const REDIS_WATCH_MS = 5_000;

/**
 * How often the daemon puts every schedule's next run back if it went missing (a replica killed at the wrong moment
 * breaks Bull's chain of runs; see QueueService.syncSchedules).
 */
const SCHEDULE_REPAIR_MS = 30_000;

/**
 * When a pass leaves targets unsettled, the next pass comes at most this long after, however long the policy's
 * interval or cron period (a nightly cleanup whose deletion failed is not left until the next night).
 */
const UNSETTLED_RETRY_MS = 5 * 60_000;

/** Whether the daemon is set up in Redis: schedules in place, the data marker found. */
export interface EngineReadiness {
  readonly ready: boolean;
  readonly reason?: string;
}

/**
 * Runs policies: trigger → observe → decide → act. Ticks come from Bull repeatable jobs, so each fires once
 * cluster-wide; a per-policy lock in Redis keeps two passes of one policy from overlapping when one runs long.
 */
@Injectable()
export class EngineService implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Engine');
  private readonly keys: EngineKeys;
  private watch: NodeJS.Timeout | undefined;
  /** Policies with a pass running in this process: a tick that finds its own pass still running is no news. */
  private readonly running = new Set<string>();
  /** Not ready until the daemon has set itself up in Redis (startDaemon): /readyz must not say 200 before the work can start. */
  private discovery: ProjectDiscovery;
  private readinessState: EngineReadiness = { ready: false, reason: 'starting' };

  constructor(
    // Replaced as a whole by a reload (SIGHUP); the connection settings in it stay those the process started with.
    @Inject(APP_CONFIG) private config: AppConfig,
    @Inject(REDIS) private readonly redis: Redis,
    private readonly registry: PolicyRegistry,
    private readonly executor: Executor,
    private readonly queue: QueueService,
    private readonly client: GitlabClient,
    private readonly metrics: MetricsService,
    private readonly unsettled: UnsettledTargets,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {
    this.keys = EngineKeys.of(config);
    this.discovery = this.discoveryFor(config);
  }

  /** One discovery for every policy, so a group several policies match is listed once per interval. */
  private discoveryFor(config: AppConfig): ProjectDiscovery {
    const cache = new RedisDiscoveryCache(this.redis, this.keys);
    return new ProjectDiscovery(this.client, cache, this.clock, config.discovery_interval, new Logger('discovery'));
  }

  onModuleInit(): void {
    this.queue.handle(policyTickJob, ({ policy }) => this.tick(policy));
    this.queue.handle(policyActionJob, (action) => this.performQueued(action));
    this.queue.handle(forgeEventJob, async (delivery) => {
      await this.handleEvent(delivery.event);
    });
  }

  /**
   * A webhook's event, handled from the queue: every policy that takes events and covers its project observes just
   * what it concerns, decides and acts, through the same executor as a poll (dry run, delay, ledger, audit). Polling
   * stays on: the ledger keeps the poll from acting on the same target again, and catches what a lost delivery missed.
   */
  async handleEvent(event: ForgeEvent): Promise<PassResult[]> {
    const results: PassResult[] = [];
    try {
      for (const policy of this.config.policies) {
        const runner = this.registry.get(policy.type);
        if (!runner.observeEvent) continue;
        const result = await this.runEventPass(policy, runner, event);
        if (result) results.push(result);
      }
    } catch (error) {
      this.metrics.webhookDeliveries.inc({ event: event.kind, result: 'failed' });
      throw error;
    }
    this.metrics.webhookDeliveries.inc({ event: event.kind, result: results.length > 0 ? 'acted' : 'not_covered' });
    return results;
  }

  /**
   * Every project some policy takes webhook events for, each once (by id or path, ignoring case), with the policies
   * that cover it, in the order found: where `hooks install` puts the daemon's webhook.
   */
  async webhookProjects(): Promise<Array<{ project: ProjectRef; policies: string[] }>> {
    const found = new Map<string, { project: ProjectRef; policies: string[] }>();
    for (const policy of this.config.policies) {
      const runner = this.registry.get(policy.type);
      if (!runner.eventProjects) continue;
      for (const project of await runner.eventProjects(policy, this.context(policy, 'plan'))) {
        const key = String(project).toLowerCase();
        const known = found.get(key);
        if (known) known.policies.push(policy.name);
        else found.set(key, { project, policies: [policy.name] });
      }
    }
    return [...found.values()];
  }

  private async runEventPass(policy: PolicyConfig, runner: PolicyRunner, event: ForgeEvent): Promise<PassResult | undefined> {
    const dryRun = policy.dry_run ?? this.config.dry_run;
    const context = this.context(policy, 'act');
    const snapshot = await withPurpose({ policy: policy.name, phase: 'observe' }, async () => runner.observeEvent?.(policy, event, context));
    if (snapshot === undefined) return undefined;
    const decisions = runner.decide(policy, snapshot, context.now);
    const records = await this.executor.execute(policy, runner, decisions, context, { dryRun, delays: 'queue' });
    if (!dryRun) await this.unsettled.merge(policy.name, records, context.now);
    const finishedAt = event.kind === 'job' && event.finishedAt ? Date.parse(event.finishedAt) : undefined;
    for (const record of records) {
      if (record.outcome === 'done' && finishedAt !== undefined) this.metrics.failureToAction.observe({ policy: policy.name }, Math.max(0, this.clock.now() - finishedAt) / 1000);
    }
    this.logger.log(`${policy.name}: ${event.kind} event for project ${event.project.path ?? event.project.id}: ${passTally(records)}`);
    return { policy: policy.name, type: policy.type, dryRun, decisions, records };
  }

  /** Fails the start when a configured policy's type has no runner: better loud at boot than silent later. */
  onApplicationBootstrap(): void {
    for (const policy of this.config.policies) this.registry.get(policy.type);
  }

  onModuleDestroy(): void {
    if (this.watch) clearInterval(this.watch);
    this.watch = undefined;
  }

  /**
   * The daemon's start: its schedules, the data marker, and a watch that notices when Redis comes back without its
   * data (restarted without persistence, failed over, flushed). Redis holds schedules, ledgers and marks, but the
   * forge holds the truth: after such a loss the schedules are made again at once and every policy goes on as after
   * a restart, finding from the forge what is done.
   */
  async startDaemon(): Promise<void> {
    await this.startSchedules();
    // NX: a marker another replica wrote (perhaps with the time of a loss it noticed) stays as it is.
    await this.redis.set(this.keys.marker(), JSON.stringify({ since: new Date(this.clock.now()).toISOString() }), 'NX');
    this.describePolicies();
    await this.refreshPassGauges();
    await this.startFirstPasses(this.config.policies);
    this.readinessState = { ready: true };
    let sinceRepair = 0;
    this.watch = setInterval(() => {
      sinceRepair += REDIS_WATCH_MS;
      const repair = sinceRepair >= SCHEDULE_REPAIR_MS;
      if (repair) sinceRepair = 0;
      void this.checkRedisData(repair);
      void this.refreshPassGauges();
    }, REDIS_WATCH_MS);
    this.watch.unref();
  }

  /**
   * Takes a new policy file (SIGHUP), already validated: from now on passes, queued actions and schedules follow it.
   * Policies that are new or whose trigger changed pass at once, as at start. The connection settings (gitlab, redis,
   * http) are those the process started with; the caller says so when they changed.
   */
  async reload(config: AppConfig): Promise<void> {
    for (const policy of config.policies) this.registry.get(policy.type);
    const before = new Map(this.config.policies.map((policy) => [policy.name, this.triggerKey(policy)]));
    this.config = { ...config, gitlab: this.config.gitlab, redis: this.config.redis, http: this.config.http };
    this.discovery = this.discoveryFor(this.config);
    this.describePolicies();
    await this.startSchedules();
    await this.refreshPassGauges();
    await this.startFirstPasses(this.config.policies.filter((policy) => before.get(policy.name) !== this.triggerKey(policy)));
  }

  private triggerKey(policy: PolicyConfig): string {
    return JSON.stringify(this.registry.get(policy.type).trigger(policy));
  }

  /** The per-policy gauges: configured policies by mode, and how long each may go between passes. */
  private describePolicies(): void {
    const now = new Date(this.clock.now());
    const periods = new Map(
      this.config.policies.map((policy) => [policy.name, triggerPeriodMs(this.registry.get(policy.type).trigger(policy), now) / 1000]),
    );
    this.metrics.describePolicies(this.config, periods);
  }

  /**
   * A pass of each interval policy right away, not at the next multiple of its interval (a 1h policy would wait for
   * the top of the hour). Cron policies keep their schedule: a cleanup set for 03:00 does not run at a restart at
   * noon. A policy that passed less than one interval ago on any replica waits for its schedule, so a rolling restart
   * of several replicas does not make a pass each; the job id makes replicas starting together queue one.
   */
  private async startFirstPasses(policies: readonly PolicyConfig[]): Promise<void> {
    const now = this.clock.now();
    const last = await this.redis.hgetall(this.keys.lastSuccessfulPasses());
    const interrupted = await this.redis.hgetall(this.keys.passesRunning());
    for (const policy of policies) {
      const trigger = this.registry.get(policy.type).trigger(policy);
      if (!('every' in trigger)) {
        // A scheduled pass whose process died in it (a backup half downloaded) goes on now, not at the next run. If
        // it still runs on another replica, this pass finds the policy's lock taken and does nothing.
        const began = interrupted[policy.name];
        if (began !== undefined) await this.queue.enqueue(policyTickJob, { policy: policy.name }, { jobId: `resume:${policy.name}:${began}` });
        continue;
      }
      const lastOk = Number(last[policy.name] ?? Number.NaN) * 1000;
      if (Number.isFinite(lastOk) && now - lastOk < trigger.every) continue;
      const slot = Math.floor(now / Math.min(trigger.every, 60_000));
      await this.queue.enqueue(policyTickJob, { policy: policy.name }, { jobId: `start:${policy.name}:${slot}` });
    }
  }

  /**
   * Every replica reports the cluster-wide state of each configured policy as Redis holds it: its last successful pass
   * and its unsettled targets, whichever replica ran the pass. Alerts then see one truth, not each replica's last pass.
   */
  private async refreshPassGauges(): Promise<void> {
    try {
      const last = await this.redis.hgetall(this.keys.lastSuccessfulPasses());
      for (const policy of this.config.policies) {
        const seconds = Number(last[policy.name]);
        if (Number.isFinite(seconds) && seconds > 0) this.metrics.lastSuccessfulPass.set({ policy: policy.name }, seconds);
        const counts = await this.unsettled.counts(policy.name);
        this.metrics.unsettledTargets.set({ policy: policy.name }, counts.open);
        this.metrics.targetsRefused.set({ policy: policy.name }, counts.refused);
      }
      const configured = new Set(this.config.policies.map((policy) => policy.name));
      for (const [field, value] of Object.entries(await this.redis.hgetall(this.keys.lastBackups()))) {
        const [policy, group] = field.split('\t');
        const seconds = Number(value);
        if (group !== undefined && configured.has(policy) && Number.isFinite(seconds)) this.metrics.lastBackup.set({ policy, group }, seconds);
      }
    } catch {
      // Redis away: the gauge keeps its value and forgewarden_redis_up says why.
    }
  }

  /** Ready once the schedules are in place; not while Redis is found without the daemon's data. */
  readiness(): EngineReadiness {
    return this.readinessState;
  }

  /**
   * Checks the marker; when it is missing, makes the schedules again. With `repairSchedules`, puts back the next run of
   * any schedule that lost it. Redis not answering is left to its own check.
   */
  async checkRedisData(repairSchedules = false): Promise<void> {
    try {
      if (this.readinessState.ready) {
        if ((await this.redis.exists(this.keys.marker())) === 1) {
          if (repairSchedules) await this.startSchedules({ prune: false });
          return;
        }
        this.readinessState = { ready: false, reason: 'Redis lost its data; making the schedules again' };
        this.logger.warn("Redis has lost the daemon's data (restarted empty, failed over or flushed): making the schedules again; policies go on as after a restart");
        this.metrics.redisDataLost.inc();
        // The marker first, with the time of the loss: a pass that starts as soon as its schedule is back must know
        // that the records of the forge's limits went with the data. NX: another replica may have written it.
        const now = new Date(this.clock.now()).toISOString();
        await this.redis.set(this.keys.marker(), JSON.stringify({ since: now, data_lost_at: now }), 'NX');
      }
      await this.startSchedules();
      this.readinessState = { ready: true };
    } catch (error) {
      // Redis away again, or Bull refused: not ready, and the next check tries again.
      if (!this.readinessState.ready) this.readinessState = { ready: false, reason: `Redis lost its data and the schedules could not be made again yet: ${errorText(error)}` };
    }
  }

  /** When a running daemon last found Redis without its data, as the marker records it. */
  private async dataLostAt(): Promise<Date | undefined> {
    const marker = readJsonObject((await this.redis.get(this.keys.marker())) ?? undefined);
    const at = typeof marker?.data_lost_at === 'string' ? new Date(marker.data_lost_at) : undefined;
    return at && !Number.isNaN(at.getTime()) ? at : undefined;
  }

  /** The daemon's schedules: one per configured policy, and (unless `prune` is false) none for removed ones. */
  async startSchedules(options: { prune?: boolean } = {}): Promise<void> {
    await this.queue.syncSchedules(
      policyTickJob,
      this.config.policies.map((policy) => ({
        id: policy.name,
        payload: { policy: policy.name },
        repeat: this.registry.get(policy.type).trigger(policy),
      })),
      options,
    );
  }

  policyNames(): string[] {
    return this.config.policies.map((policy) => policy.name);
  }

  /**
   * One pass of one policy. `plan` observes and decides only; `act` also acts (or records, in dry run).
   * `progress` receives progress lines of long reads (the CLI shows them on a terminal).
   */
  async runPass(
    name: string,
    mode: 'plan' | 'act',
    delays: 'queue' | 'inline' = 'inline',
    progress: (message: string) => void = () => undefined,
    passLease?: Lease,
  ): Promise<PassResult> {
    const policy = this.policy(name);
    const runner = this.registry.get(policy.type);
    const dryRun = policy.dry_run ?? this.config.dry_run;
    const stopTimer = this.metrics.policyRunSeconds.startTimer({ policy: name });
    const base = { policy: name, type: policy.type, dryRun };
    let markedRunning = false;
    try {
      const unsettled = await this.unsettled.read(name);
      const lostAt = await this.dataLostAt();
      const pace = delays === 'queue' ? this.paceFor(policy) : undefined;
      const occasion = delays === 'queue' ? ('schedule' as const) : ('command' as const);
      const unobservedList = new UnobservedList();
      const context = {
        ...this.context(policy, mode),
        occasion,
        progress,
        unsettled,
        unobserved: unobservedList,
        ...(lostAt ? { redisDataLostAt: lostAt } : {}),
        ...(pace ? { pace } : {}),
      };
      if (mode === 'act' && delays === 'queue') {
        await this.redis.hset(this.keys.passesRunning(), name, new Date(this.clock.now()).toISOString());
        markedRunning = true;
      }
      let snapshot: unknown;
      let decisions: Decision[];
      try {
        snapshot = await withPurpose({ policy: name, phase: 'observe' }, () => runner.observe(policy, context));
        decisions = runner.decide(policy, snapshot, context.now);
      } catch (error) {
        // Observing or deciding failed as a whole: the pass is failed. Failed actions are counted per decision instead.
        this.metrics.passes.inc({ policy: name, result: 'failed' });
        throw error;
      }
      const unobserved = unobservedList.list();
      const seen = unobserved.length > 0 ? { unobserved } : {};
      const covered = runner.covered?.(policy, snapshot);
      const coveredGroups = runner.coveredGroups?.(policy, snapshot);
      if (mode === 'plan') {
        this.metrics.passes.inc({ policy: name, result: unobserved.length > 0 ? 'partial' : 'ok' });
        const parked = Object.fromEntries(unsettled.flatMap((target) => (target.refusal ? [[target.key, target.refusal] as const] : [])));
        return {
          ...base,
          decisions,
          records: [],
          ...seen,
          ...(Object.keys(parked).length > 0 ? { parked } : {}),
          ...(coveredGroups ? { coveredGroups } : {}),
          ...(covered ? { covered } : {}),
        };
      }
      await this.executor.reportUnobserved(name, unobserved, dryRun);
      const records = await this.executor.execute(policy, runner, decisions, context, { dryRun, delays, passLease });
      const partial = unobserved.length > 0 || records.some((record) => record.outcome === 'refused');
      this.metrics.passes.inc({ policy: name, result: partial ? 'partial' : 'ok' });
      const done = async () => {
        await this.recordSuccessfulPass(name);
        const left = unobserved.length > 0 ? `; ${unobserved.length} not read: ${unobserved.map((target) => target.target).join(', ')}` : '';
        this.logger.log(`${name}: pass done: looked at ${runner.summarize?.(policy, snapshot) ?? 'the forge'}; ${passTally(records)}${left}`);
      };
      // A dry run changes nothing an acting run depends on: no marks move, no target is dropped, nothing follows up.
      if (dryRun) {
        await done();
        return { ...base, decisions, records, ...seen };
      }
      await runner.commit?.(policy, snapshot, context, records);
      const open = await this.unsettled.replace(name, records, unsettled, context.now, { partial: unobserved.length > 0 });
      const nextPassAt = earliest(runner.nextPass?.(policy, snapshot, context.now), this.retryPass(policy, open.filter(wantsRetry).length, context.now));
      if (nextPassAt && delays === 'queue') await this.scheduleExtraPass(name, nextPassAt, context.now);
      await done();
      return { ...base, decisions, records, ...seen, ...(nextPassAt ? { nextPassAt } : {}) };
    } catch (error) {
      const message = errorText(error);
      // The stack is for a developer (LOG_LEVEL=debug); the operator gets the one line that says what failed.
      this.logger.error(`${name}: pass failed: ${message}`);
      this.logger.debug(`${name}: pass failed`, error instanceof Error ? error.stack : undefined);
      // Lost the lease: another replica holds the policy now, and its pass is the one that counts.
      const nextPassAt = mode === 'act' && delays === 'queue' && !(error instanceof LeaseLostError) ? await this.retryFailedPass(policy) : undefined;
      return { ...base, decisions: [], records: [], error: message, ...(nextPassAt ? { nextPassAt } : {}) };
    } finally {
      stopTimer();
      // Ended, well or not (a failed pass is tried again by retryFailedPass or its schedule): only a killed one leaves
      // its mark.
      if (markedRunning) await this.redis.hdel(this.keys.passesRunning(), name).catch(() => undefined);
    }
  }

  /**
   * The pace of a scheduled pass of an `every:` policy: its targets spread over part of the interval (see TargetPace).
   * A pass that cannot read them all within the interval at the budget's pace says so: ticks would be skipped.
   */
  private paceFor(policy: PolicyConfig): ((count: number) => TargetPace) | undefined {
    const trigger = this.registry.get(policy.type).trigger(policy);
    if (!('every' in trigger)) return undefined;
    const settings = { clock: this.clock, windowMs: trigger.every * SPREAD_FRACTION, requestsPerMinute: this.config.gitlab.max_requests_per_minute };
    return (count) => {
      const pace = evenPace(settings, count);
      if (pace.lastStartMs > trigger.every) {
        this.logger.warn(
          `${policy.name}: ${count} targets at most ${this.config.gitlab.max_requests_per_minute} requests a minute take longer than its interval; ` +
            'passes will be skipped: raise its interval or gitlab.max_requests_per_minute',
        );
      }
      return pace;
    };
  }

  /** Observing, deciding and acting went through (actions may have failed; those are counted per decision). */
  private async recordSuccessfulPass(name: string): Promise<void> {
    const seconds = this.clock.now() / 1000;
    await this.redis.hset(this.keys.lastSuccessfulPasses(), name, String(seconds));
    await this.redis.hdel(this.keys.passFailures(), name);
    this.metrics.lastSuccessfulPass.set({ policy: name }, seconds);
  }

  /** An extra pass for open targets when the policy's own schedule would leave them longer than UNSETTLED_RETRY_MS. */
  private retryPass(policy: PolicyConfig, open: number, now: Date): Date | undefined {
    if (open === 0) return undefined;
    const trigger = this.registry.get(policy.type).trigger(policy);
    if ('every' in trigger && trigger.every <= UNSETTLED_RETRY_MS) return undefined;
    // Rounded up to the minute, so replicas asking in the same minute queue one pass between them.
    return new Date(Math.ceil((now.getTime() + UNSETTLED_RETRY_MS) / 60_000) * 60_000);
  }

  /**
   * A scheduled pass that failed as a whole (the forge or Redis away while it observed) is tried again rather than left
   * to the next scheduled run: 5 minutes later, then 10, 20 and so on while it keeps failing, as long as that comes
   * before the next scheduled run. A nightly backup missed at 02:00 is taken at 02:05; a pass that cannot work (a
   * token without the role) is not run every 5 minutes all day. A success starts the count again.
   */
  private async retryFailedPass(policy: PolicyConfig): Promise<Date | undefined> {
    const now = new Date(this.clock.now());
    try {
      const failures = await this.redis.hincrby(this.keys.passFailures(), policy.name, 1);
      const trigger = this.registry.get(policy.type).trigger(policy);
      const nextRun = 'every' in trigger ? now.getTime() + trigger.every : nextRunAfter(trigger, now)?.getTime();
      const delay = UNSETTLED_RETRY_MS * 2 ** Math.min(failures - 1, 20);
      // Rounded up to the minute, so replicas failing in the same minute queue one pass between them.
      const at = new Date(Math.ceil((now.getTime() + delay) / 60_000) * 60_000);
      if (nextRun !== undefined && at.getTime() >= nextRun) return undefined;
      await this.scheduleExtraPass(policy.name, at, now);
      return at;
    } catch (error) {
      this.logger.warn(`${policy.name}: the failed pass could not be queued again (${errorText(error)}); it runs at its next scheduled time`);
      return undefined;
    }
  }

  /** One extra pass at `at`; the job id makes the request once, however many replicas make it. */
  private async scheduleExtraPass(name: string, at: Date, now: Date): Promise<void> {
    await this.queue.enqueue(policyTickJob, { policy: name }, { jobId: `extra:${name}:${at.getTime()}`, delayMs: Math.max(0, at.getTime() - now.getTime()) });
    this.logger.log(`${name}: next pass at ${at.toISOString()}`);
  }

  private async tick(name: string): Promise<void> {
    if (!this.config.policies.some((policy) => policy.name === name)) return; // removed since it was scheduled
    const lease = await Lease.acquire(this.redis, this.keys.passLock(name), PASS_LEASE_MS);
    if (!lease) {
      if (this.running.has(name)) this.logger.debug(`${name}: the previous pass is still running; skipping this tick`);
      else this.logger.log(`${name}: a pass of this policy is running on another replica; skipping this tick`);
      return;
    }
    this.running.add(name);
    try {
      await this.runPass(name, 'act', 'queue', undefined, lease);
    } finally {
      this.running.delete(name);
      await lease.release();
    }
  }

  private async performQueued({ policy: name, decision, attempts }: QueuedAction): Promise<void> {
    const policy = this.config.policies.find((candidate) => candidate.name === name);
    if (!policy) {
      this.logger.warn(`${name}: policy removed; dropping its queued ${decision.action} of ${decision.target}`);
      return;
    }
    const runner = this.registry.get(policy.type);
    const record = await this.executor.perform(policy, runner, decision, this.context(policy, 'act'), { attempts: attempts ?? 0 });
    // What became of it, for the next pass: a refusal parks the target, a failure keeps it open, a success settles it.
    await this.unsettled.merge(name, [record], new Date(this.clock.now()));
  }

  private policy(name: string): PolicyConfig {
    const policy = this.config.policies.find((candidate) => candidate.name === name);
    if (!policy) throw new Error(`no policy named "${name}"; configured: ${this.policyNames().join(', ') || 'none'}`);
    return policy;
  }

  /** Measures a policy reports: counted here, and kept in Redis where every replica reads them back. */
  private policyMetrics(policy: string): PolicyMetrics {
    return {
      backupWritten: async (group, bytes, finishedAt) => {
        this.metrics.backupBytes.inc({ policy, group }, bytes);
        const seconds = finishedAt.getTime() / 1000;
        this.metrics.lastBackup.set({ policy, group }, seconds);
        await this.redis.hset(this.keys.lastBackups(), `${policy}\t${group}`, String(seconds));
      },
    };
  }

  private context(policy: PolicyConfig, mode: 'plan' | 'act'): PolicyContext {
    return {
      client: this.client,
      state: new RedisPolicyState(this.redis, this.keys, policy.name),
      logger: new Logger(`policy:${policy.name}`),
      now: new Date(this.clock.now()),
      currentTime: () => new Date(this.clock.now()),
      mode,
      progress: () => undefined,
      unsettled: [],
      concurrency: this.config.gitlab.concurrency,
      discovery: this.discovery,
      policy,
      metrics: this.policyMetrics(policy.name),
    };
  }
}

function earliest(...dates: Array<Date | undefined>): Date | undefined {
  const times = dates.filter((date): date is Date => date !== undefined).map((date) => date.getTime());
  return times.length === 0 ? undefined : new Date(Math.min(...times));
}

/** `2 done, 1 failed, 5 skipped`, or `nothing to do`. */
function passTally(records: readonly ActionRecord[]): string {
  const counts = new Map<string, number>();
  for (const record of records) counts.set(record.outcome, (counts.get(record.outcome) ?? 0) + 1);
  if (counts.size === 0) return 'nothing to do';
  return [...counts].map(([outcome, n]) => `${n} ${outcome.replace('_', ' ')}`).join(', ');
}

/** A forge's refusal says which request it was (`GET projects/acme%2Fgone/jobs → 404: ...`): it names the target. */
function errorText(error: unknown): string {
  if (error instanceof ApiError) return error.summary;
  return error instanceof Error ? error.message : String(error);
}
