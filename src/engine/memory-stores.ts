import type { DiscoveryCache } from './discovery';
import type { PolicyState } from './policy';

/**
 * The stores a policy's observe reads, kept in memory for a pass run outside the daemon (`forgewarden test`, a test of
 * one policy): one process and one pass, so a value's time to live and the replicas' acknowledgements never matter.
 * The daemon keeps them in Redis (stores/policy-state.ts, stores/discovery-cache.ts).
 */

/** A policy's own state (watermarks, caches), empty as in a Redis the policy never wrote to. */
export class MemoryPolicyState implements PolicyState {
  readonly values = new Map<string, string>();

  async get(key: string): Promise<string | undefined> {
    return this.values.get(key);
  }

  async getMany(keys: readonly string[]): Promise<Array<string | undefined>> {
    return keys.map((key) => this.values.get(key));
  }

  async set(key: string, value: string): Promise<void> {
    this.values.set(key, value);
  }

  async setGuard(key: string, value: string): Promise<void> {
    this.values.set(key, value);
  }

  async delete(key: string): Promise<void> {
    this.values.delete(key);
  }
}

/** What discovery found; the one process listing is always the one that claims a listing. */
export class MemoryDiscoveryCache implements DiscoveryCache {
  private readonly values = new Map<string, string>();

  async get(key: string): Promise<string | undefined> {
    return this.values.get(key);
  }

  async set(key: string, value: string): Promise<void> {
    this.values.set(key, value);
  }

  async claim(): Promise<() => Promise<void>> {
    return async () => undefined;
  }
}
