import { Module } from '@nestjs/common';
import { HealthController } from './health.controller';
import { WebhookReceiver } from './webhook-receiver';

/** Health, readiness and metrics on `http.host:http.port`, and the forge's webhooks when enabled. */
@Module({ controllers: [HealthController], providers: [WebhookReceiver] })
export class HttpModule {}
