import type { Clock } from '../../clock';
import type { Cluster, Redis } from 'ioredis';
import type { HttpMethod } from './errors';
import { parseRateLimitState, type ResponseHeaders, serverWaitHintMs } from './headers';

/**
 * Rate-limit layer (octokit plugin-throttling style), separate from retry:
 * - one request budget per minute shared by every replica through Redis (fixed window, atomic Lua check-and-count,
 *   taken a few requests at a time: budgetBlock);
 * - a concurrency cap per process;
 * - writes spaced at the budget's pace (at most 250 ms apart), unless told a fixed interval;
 * - slowing down when the forge's `RateLimit-Remaining` runs low against `RateLimit-Limit`, and pausing everyone
 *   after a 429 of the instance's throttle that said how long to wait (one endpoint's own 429 pauses only itself).
 */
/** The Redis connection the shared budget is kept on (the daemon's own, handed in). */
export type SharedBudgetRedis = Redis | Cluster;

/** The shared budget's window: requests per minute. */
const DEFAULT_WINDOW_MS = 60_000;

export interface RateLimitOptions {
  /** Requests per window for all replicas together; 0 or less means unlimited. */
  maxRequestsPerMinute: number;
  /** Requests in flight per process. */
  concurrency: number;
  /**
   * Minimum spacing between two writes (POST/PUT/PATCH/DELETE) of this process; absent, the budget's pace
   * (writeSpacingMs).
   */
  minWriteIntervalMs?: number;
  /** Below this share of `RateLimit-Limit` left, requests are spread over the time until `RateLimit-Reset`. */
  lowRemainingRatio: number;
  /** Budget window length; a minute unless a test says otherwise. */
  windowMs: number;
  redis?: SharedBudgetRedis;
  /** Key prefix; the budget lives under `${redisPrefix}:ratelimit:<window>`. */
  redisPrefix: string;
  /** Where the limiter says it had to fall back (Redis unavailable); the daemon passes its logger. */
  warn: (message: string) => void;
}

/** The widest write spacing: what every budget used to get, four writes a second. */
export const MAX_WRITE_SPACING_MS = 250;

/**
 * The spacing of writes for a budget: its average pace (a window over the requests it allows), at most 250 ms. A burst of
 * retries then goes as fast as the budget sustains (100 ms apart at 600 a minute, 10 ms at 6,000) instead of four a
 * second whatever the budget, and never faster than the budget's pace, so one burst does not spend the window's budget
 * in its first seconds and starve every other policy's reads. Unlimited budgets space nothing.
 */
export function writeSpacingMs(
  options: Pick<RateLimitOptions, 'maxRequestsPerMinute' | 'windowMs' | 'minWriteIntervalMs'>,
): number {
  if (options.minWriteIntervalMs !== undefined) return Math.max(0, options.minWriteIntervalMs);
  const limit = options.maxRequestsPerMinute;
  if (!(limit > 0) || !Number.isFinite(limit)) return 0;
  return Math.min(MAX_WRITE_SPACING_MS, options.windowMs / limit);
}

export const DEFAULT_RATE_LIMIT_OPTIONS: Omit<RateLimitOptions, 'redis'> = {
  maxRequestsPerMinute: 600,
  concurrency: 8,
  lowRemainingRatio: 0.1,
  windowMs: DEFAULT_WINDOW_MS,
  redisPrefix: 'forgewarden',
  warn: (message) => process.emitWarning(message, 'ForgewardenRateLimit'),
};

/**
 * Takes up to `ARGV[3]` requests of the window at once, as many as it still has room for, and answers how many were
 * granted (0 when it is spent), so a replica that finds the budget spent does not eat into the next window by retrying.
 */
