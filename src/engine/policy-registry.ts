import { Injectable } from '@nestjs/common';
import type { PolicyConfig } from '../config/policy-type';
import type { PolicyRunner } from './policy';

/** The policy types this process can run; each policy module registers its runner when the app starts. */
@Injectable()
export class PolicyRegistry {
  private readonly runners = new Map<string, PolicyRunner>();

  register<Config extends PolicyConfig, Snapshot>(runner: PolicyRunner<Config, Snapshot>): void {
    if (this.runners.has(runner.type)) throw new Error(`policy type "${runner.type}" is registered twice`);
    this.runners.set(runner.type, runner);
  }

  get(type: string): PolicyRunner {
    const runner = this.runners.get(type);
    if (!runner) throw new Error(`no runner for policy type "${type}"; is its module in app.module.ts?`);
    return runner;
  }
}
