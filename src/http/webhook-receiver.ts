import { createHash, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Request, Response } from 'express';
import { CLOCK, type Clock } from '../clock';
import { APP_CONFIG } from '../config/config.module';
import type { AppConfig } from '../config/schema';
import { EVENT_LABELS, forgeEventJob, readForgeEvent } from '../engine/events';
import { WebhookDeliveries } from '../engine/stores/webhook-deliveries';
import { MetricsService } from '../metrics/metrics.service';
import { QueueService } from '../queue/queue.service';
import { readBody } from './read-body';

/** The largest delivery taken. A pipeline event lists every job of the pipeline; a few hundred fit in well under this. */
export const WEBHOOK_BODY_LIMIT = 1024 * 1024;

/**
 * The forge's webhooks (docs/webhooks.md): `POST webhooks.path` on the HTTP server. It answers within
 * milliseconds, since the forge gives up on slow receivers and disables hooks that keep failing, and leaves the work
 * to the queue: it checks the secret token (401 and nothing else), the type and size of the body, remembers the
 * delivery for a day in Redis (so a repeat, on any replica, is answered and counted but not queued again), and queues
 * the event for the engine. When Redis cannot take it, it answers 503, and the forge delivers it again.
 */
@Injectable()
export class WebhookReceiver implements OnModuleInit {
  private readonly logger = new Logger('webhooks');
  private readonly secret: Buffer | undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly deliveries: WebhookDeliveries,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly adapterHost: HttpAdapterHost,
    private readonly queue: QueueService,
    private readonly metrics: MetricsService,
  ) {
    const token = config.webhooks.secret_token;
    this.secret = token === undefined ? undefined : digest(token);
  }

  /** Registered before Nest adds its not-found handler (its router hooks come after the init hooks). */
  onModuleInit(): void {
    const adapter = this.adapterHost.httpAdapter as
      { post?(path: string, handler: (request: Request, response: Response) => void): void } | undefined;
    if (!this.config.webhooks.enabled || !adapter?.post) return;
    adapter.post(this.config.webhooks.path, (request: Request, response: Response) => {
      void this.receive(request, response).catch((error: unknown) => {
        this.logger.error(`webhook delivery failed: ${error instanceof Error ? error.message : String(error)}`);
        if (!response.headersSent) response.status(500).json({ message: 'internal error' });
      });
    });
  }

  private async receive(request: Request, response: Response): Promise<void> {
    const label = EVENT_LABELS[request.header('x-gitlab-event') ?? ''] ?? 'other';
    const answer = (status: number, result: string, body: Record<string, string>) => {
      this.metrics.webhookDeliveries.inc({ event: label, result });
      response.status(status).json(body);
    };
    if (!this.tokenMatches(request.header('x-gitlab-token')))
      return answer(401, 'unauthorized', { message: '401 Unauthorized' });
    if (!/^application\/json\s*(;|$)/i.test(request.header('content-type') ?? '')) {
      return answer(415, 'rejected', { message: 'expected Content-Type: application/json' });
    }
    const raw = await readBody(request, WEBHOOK_BODY_LIMIT);
    if (raw === undefined)
      return answer(413, 'rejected', { message: `the body is larger than ${WEBHOOK_BODY_LIMIT} bytes` });
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return answer(400, 'rejected', { message: 'the body is no valid JSON' });
    }
    const read = readForgeEvent(body);
    if ('ignored' in read) return answer(200, 'ignored', { status: 'ignored', reason: read.ignored });

    // Newer forges send an Idempotency-Key that stays the same when a delivery is sent again; older ones the event's UUID.
    const identity =
      request.header('idempotency-key') ||
      request.header('x-gitlab-event-uuid') ||
      createHash('sha256').update(raw).digest('hex');
    const id = createHash('sha256').update(identity).digest('hex');
    try {
      if (!(await this.deliveries.first(id, this.clock.now())))
        return answer(200, 'duplicate', { status: 'duplicate' });
      try {
        await this.queue.enqueue(
          forgeEventJob,
          { event: read.event, receivedAt: this.clock.now() },
          { jobId: `webhook:${id}`, attempts: 3 },
        );
      } catch (error) {
        // Not queued, so not seen either: the forge's next attempt must get through.
        await this.deliveries.forget(id).catch(() => undefined);
        throw error;
      }
    } catch (error) {
      this.logger.warn(
        `webhook delivery not queued (the forge will send it again): ${error instanceof Error ? error.message : String(error)}`,
      );
      return answer(503, 'unavailable', { message: 'cannot queue the delivery now; send it again' });
    }
    return answer(200, 'accepted', { status: 'accepted' });
  }

  /** Compared in constant time, on digests so that the length of the secret does not show either. */
  private tokenMatches(token: string | undefined): boolean {
    if (this.secret === undefined || token === undefined) return false;
    return timingSafeEqual(digest(token), this.secret);
  }
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
