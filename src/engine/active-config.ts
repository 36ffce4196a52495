import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '../config/config.module';
import type { PolicyConfig } from '../config/policy-type';
import type { AppConfig } from '../config/schema';
import type { PolicyType } from './policy';
import { KnownPolicies } from './known-policies';

/**
 * The policy file the engine runs now: the one the process started with, replaced as a whole by a reload (SIGHUP).
 * The connection settings in it (gitlab, redis, http) stay those the process started with.
 */
@Injectable()
export class ActiveConfig {
  private config: AppConfig;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly known: KnownPolicies,
  ) {
    this.config = config;
  }

  get current(): AppConfig {
    return this.config;
  }

  get policies(): readonly PolicyConfig[] {
    return this.config.policies;
  }

  names(): string[] {
    return this.config.policies.map((policy) => policy.name);
  }

  /** The configured policy of that name, or undefined (removed by a reload since it was scheduled). */
  find(name: string): PolicyConfig | undefined {
    return this.config.policies.find((policy) => policy.name === name);
  }

  /** The configured policy of that name; an unknown name is an error naming the configured ones. */
  policy(name: string): PolicyConfig {
    const policy = this.find(name);
    if (!policy) throw new Error(`no policy named "${name}"; configured: ${this.names().join(', ') || 'none'}`);
    return policy;
  }

  /** The type of a configured policy: its schema, trigger, observe, decide and actions. */
  typeOf(policy: PolicyConfig): PolicyType {
    return this.known.get(policy.type);
  }

  /** The file's `dry_run`, unless the policy says otherwise. */
  dryRun(policy: PolicyConfig): boolean {
    return policy.dry_run ?? this.config.dry_run;
  }

  /** Takes a new file, already validated; every policy type in it must be in the build. */
  replace(config: AppConfig): void {
    for (const policy of config.policies) this.known.get(policy.type);
    this.config = { ...config, gitlab: this.config.gitlab, redis: this.config.redis, http: this.config.http };
  }
}
