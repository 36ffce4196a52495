import { Module, type DynamicModule, type Type } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { ConfigModule } from './config/config.module';
import { EngineModule } from './engine/engine.module';
import type { AppConfig } from './config/schema';
import type { Clock } from './clock';
import { ForgeModule } from './forge/forge.module';
import { HttpModule } from './http/http.module';
import { ConsoleModule } from './console/console.module';
import { MetricsModule } from './metrics/metrics.module';
import { POLICIES } from './policies';
import { QueueModule } from './queue/queue.module';
import { RedisModule } from './redis/redis.module';

@Module({})
export class AppModule {
  static forRoot(
    config: AppConfig,
    configFile: string,
    extraModules: readonly Type[] = [],
    clock?: Clock,
  ): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config, configFile, clock),
        ScheduleModule.forRoot(),
        MetricsModule,
        RedisModule,
        QueueModule,
        ForgeModule,
        // The engine runs the build's policy types, handed to it here: it imports none of them itself.
        EngineModule.forRoot(POLICIES),
        HttpModule,
        ConsoleModule,
        // Modules a caller adds (tests bring policy types of their own).
        ...extraModules,
      ],
    };
  }
}
