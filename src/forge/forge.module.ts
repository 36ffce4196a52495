import { Global, Injectable, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG } from '../config/config.module';
import type { AppConfig } from '../config/schema';
import { MetricsService } from '../metrics/metrics.service';
import { GitlabClient } from '../gitlab/client';
import { REDIS, type RedisConnection, RedisUsers } from '../redis/redis.module';
import { DaemonToken } from './daemon-token';
import { ForgeHealth } from './forge-health';
import { OwnTokenService } from './own-token.service';
import { redisKeyPrefix } from '../redis/connection';

@Injectable()
class GitlabClientLifecycle implements OnApplicationShutdown {
  constructor(private readonly client: GitlabClient) {}

  async onApplicationShutdown(): Promise<void> {
    await this.client.close();
  }
}

/**
 * The forge as the daemon sees it: the client for the whole daemon (one connection pool, and one request budget per
 * minute that every replica on the same Redis and prefix shares), and the check of whether the forge accepts the
 * token. The client itself (`src/gitlab/`) is plain classes; this is its Nest wiring.
 */
@Global()
@Module({
  providers: [
    {
      provide: GitlabClient,
      inject: [APP_CONFIG, REDIS, MetricsService, RedisUsers, DaemonToken],
      useFactory: (
        config: AppConfig,
        redis: RedisConnection,
        metrics: MetricsService,
        redisUsers: RedisUsers,
        token: DaemonToken,
      ) => {
        const client = new GitlabClient({
          url: config.gitlab.url,
          token,
          timeoutMs: config.gitlab.timeout,
          connectTimeoutMs: config.gitlab.connect_timeout,
          concurrency: config.gitlab.concurrency,
          maxRequestsPerMinute: config.gitlab.max_requests_per_minute,
          redis,
          redisPrefix: redisKeyPrefix(config.redis),
          warn: (message) => new Logger('GitlabClient').warn(message),
          onResponse: ({ method, route, status, durationMs }) => {
            metrics.apiRequests.inc({ method, status: String(status) });
            metrics.apiRequestDuration.observe({ method, route }, durationMs / 1000);
          },
        });
        // The shared request budget is kept in Redis: the connection must outlast the requests in flight.
        redisUsers.add(() => client.close());
        return client;
      },
    },
    // One per process: every client of the daemon authenticates with the same token, rotated or not.
    { provide: DaemonToken, inject: [APP_CONFIG], useFactory: (config: AppConfig) => DaemonToken.of(config.gitlab) },
    GitlabClientLifecycle,
    ForgeHealth,
    OwnTokenService,
  ],
  exports: [GitlabClient, ForgeHealth, DaemonToken, OwnTokenService],
})
export class ForgeModule {}
