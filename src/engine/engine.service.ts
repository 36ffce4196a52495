import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';
import { APP_CONFIG } from '../config/config.module';
import type { PolicyConfig } from '../config/policy-type';
import type { AppConfig } from '../config/schema';
import { GitlabClient } from '../gitlab/client';
import { MetricsService } from '../metrics/metrics.service';
import { defineJob } from '../queue/jobs';
import { QueueService } from '../queue/queue.service';
import { REDIS } from '../redis/redis.module';
import { Executor, policyActionJob, type ActionRecord, type QueuedAction } from './executor';
import { CLOCK, type Clock } from './clock';
import { EngineKeys } from './keys';
import type { Decision, PolicyContext } from './policy';
import { PolicyRegistry } from './policy-registry';
import { RedisPolicyState } from './policy-state';

export const policyTickJob = defineJob<{ policy: string }>('policy.tick');

/** What one pass of one policy decided and, when acting, what came of each decision. */
export interface PassResult {
  readonly policy: string;
  readonly type: string;
  readonly dryRun: boolean;
  readonly decisions: readonly Decision[];
  /** Empty in `plan`. */
  readonly records: readonly ActionRecord[];
  /** Set when the pass itself failed (the forge unreachable, a bad answer); the daemon goes on. */
  readonly error?: string;
  /** When the policy asked for an extra pass (a follow-up after the forge's hourly limit). */
  readonly nextPassAt?: Date;
}

/** A pass may not run longer than this before another replica may start one (its lock expires). */
const PASS_LOCK_MS = 15 * 60_000;

/**
 * Runs policies: trigger → observe → decide → act. Ticks come from Bull repeatable jobs, so each fires once
 * cluster-wide; a per-policy lock in Redis keeps two passes of one policy from overlapping when one runs long.
 */
@Injectable()
export class EngineService implements OnModuleInit, OnApplicationBootstrap {
  private readonly logger = new Logger('Engine');
  private readonly keys: EngineKeys;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(REDIS) private readonly redis: Redis,
    private readonly registry: PolicyRegistry,
    private readonly executor: Executor,
    private readonly queue: QueueService,
    private readonly client: GitlabClient,
    private readonly metrics: MetricsService,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {
    this.keys = EngineKeys.of(config);
  }

  onModuleInit(): void {
    this.queue.handle(policyTickJob, ({ policy }) => this.tick(policy));
    this.queue.handle(policyActionJob, (action) => this.performQueued(action));
  }

  /** Fails the start when a configured policy's type has no runner: better loud at boot than silent later. */
  onApplicationBootstrap(): void {
    for (const policy of this.config.policies) this.registry.get(policy.type);
  }

  /** The daemon's schedules: one per configured policy, none for removed ones. */
  async startSchedules(): Promise<void> {
    await this.queue.syncSchedules(
      policyTickJob,
      this.config.policies.map((policy) => ({
        id: policy.name,
        payload: { policy: policy.name },
        repeat: this.registry.get(policy.type).trigger(policy),
      })),
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
  ): Promise<PassResult> {
    const policy = this.policy(name);
    const runner = this.registry.get(policy.type);
    const dryRun = policy.dry_run ?? this.config.dry_run;
    const context = { ...this.context(policy, mode), progress };
    const stopTimer = this.metrics.policyRunSeconds.startTimer({ policy: name });
    const base = { policy: name, type: policy.type, dryRun };
    try {
      const snapshot = await runner.observe(policy, context);
      const decisions = runner.decide(policy, snapshot, context.now);
      if (mode === 'plan') return { ...base, decisions, records: [] };
      const records = await this.executor.execute(policy, runner, decisions, context, { dryRun, delays });
      await runner.commit?.(policy, snapshot, context);
      // A dry run changes nothing on the forge, so nothing waits for a follow-up.
      const nextPassAt = dryRun ? undefined : runner.nextPass?.(policy, snapshot, context.now);
      if (nextPassAt && delays === 'queue') await this.scheduleExtraPass(name, nextPassAt, context.now);
      return { ...base, decisions, records, ...(nextPassAt ? { nextPassAt } : {}) };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.logger.error(`${name}: pass failed: ${message}`, error instanceof Error ? error.stack : undefined);
      return { ...base, decisions: [], records: [], error: message };
    } finally {
      stopTimer();
    }
  }

  /** One extra pass at `at`; the job id makes the request once, however many replicas make it. */
  private async scheduleExtraPass(name: string, at: Date, now: Date): Promise<void> {
    await this.queue.enqueue(policyTickJob, { policy: name }, { jobId: `extra:${name}:${at.getTime()}`, delayMs: Math.max(0, at.getTime() - now.getTime()) });
    this.logger.log(`${name}: next pass at ${at.toISOString()}`);
  }

  private async tick(name: string): Promise<void> {
    if (!this.config.policies.some((policy) => policy.name === name)) return; // removed since it was scheduled
    const lock = this.keys.passLock(name);
    const token = randomUUID();
    if ((await this.redis.set(lock, token, 'PX', PASS_LOCK_MS, 'NX')) !== 'OK') {
      this.logger.warn(`${name}: previous pass still running; skipping this tick`);
      return;
    }
    try {
      await this.runPass(name, 'act', 'queue');
    } finally {
      // Only the holder releases: a pass that outlived its lock must not free a newer pass's lock.
      await this.redis.eval("if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0", 1, lock, token);
    }
  }

  private async performQueued({ policy: name, decision }: QueuedAction): Promise<void> {
    const policy = this.config.policies.find((candidate) => candidate.name === name);
    if (!policy) {
      this.logger.warn(`${name}: policy removed; dropping its queued ${decision.action} of ${decision.target}`);
      return;
    }
    const runner = this.registry.get(policy.type);
    await this.executor.perform(policy, runner, decision, this.context(policy, 'act'), { recheck: true });
  }

  private policy(name: string): PolicyConfig {
    const policy = this.config.policies.find((candidate) => candidate.name === name);
    if (!policy) throw new Error(`no policy named "${name}"; configured: ${this.policyNames().join(', ') || 'none'}`);
    return policy;
  }

  private context(policy: PolicyConfig, mode: 'plan' | 'act'): PolicyContext {
    return {
      client: this.client,
      state: new RedisPolicyState(this.redis, this.keys, policy.name),
      logger: new Logger(`policy:${policy.name}`),
      now: this.clock.now(),
      mode,
      progress: () => undefined,
    };
  }
}
