import { Global, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import type Redis from 'ioredis';
import { APP_CONFIG } from '../config/config.module';
import type { AppConfig } from '../config/schema';
import { MetricsService } from '../metrics/metrics.service';
import { REDIS } from '../redis/redis.module';
import { GitlabClient } from './client';

@Injectable()
class GitlabClientLifecycle implements OnApplicationShutdown {
  constructor(private readonly client: GitlabClient) {}

  async onApplicationShutdown(): Promise<void> {
    await this.client.close();
  }
}

/**
 * The forge's client for the whole daemon: one connection pool, and one request budget per minute that every
 * replica on the same Redis and prefix shares.
 */
@Global()
@Module({
  providers: [
    {
      provide: GitlabClient,
      inject: [APP_CONFIG, REDIS, MetricsService],
      useFactory: (config: AppConfig, redis: Redis, metrics: MetricsService) =>
        new GitlabClient({
          url: config.gitlab.url,
          token: config.gitlab.token,
          timeoutMs: config.gitlab.timeout,
          connectTimeoutMs: config.gitlab.connect_timeout,
          concurrency: config.gitlab.concurrency,
          maxRequestsPerMinute: config.gitlab.max_requests_per_minute,
          redis,
          redisPrefix: config.redis.prefix,
          onResponse: ({ method, route, status, durationMs }) => {
            metrics.apiRequests.inc({ method, status: String(status) });
            metrics.apiRequestDuration.observe({ method, route }, durationMs / 1000);
          },
        }),
    },
    GitlabClientLifecycle,
  ],
  exports: [GitlabClient],
})
export class GitlabModule {}
