import {
  Global,
  Inject,
  Injectable,
  Logger,
  Module,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { APP_CONFIG } from '../config/config.module';
import type { AppConfig } from '../config/schema';
import { MetricsService } from '../metrics/metrics.service';
import {
  closingOnPurpose,
  isReadOnlyError,
  keepConnected,
  longLivedOptions,
  openRedis,
  redisKeyPrefix,
  type RedisClient,
  redisTarget,
} from './connection';
import { evictionPolicy, evictionRisk, SAFE_EVICTION_POLICY } from './eviction';
import { REDIS } from './redis-token';
import { ReplicaAcks } from './replication';
import { infoField, serverOf } from './topology';

export { REDIS, type RedisConnection } from './redis-token';

/** Tells whether Redis answers now; `/readyz` asks it. */
@Injectable()
export class RedisHealth {
  constructor(@Inject(REDIS) private readonly redis: RedisClient) {}

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
 * polling /readyz; says once, and again after each change, when Redis may evict the daemon's records. Behind
 * sentinels or in a Cluster it also notices when the primary holding the daemon's keys became another server (by its
 * run id), each time the connection is ready again and at every check, and counts it.
 */
@Injectable()
class RedisMonitor implements OnApplicationBootstrap {
  private readonly logger = new Logger('Redis');
  /** Set when the connection is about to close: the timer may outlive it by a tick (Nest clears it in its own hook). */
  private stopped = false;
  private lastEvictionPolicy: string | undefined;
  private primaryRunId: string | undefined;
  private readonly keyOfRecords: string;
  private readonly followsFailovers: boolean;

  constructor(
    private readonly health: RedisHealth,
    private readonly metrics: MetricsService,
    @Inject(REDIS) private readonly redis: RedisClient,
    @Inject(APP_CONFIG) config: AppConfig,
    users: RedisUsers,
  ) {
    this.keyOfRecords = `${redisKeyPrefix(config.redis)}:marker`;
    // One server restarted is the same server, not a failover; its lost data is the engine's to notice.
    this.followsFailovers = config.redis.sentinels !== undefined || config.redis.cluster !== undefined;
    users.add(async () => {
      this.stopped = true;
    });
    if (this.followsFailovers) {
      redis.on('ready', () => void this.checkPrimary());
      redis.on('+node', () => void this.checkPrimary());
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.check();
  }

  @Interval(10_000)
  async check(): Promise<void> {
    if (this.stopped) return;
    const up = await this.health.answers();
    this.metrics.redisUp.set(up ? 1 : 0);
    if (!up) return;
    await this.checkPrimary();
    await this.checkEviction();
  }

  /** Counts a failover when the primary that holds the daemon's keys answers with another run id than before. */
  private async checkPrimary(): Promise<void> {
    if (!this.followsFailovers || this.stopped) return;
    let runId: string | undefined;
    try {
      runId = await infoField(await serverOf(this.redis, this.keyOfRecords), 'server', 'run_id');
    } catch {
      return; // between two primaries: the next ready event or check tells
    }
    if (runId === undefined || runId === this.primaryRunId || this.stopped) return;
    if (this.primaryRunId !== undefined) {
      this.metrics.redisFailovers.inc();
      this.logger.warn('Redis primary changed (failover); working on with the new one');
    }
    this.primaryRunId = runId;
  }

  private async checkEviction(): Promise<void> {
    let policy: string | undefined;
    try {
      policy = await evictionPolicy(await serverOf(this.redis, this.keyOfRecords));
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
    @Inject(REDIS) private readonly redis: RedisClient,
    private readonly users: RedisUsers,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.users.drain();
    closingOnPurpose(this.redis);
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
        const redis = openRedis(redisTarget(config.redis), longLivedOptions('forgewarden'));
        keepConnected(redis);
        // ioredis reports every failed reconnect attempt; an operator needs the transitions, not each attempt.
        let lost = false;
        redis.on('error', (error: Error) => {
          // A write that met a demoted primary: the connection reconnects and sends it again (reconnectOnError).
          if (isReadOnlyError(error) || lost) return;
          lost = true;
          logger.warn(
            `connection to Redis lost (${(error as NodeJS.ErrnoException).code ?? error.message}); reconnecting`,
          );
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
    ReplicaAcks,
  ],
  exports: [REDIS, RedisHealth, RedisUsers, ReplicaAcks],
})
export class RedisModule {}
