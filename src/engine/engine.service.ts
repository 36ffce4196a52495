import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import type { AppConfig } from '../config/schema';
import type { ProjectRef } from '../config/validators';
import { ActiveConfig } from './active-config';
import { PolicyContexts } from './contexts';
import type { ForgeEvent } from './events';
import { PassRunner, type PassResult } from './pass-runner';
import { DaemonSchedules, type ConfigStatus, type EngineReadiness } from './daemon';
import { PassCycle } from './pass-cycle';
import type { Lease } from './stores/lease';
import { RecordsOwner, type RecordsSettled } from './records-owner';
import type { ForgeFingerprint } from './stores/recorded-forge';

export type { PassResult } from './pass-runner';
export type { ConfigStatus, EngineReadiness } from './daemon';
export type { RecordsSettled } from './records-owner';
export type { ForgeFingerprint } from './stores/recorded-forge';
export { policyTickJob } from './pass-cycle';

/**
 * The engine as the commands and the HTTP server use it: one pass of a policy (`plan`, `once`), the daemon's start
 * and reload, its readiness, a webhook's event, and where `hooks install` puts the webhook. The rooms behind it are the
 * PassCycle (a pass, what follows it, its log), the PassRunner (observe → decide → act), DaemonSchedules (when passes
 * run), the QueueConsumer (the queue's jobs) and the stores
 * (src/engine/stores/).
 */
@Injectable()
export class EngineService implements OnApplicationBootstrap {
  constructor(
    private readonly active: ActiveConfig,
    private readonly runner: PassRunner,
    private readonly cycle: PassCycle,
    private readonly schedules: DaemonSchedules,
    private readonly contexts: PolicyContexts,
    private readonly records: RecordsOwner,
  ) {}

  /** Fails the start when a configured policy's type is not in the build: better loud at boot than silent later. */
  onApplicationBootstrap(): void {
    for (const policy of this.active.policies) this.active.typeOf(policy);
  }

  /**
   * Before anything reads the records: whether they were made against this forge, dropped when they were made against
   * another (see RecordsOwner). Every command that meets the forge calls it once the token is accepted.
   */
  settleRecords(forge: ForgeFingerprint, options: { claim?: boolean } = {}): Promise<RecordsSettled> {
    return this.records.settle(forge, options);
  }

  policyNames(): string[] {
    return this.active.names();
  }

  /**
   * One pass of one policy. `plan` observes and decides only; `act` also acts (or records, in dry run). `queue` runs
   * it as the daemon's schedule does (delayed actions wait in the queue, the next pass is queued when one is due);
   * `inline` as a command does (delays are waited out here). `progress` receives progress lines of long reads; no
   * action starts once `lease` is lost.
   */
  runPass(
    name: string,
    mode: 'plan' | 'act',
    delays: 'queue' | 'inline' = 'inline',
    progress?: (message: string) => void,
    lease?: Lease,
  ): Promise<PassResult> {
    return this.cycle.run(name, { mode, delays, ...(progress ? { progress } : {}), ...(lease ? { lease } : {}) });
  }

  /** A webhook's event, for every policy that covers it (see PassRunner.event). */
  handleEvent(event: ForgeEvent): Promise<PassResult[]> {
    return this.runner.event(event);
  }

  /**
   * Every project some policy takes webhook events for, each once (by id or path, ignoring case), with the policies
   * that cover it, in the order found: where `hooks install` puts the daemon's webhook.
   */
  async webhookProjects(): Promise<Array<{ project: ProjectRef; policies: string[] }>> {
    const found = new Map<string, { project: ProjectRef; policies: string[] }>();
    for (const policy of this.active.policies) {
      const events = this.active.typeOf(policy).events;
      if (!events) continue;
      for (const project of await events.projects(policy, this.contexts.for(policy, 'plan', 'command'))) {
        const key = String(project).toLowerCase();
        const known = found.get(key);
        if (known) known.policies.push(policy.name);
        else found.set(key, { project, policies: [policy.name] });
      }
    }
    return [...found.values()];
  }

  startDaemon(): Promise<void> {
    return this.schedules.start();
  }

  reload(config: AppConfig): Promise<void> {
    return this.schedules.reload(config);
  }

  reloadRejected(file: string, problems: number): void {
    this.schedules.reloadRejected(file, problems);
  }

  readiness(): EngineReadiness {
    return this.schedules.readiness();
  }

  configStatus(): ConfigStatus {
    return this.schedules.configStatus();
  }

  checkRedisData(repairSchedules = false): Promise<void> {
    return this.schedules.checkRedisData(repairSchedules);
  }

  startSchedules(options: { prune?: boolean } = {}): Promise<void> {
    return this.schedules.syncSchedules(options);
  }
}
