import { Controller, Get, Header, HttpCode, Res } from '@nestjs/common';
import type { Response } from 'express';
import { MetricsService } from '../metrics/metrics.service';
import { RedisHealth } from '../redis/redis.module';

@Controller()
export class HealthController {
  constructor(
    private readonly redis: RedisHealth,
    private readonly metrics: MetricsService,
  ) {}

  /** Alive: the process answers. A load balancer or kubelet restarts it when this stops answering. */
  @Get('healthz')
  @HttpCode(200)
  alive(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** Ready: the configuration is loaded (it is, or the daemon would not run) and Redis answers. */
  @Get('readyz')
  async ready(@Res({ passthrough: true }) response: Response): Promise<{ status: string; checks: Record<string, string> }> {
    const redis = await this.redis.answers();
    response.status(redis ? 200 : 503);
    return { status: redis ? 'ok' : 'unavailable', checks: { config: 'ok', redis: redis ? 'ok' : 'not answering' } };
  }

  @Get('metrics')
  @Header('Cache-Control', 'no-store')
  async metricsText(@Res({ passthrough: true }) response: Response): Promise<string> {
    response.type(this.metrics.contentType);
    return this.metrics.render();
  }
}
