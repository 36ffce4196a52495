import { Controller, Get, Header, HttpCode, Res } from '@nestjs/common';
import type { Response } from 'express';
import { EngineService } from '../engine/engine.service';
import { ForgeHealth } from '../forge/forge-health';
import { MetricsService } from '../metrics/metrics.service';
import { RedisHealth } from '../redis/redis.module';

@Controller()
export class HealthController {
  constructor(
    private readonly redis: RedisHealth,
    private readonly metrics: MetricsService,
    private readonly engine: EngineService,
    private readonly forge: ForgeHealth,
  ) {}

  /** Alive: the process answers. A load balancer or kubelet restarts it when this stops answering. */
  @Get('healthz')
  @HttpCode(200)
  alive(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /**
   * Ready: the configuration is loaded (it is, or the daemon would not run), Redis answers, the engine is set up in it
   * (not while it makes its schedules again after Redis lost its data), and the forge accepted the token at its last
   * check (every 30 s): a daemon that cannot reach the forge does no work, and says so. A reload the file's problems
   * refused leaves it ready (the previous policies serve), but the config check says so: the file on disk is not what
   * runs, and a restart would fail on it.
   */
  @Get('readyz')
  async ready(
    @Res({ passthrough: true }) response: Response,
  ): Promise<{ status: string; checks: Record<string, string> }> {
    const redis = await this.redis.answers();
    const engine = this.engine.readiness();
    const forge = this.forge.status();
    const config = this.engine.configStatus();
    const ready = redis && engine.ready && forge?.state === 'ok';
    response.status(ready ? 200 : 503);
    return {
      status: ready ? 'ok' : 'unavailable',
      checks: {
        config: config.ok ? 'ok' : (config.reason ?? 'reload failed'),
        redis: redis ? 'ok' : 'not answering',
        schedules: engine.ready ? 'ok' : (engine.reason ?? 'not ready'),
        forge: forge === undefined ? 'not checked yet' : forge.state === 'ok' ? 'ok' : forge.message,
      },
    };
  }

  @Get('metrics')
  @Header('Cache-Control', 'no-store')
  async metricsText(@Res({ passthrough: true }) response: Response): Promise<string> {
    response.type(this.metrics.contentType);
    return this.metrics.render();
  }
}
