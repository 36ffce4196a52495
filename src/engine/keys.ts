import type { AppConfig } from '../config/schema';

/** Every Redis key of the engine, under the configured prefix so deployments can share a Redis. */
export class EngineKeys {
  constructor(private readonly prefix: string) {}

  static of(config: AppConfig): EngineKeys {
    return new EngineKeys(config.redis.prefix);
  }

  ledger(policy: string, key: string): string {
    return `${this.prefix}:ledger:${policy}:${key}`;
  }

  state(policy: string, key: string): string {
    return `${this.prefix}:state:${policy}:${key}`;
  }

  passLock(policy: string): string {
    return `${this.prefix}:lock:pass:${policy}`;
  }

  audit(): string {
    return `${this.prefix}:audit`;
  }
}
