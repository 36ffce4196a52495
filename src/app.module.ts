import { Module, type DynamicModule, type Type } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { ConfigModule } from './config/config.module';
import { EngineModule } from './engine/engine.module';
import type { AppConfig } from './config/schema';
import type { Clock } from './engine/clock';
import { GitlabModule } from './gitlab/gitlab.module';
import { HttpModule } from './http/http.module';
import { MetricsModule } from './metrics/metrics.module';
import { AccessRequestsModule } from './policies/access-requests/access-requests.module';
import { JobRetryModule } from './policies/job-retry/job-retry.module';
import { KeyRotationModule } from './policies/key-rotation/key-rotation.module';
import { RegistryCleanupModule } from './policies/registry-cleanup/registry-cleanup.module';
import { QueueModule } from './queue/queue.module';
import { RedisModule } from './redis/redis.module';

@Module({})
export class AppModule {
  static forRoot(config: AppConfig, configFile: string, extraModules: readonly Type[] = [], clock?: Clock): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config, configFile, clock),
        ScheduleModule.forRoot(),
        MetricsModule,
        RedisModule,
        QueueModule,
        GitlabModule,
        EngineModule,
        HttpModule,
        // One line per policy type.
        JobRetryModule,
        RegistryCleanupModule,
        AccessRequestsModule,
        KeyRotationModule,
        // Modules a caller adds (tests bring policy types of their own).
        ...extraModules,
      ],
    };
  }
}
