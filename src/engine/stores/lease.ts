import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { RedisConnection } from '../../redis/redis.module';

/**
 * A lease in Redis: a key that exists while its holder renews it, and expires on its own within `ttlMs` of the
 * holder's death. Renewal runs in the background every third of the lease. A holder that cannot prove it still
 * holds the lease (another owner took it, or Redis did not answer a renewal before the lease would have run out)
 * counts it as lost at once, so it stops acting before anyone else can take over. Its own timing is monotonic: a
 * wall clock that jumps must not make a lease look lost or held.
 */
export class Lease {
  private timer: NodeJS.Timeout | undefined;
  private renewedAt: number;
  private lostBecause: string | undefined;

  private constructor(
    private readonly redis: RedisConnection,
    readonly key: string,
    readonly token: string,
    private readonly ttlMs: number,
  ) {
    this.renewedAt = performance.now();
    this.timer = setInterval(() => void this.renew(), Math.max(50, Math.floor(ttlMs / 3)));
    // A lease never keeps the process alive on its own.
    this.timer.unref();
  }

  /** Takes the lease when nobody holds it; undefined when someone does. */
  static async acquire(redis: RedisConnection, key: string, ttlMs: number): Promise<Lease | undefined> {
    const token = randomUUID();
    if ((await redis.set(key, token, 'PX', ttlMs, 'NX')) !== 'OK') return undefined;
    return new Lease(redis, key, token, ttlMs);
  }

  /** Starts renewing a lease whose key the caller has already written with `token` (in a script of its own). */
  static adopt(redis: RedisConnection, key: string, token: string, ttlMs: number): Lease {
    return new Lease(redis, key, token, ttlMs);
  }

  /** Why the lease is lost, or undefined while it is held. */
  get lost(): string | undefined {
    // Checked on read too: a renewal that hangs must not let the holder believe it still holds the lease.
    if (!this.lostBecause && performance.now() - this.renewedAt >= this.ttlMs)
      this.markLost('no renewal reached Redis in time');
    return this.lostBecause;
  }

  /** Throws LeaseLostError when the lease is no longer held. */
  assertHeld(): void {
    const why = this.lost;
    if (why) throw new LeaseLostError(`lost the lease ${this.key}: ${why}`);
  }

  /** Stops renewing and deletes the key if it is still this holder's. */
  async release(): Promise<void> {
    this.stop();
    await this.redis.eval(RELEASE, 1, this.key, this.token).catch(() => undefined);
  }

  private async renew(): Promise<void> {
    if (this.lostBecause) return;
    try {
      const renewed = await this.redis.eval(RENEW, 1, this.key, this.token, String(this.ttlMs));
      if (renewed === 1) this.renewedAt = performance.now();
      else this.markLost('another holder has it, or it expired');
    } catch {
      // Redis away: the lease counts as held until its time is up (checked by `lost`).
    }
  }

  private markLost(why: string): void {
    this.lostBecause = why;
    this.stop();
  }

  /** Stops renewing, leaving the key to expire (or to a script that settles it). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}

export class LeaseLostError extends Error {}

/** Only the holder renews or releases: a holder that outlived its lease must not touch a newer holder's key. */
const RENEW =
  "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0";
const RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
