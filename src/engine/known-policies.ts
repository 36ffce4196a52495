import { Inject, Injectable, Optional } from '@nestjs/common';
import type { PolicyConfig } from '../config/policy-type';
import type { PolicyRunner } from './policy';

/** The runners the application is built with: the build's policy list (`policies/index.ts`), given by the app module. */
export const POLICY_RUNNERS = Symbol('PolicyRunners');

/**
 * The policy types this process can run: the application's list, plus any a test registers. The engine knows no
 * policy by name; it is handed them.
 */
@Injectable()
export class KnownPolicies {
  private readonly runners = new Map<string, PolicyRunner>();

  constructor(@Optional() @Inject(POLICY_RUNNERS) runners: readonly PolicyRunner[] | null) {
    for (const runner of runners ?? []) this.register(runner);
  }

  register<Config extends PolicyConfig, Snapshot>(runner: PolicyRunner<Config, Snapshot>): void {
    const { type } = runner.definition;
    if (this.runners.has(type)) throw new Error(`policy type "${type}" is registered twice`);
    this.runners.set(type, runner);
  }

  get(type: string): PolicyRunner {
    const runner = this.runners.get(type);
    if (!runner) throw new Error(`no runner for policy type "${type}"; is it in the list of policies/index.ts?`);
    return runner;
  }
}