const TAKE_SCRIPT = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local room = tonumber(ARGV[1]) - used
if room <= 0 then return 0 end
local want = math.min(tonumber(ARGV[3] or '1'), room)
used = redis.call('INCRBY', KEYS[1], want)
if used == want then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return want
`;

/** The most requests one round trip to Redis takes from the shared budget (see budgetBlock). */
export const MAX_BUDGET_BLOCK = 20;

/**
 * How many requests one round trip to Redis takes from the shared budget: one per 500 of the budget, at most 20. A
 * round trip per request was most of a poll's CPU over 20,000 projects (docs/benchmarks.md); taken in blocks, what a
 * replica holds unused when a window ends is below 0.2% of the budget, and small budgets are still counted one by one.
 */
export function budgetBlock(maxRequestsPerMinute: number): number {
  return Math.max(1, Math.min(MAX_BUDGET_BLOCK, Math.floor(maxRequestsPerMinute / 500)));
}

const REDIS_RETRY_MS = 30_000;

/** The shared budget's counter of one window (windows numbered from the epoch). */
function sharedBudgetKey(prefix: string, windowIndex: number): string {
  return `${prefix}:ratelimit:${windowIndex}`;
}

/** Requests all replicas sent in the minute-long window `nowMs` falls in, as the shared budget counts them. */
export async function sharedBudgetUsed(redis: SharedBudgetRedis, prefix: string, nowMs: number): Promise<number> {
  const used = await redis.get(sharedBudgetKey(prefix, Math.floor(nowMs / DEFAULT_WINDOW_MS)));
  return Number(used ?? 0) || 0;
}

type RedisWithTake = SharedBudgetRedis & {
  forgewardenTakeBlock(key: string, limit: number, ttlMs: number, want: number): Promise<number>;
};

function isWrite(method: HttpMethod): boolean {
  return method !== 'GET' && method !== 'HEAD';
}

/**
 * A 429 that is one endpoint's own limit, not the instance's: the forge's application limits (group export, its
 * download, import: per user and resource) answer from the API as JSON, without the `RateLimit-*` headers its
 * instance-wide throttle and proxies send with their plain-text "Retry later". Only that request waits (the retry layer
 * honours its `Retry-After`); pausing everyone would stall every policy for one group's download.
 */
function isEndpointLimit(headers: ResponseHeaders, carriesThrottleHeaders: boolean): boolean {
  return !carriesThrottleHeaders && /^application\/json\b/i.test(headers['content-type'] ?? '');
}

/** The limiter was closed before the request could start; the transport turns it into a ClientClosedError. */
export class LimiterClosedError extends Error {
  constructor() {
    super('the rate limiter is closed');
    this.name = 'LimiterClosedError';
  }
}

export class RateLimiter {
  private readonly options: RateLimitOptions;
  private inFlight = 0;
  private closed = false;
  /** Shared-budget calls (Redis) and sends under way: close() waits for these, never for a request still waiting. */
  private busy = 0;
  private readonly idle: Array<() => void> = [];
  private readonly waiting: Array<() => void> = [];
  private nextWriteAt = 0;
  private readonly writeSpacing: number;
  private pausedUntil = 0;
  private forge: { limit: number; remaining: number; resetAt: number } | undefined;
  private localWindow = { index: -1, used: 0 };
  /** Requests of the shared budget's window `index` this process took from Redis and has not sent yet. */
  private block = { index: -1, left: 0 };
  /** After a Redis failure the shared budget is retried no sooner than this. */
  private redisRetryAt = 0;

  constructor(
    options: Partial<RateLimitOptions>,
    private readonly clock: Clock,
  ) {
    this.options = { ...DEFAULT_RATE_LIMIT_OPTIONS, ...options };
    if (this.options.concurrency < 1) throw new RangeError('concurrency must be at least 1');
    this.writeSpacing = writeSpacingMs(this.options);
    const redis = this.options.redis;
    if (redis && !('forgewardenTakeBlock' in redis)) {
      redis.defineCommand('forgewardenTakeBlock', { numberOfKeys: 1, lua: TAKE_SCRIPT });
    }
  }

  /**
   * Runs `send` once a slot, the write spacing, the forge's remaining budget and the shared budget allow it. Rejects
   * with LimiterClosedError when the limiter is closed before `send` starts.
   */
  async schedule<T>(method: HttpMethod, send: () => Promise<T>): Promise<T> {
    if (this.closed) throw new LimiterClosedError();
    await this.acquireSlot();
    try {
      await this.waitForWriteTurn(method);
      await this.waitForForge();
      await this.takeBudget();
      return await this.tracked(send);
    } finally {
      this.releaseSlot();
    }
  }

  /**
   * Takes no more work and resolves once the shared-budget calls and the requests already sent have ended. Requests
   * still waiting (for a slot, their write turn, the forge or the next window) are not sent: they reject when they
   * wake. The owner closes the Redis connection only after this, so no budget call meets a closed connection.
   */
  async close(): Promise<void> {
    this.closed = true;
    if (this.busy === 0) return;
    await new Promise<void>((resolve) => this.idle.push(resolve));
  }

  private async tracked<T>(work: () => Promise<T>): Promise<T> {
    if (this.closed) throw new LimiterClosedError();
    this.busy++;
    try {
      return await work();
    } finally {
      if (--this.busy === 0) for (const resolve of this.idle.splice(0)) resolve();
    }
  }

  /** Feeds every answer (including errors) back so the limiter can slow down or pause. */
  observe(status: number, headers: ResponseHeaders): void {
    const now = this.clock.now();
    const state = parseRateLimitState(headers, now);
    if (state) {
      this.forge = {
        limit: state.limit,
        remaining: state.remaining,
        resetAt: now + (state.resetInMs ?? this.options.windowMs),
      };
    }
    if (status === 429 && !isEndpointLimit(headers, state !== undefined)) {
      const wait = serverWaitHintMs(headers, now);
      if (wait !== undefined) this.pausedUntil = Math.max(this.pausedUntil, now + wait);
    }
  }

  /** The spacing writes of this process keep, in ms (see writeSpacingMs). */
  get writeSpacingMs(): number {
    return this.writeSpacing;
  }

  get activeRequests(): number {
    return this.inFlight;
  }

  private async acquireSlot(): Promise<void> {
    if (this.inFlight < this.options.concurrency) {
      this.inFlight++;
      return;
    }
    // The releasing request hands its slot over directly, so inFlight never exceeds the cap.
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private releaseSlot(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.inFlight--;
  }

  private async waitForWriteTurn(method: HttpMethod): Promise<void> {
    if (!isWrite(method) || this.writeSpacing <= 0) return;
    const now = this.clock.now();
    // Reserve the turn before sleeping so concurrent writes line up instead of all waking at once.
    const turn = Math.max(now, this.nextWriteAt);
    this.nextWriteAt = turn + this.writeSpacing;
    if (turn > now) await this.clock.sleep(turn - now);
  }

  /** Delay before the next request given what the forge last said; 0 when there is room. */
  slowDownMs(): number {
    const now = this.clock.now();
    if (this.pausedUntil > now) return this.pausedUntil - now;
    const forge = this.forge;
    if (!forge || now >= forge.resetAt) return 0;
    if (forge.remaining > forge.limit * this.options.lowRemainingRatio) return 0;
    if (forge.remaining <= 0) return forge.resetAt - now;
    return Math.ceil((forge.resetAt - now) / forge.remaining);
  }

  private async waitForForge(): Promise<void> {
    const delay = this.slowDownMs();
    // Count this request against what is left so the spacing holds until the next answer updates it.
    if (this.forge && this.forge.remaining > 0) this.forge.remaining--;
    if (delay > 0) await this.clock.sleep(delay);
  }

  private async takeBudget(): Promise<void> {
    const limit = this.options.maxRequestsPerMinute;
    if (!(limit > 0) || !Number.isFinite(limit)) return;
    for (;;) {
      const now = this.clock.now();
      const index = Math.floor(now / this.options.windowMs);
      if (await this.tracked(() => this.tryTake(index, limit))) return;
      // Budget spent: wait for the next window rather than polling Redis.
      await this.clock.sleep((index + 1) * this.options.windowMs - now);
    }
  }

  private async tryTake(index: number, limit: number): Promise<boolean> {
    if (this.block.index === index && this.block.left > 0) {
      this.block.left--;
      return true;
    }
    const redis = this.options.redis as RedisWithTake | undefined;
    if (redis && this.clock.now() >= this.redisRetryAt) {
      try {
        // Windows are numbered from the epoch by each replica's clock; skew of a second or two only moves a few
        // requests across a window boundary.
        const key = sharedBudgetKey(this.options.redisPrefix, index);
        const granted = await redis.forgewardenTakeBlock(key, limit, this.options.windowMs * 2, budgetBlock(limit));
        if (granted <= 0) return false;
        // Requests side by side may each have taken a block of the same window: what is left of them adds up.
        const held = this.block.index === index ? this.block.left : 0;
        this.block = { index, left: held + granted - 1 };
        return true;
      } catch (error) {
        // Without Redis the shared budget cannot be kept; count locally for a while rather than stop all work.
        this.redisRetryAt = this.clock.now() + REDIS_RETRY_MS;
        this.options.warn(`shared rate budget unavailable, counting per process: ${(error as Error).message}`);
      }
    }
    if (this.localWindow.index !== index) this.localWindow = { index, used: 0 };
    if (this.localWindow.used >= limit) return false;
    this.localWindow.used++;
    return true;
  }
}
