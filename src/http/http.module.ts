import { Module } from '@nestjs/common';
import { HealthController } from './health.controller';

/** Health, readiness and metrics on `http.host:http.port`; later also the forge's webhooks. */
@Module({ controllers: [HealthController] })
export class HttpModule {}
