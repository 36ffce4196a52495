import type { DiscoveryCache } from '../discovery';
import type { PolicyState } from '../policy';

/**
 * A policy's state for a pass that changes nothing (`plan`, the console's "what it would decide now"): it reads what
 * Redis holds, and what it writes (a cache it fills, a watermark) stays in memory for the pass, read before Redis, so
 * the pass sees its own writes and Redis stays as it was.
 */
export class LookOnlyState implements PolicyState {
  /** undefined: deleted in this pass. */
  private readonly written = new Map<string, string | undefined>();

  constructor(private readonly stored: PolicyState) {}

  async get(key: string): Promise<string | undefined> {
    return this.written.has(key) ? this.written.get(key) : this.stored.get(key);
  }

  async getMany(keys: readonly string[]): Promise<Array<string | undefined>> {
    const stored = await this.stored.getMany(keys);
    return keys.map((key, index) => (this.written.has(key) ? this.written.get(key) : stored[index]));
  }

  async set(key: string, value: string): Promise<void> {
    this.written.set(key, value);
  }

  async setGuard(key: string, value: string): Promise<void> {
    this.written.set(key, value);
  }

  async delete(key: string): Promise<void> {
    this.written.set(key, undefined);
  }
}

/**
 * Discovery for passes that change nothing: listings cached in Redis are used, and what such a pass lists is kept in
 * this process for its look-only passes only (each listing carries its time, so discovery itself tells when it is
 * stale). It claims nothing: a replica that lists for itself holds up no one.
 */
export class LookOnlyDiscoveryCache implements DiscoveryCache {
  private readonly listed = new Map<string, string>();

  constructor(private readonly shared: DiscoveryCache) {}

  async get(key: string): Promise<string | undefined> {
    return this.listed.get(key) ?? this.shared.get(key);
  }

  async set(key: string, value: string): Promise<void> {
    this.listed.set(key, value);
  }

  async claim(): Promise<() => Promise<void>> {
    return async () => undefined;
  }
}
