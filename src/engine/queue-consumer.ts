import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { CLOCK, type Clock } from '../clock';
import { QueueService } from '../queue/queue.service';
import { ActiveConfig } from './active-config';
import { PolicyContexts } from './contexts';
import { forgeEventJob } from './events';
import { Executor, policyActionJob, type QueuedAction } from './executor';
import { PassCycle, policyTickJob } from './pass-cycle';
import { PassRunner } from './pass-runner';
import { UnsettledTargets } from './stores/unsettled';

/** Takes the queue's jobs, on whichever replica the queue hands them to: ticks, delayed actions, webhook events. */
@Injectable()
export class QueueConsumer implements OnModuleInit {
  private readonly logger = new Logger('Engine');

  constructor(
    private readonly active: ActiveConfig,
    private readonly cycle: PassCycle,
    private readonly runner: PassRunner,
    private readonly contexts: PolicyContexts,
    private readonly executor: Executor,
    private readonly unsettled: UnsettledTargets,
    private readonly queue: QueueService,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  onModuleInit(): void {
    this.queue.handle(policyTickJob, ({ policy }) => this.cycle.tick(policy));
    this.queue.handle(policyActionJob, (action) => this.performQueued(action));
    this.queue.handle(forgeEventJob, async (delivery) => {
      await this.runner.event(delivery.event);
    });
  }

  /** A delayed action whose wait ended; what became of it joins the policy's open targets (a refusal parks it). */
  private async performQueued({ policy: name, decision, attempts }: QueuedAction): Promise<void> {
    const policy = this.active.find(name);
    if (!policy) {
      this.logger.warn(`${name}: policy removed; dropping its queued ${decision.action} of ${decision.target}`);
      return;
    }
    const record = await this.executor.perform(
      policy,
      this.active.typeOf(policy),
      decision,
      this.contexts.for(policy, 'act', 'schedule'),
      { attempts: attempts ?? 0 },
    );
    await this.unsettled.merge(name, [record], new Date(this.clock.now()));
  }
}
