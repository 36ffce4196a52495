import { Global, Inject, Injectable, Logger, Module, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import Redis from 'ioredis';
import { APP_CONFIG } from '../config/config.module';
import { MetricsService } from '../metrics/metrics.service';
import type { AppConfig } from '../config/schema';
import { longLivedOptions, redisTarget } from './connection';
import { evictionPolicy, evictionRisk, SAFE_EVICTION_POLICY } from './eviction';

/** The daemon's shared Redis connection (ledgers, locks, audit trail, rate-limit budget). */
export const REDIS = Symbol('Redis');

/**
 * The connection's type, for code that only hands it on (the forge client's shared budget): only src/redis/ and the
 * engine's stores import ioredis (a lint rule says so).
 */
export type RedisConnection = Redis;

/** Tells whether Redis answers now; `/readyz` asks it. */
@Injectable()
export class RedisHealth {
  constructor(@Inject(REDIS) private readonly redis: Redis) {}

  async answers(timeoutMs = 1_000): Promise<boolean> {
    // A connection still (re)connecting queues the PING; the timeout decides, not the momentary status.
    if (this.redis.status === 'end') return false;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    const ping = this.redis.ping().then(
      (answer) => answer === 'PONG',
      () => false,
    );
    try {
      return await Promise.race([ping, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * What must be done with the shared connection before it closes: the forge client's budget calls go through it, and a
 * command sent after QUIT fails ("Connection is closed"). Nest orders shutdown hooks by module, not by use, so the
 * order is kept here: the connection closes after every user has drained.
 */
@Injectable()
export class RedisUsers {
  private readonly drains: Array<() => Promise<void>> = [];

  /** `drain` stops the user's new work and resolves once its Redis calls have ended; it may be called twice. */
  add(drain: () => Promise<void>): void {
    this.drains.push(drain);
  }

  async drain(): Promise<void> {
    await Promise.all(this.drains.map((drain) => drain()));
  }
}

/**
 * Keeps `forgewarden_redis_up` and `forgewarden_redis_noeviction` current, so an alert does not depend on someone
 * polling /readyz; says once, and again after each change, when Redis may evict the daemon's records.
 */
@Injectable()
class RedisMonitor implements OnApplicationBootstrap {
  private readonly logger = new Logger('Redis');
  /** Set when the connection is about to close: the timer may outlive it by a tick (Nest clears it in its own hook). */
  private stopped = false;
  private lastEvictionPolicy: string | undefined;

  constructor(
    private readonly health: RedisHealth,
    private readonly metrics: MetricsService,
    @Inject(REDIS) private readonly redis: Redis,
    users: RedisUsers,
  ) {
    users.add(async () => {
      this.stopped = true;
    });
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.check();
  }

  @Interval(10_000)
  async check(): Promise<void> {
    if (this.stopped) return;
    const up = await this.health.answers();
    this.metrics.redisUp.set(up ? 1 : 0);
    if (up) await this.checkEviction();
  }

  private async checkEviction(): Promise<void> {
    let policy: string | undefined;
    try {
      policy = await evictionPolicy(this.redis);
    } catch {
      return; // INFO denied, or Redis gone since the PING: nothing known, nothing said
    }
    if (policy === undefined || this.stopped) return;
    this.metrics.redisNoEviction.set(policy === SAFE_EVICTION_POLICY ? 1 : 0);
    if (policy === this.lastEvictionPolicy) return;
    this.lastEvictionPolicy = policy;
    const risk = evictionRisk(policy);
    if (risk) this.logger.warn(risk);
  }
}

@Injectable()
class RedisConnectionLifecycle implements OnApplicationShutdown {
  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly users: RedisUsers,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.users.drain();
    if (this.redis.status === 'end') return;
    // Closing is not losing the connection: what the socket reports from now on is not news.
    this.redis.removeAllListeners('error');
    this.redis.on('error', () => undefined);
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

@Global()
@Module({
  providers: [
    {
      provide: REDIS,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => {
        const logger = new Logger('Redis');
        const target = redisTarget(config.redis);
        const redis = new Redis(target.url, { ...target.options, ...longLivedOptions('forgewarden') });
        // ioredis reports every failed reconnect attempt; an operator needs the transitions, not each attempt.
        let lost = false;
        redis.on('error', (error: Error) => {
          if (lost) return;
          lost = true;
          logger.warn(`connection to Redis lost (${(error as NodeJS.ErrnoException).code ?? error.message}); reconnecting`);
        });
        redis.on('ready', () => {
          if (!lost) return;
          lost = false;
          logger.log('connection to Redis restored');
        });
        return redis;
      },
    },
    RedisHealth,
    RedisMonitor,
    RedisUsers,
    RedisConnectionLifecycle,
  ],
  exports: [REDIS, RedisHealth, RedisUsers],
})
export class RedisModule {}
