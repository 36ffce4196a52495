import { BullModule } from '@nestjs/bull';
import { Global, Module } from '@nestjs/common';
import { APP_CONFIG } from '../config/config.module';
import type { AppConfig } from '../config/schema';
import { BullConnections, BullConnectionsModule } from '../redis/bull-connections';
import { redisKeyPrefix, redisTarget } from '../redis/connection';
import { QueueService, WORK_QUEUE } from './queue.service';

@Global()
@Module({
  imports: [
    BullConnectionsModule,
    BullModule.forRootAsync({
      imports: [BullConnectionsModule],
      inject: [APP_CONFIG, BullConnections],
      useFactory: (config: AppConfig, connections: BullConnections) => ({
        prefix: redisKeyPrefix(config.redis),
        createClient: (type) => connections.create(redisTarget(config.redis), type),
      }),
    }),
    BullModule.registerQueue({ name: WORK_QUEUE }),
  ],
  providers: [QueueService],
  exports: [QueueService],
})
export class QueueModule {}
