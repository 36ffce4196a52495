import type { Clock } from '../../clock';
import { ApiError, type HttpMethod, NetworkError, RateLimitedError, ServerError } from './errors';
import { serverWaitHintMs } from './headers';

/**
 * Retry layer (octokit plugin-retry style): pure decisions plus a small loop with injected clock, sleep and random
 * so that tests are deterministic. Knows nothing about HTTP plumbing or rate budgets.
 */
export interface RetryOptions {
  /** Attempts in total, the first included. */
  maxAttempts: number;
  /** First backoff step; step n is `baseDelayMs * 2^(n-1)`, capped by `maxDelayMs`, then fully jittered. */
  baseDelayMs: number;
  maxDelayMs: number;
  /**
   * First wait after a 429 that carries neither `Retry-After` nor `RateLimit-Reset`; it doubles per attempt up to
   * `defaultRateLimitWaitMs`, with equal jitter.
   */
  rateLimitBaseDelayMs: number;
  /** Longest wait after a 429 that carries neither `Retry-After` nor `RateLimit-Reset`. */
  defaultRateLimitWaitMs: number;
  /** No retry is started that would end after this long since the first attempt. */
  deadlineMs: number;
}

export const DEFAULT_RETRY_OPTIONS: RetryOptions = {
  maxAttempts: 4,
  baseDelayMs: 500,
  maxDelayMs: 20_000,
  rateLimitBaseDelayMs: 1_000,
  defaultRateLimitWaitMs: 60_000,
  deadlineMs: 120_000,
};

export type RetryDecision = { retry: true; delayMs: number; reason: string } | { retry: false; reason: string };

const RETRYABLE_STATUSES = new Set([429, 502, 503, 504]);

/**
 * A read answered 500 is tried again like a 502: the forge's 500s are mostly passing (a database failover, a worker
 * restarted), and a read changes nothing however often it is sent (python-gitlab retries 500 too). A write answered
 * 500 may have acted, so it is not.
 */
function isRead(method: HttpMethod): boolean {
  return method === 'GET' || method === 'HEAD';
}

/**
 * Conservative reading of HTTP idempotency: GET/HEAD/PUT/DELETE may be repeated; POST and PATCH may not be repeated
 * once they may have reached the server (a retried POST .../retry would start a second job).
 */
export function isIdempotent(method: HttpMethod): boolean {
  return method === 'GET' || method === 'HEAD' || method === 'PUT' || method === 'DELETE';
}

export function backoffMs(attempt: number, options: RetryOptions, random: number): number {
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (attempt - 1));
  return Math.floor(random * ceiling);
}

/**
 * The wait after a 429 without a hint. Some forges (and proxies in front of them) send a bare 429; a flat minute
 * stalled every policy for that long after one short burst, while an immediate retry would hit the limit again.
 * Equal jitter keeps at least half of each step, so replicas that were refused together neither retry at once
 * nor wait nothing.
 */
export function rateLimitBackoffMs(attempt: number, options: RetryOptions, random: number): number {
  const step = Math.min(options.defaultRateLimitWaitMs, options.rateLimitBaseDelayMs * 2 ** (attempt - 1));
  return Math.floor(step / 2 + (random * step) / 2);
}

/** What the retry layer needs to know of a request. */
export interface RetryRequest {
  method: HttpMethod;
  /**
   * Whether sending it twice does no more than sending it once. Defaults to `isIdempotent(method)`; a DELETE the
   * forge allows once an hour (bulk tag deletion) says `false`.
   */
  idempotent?: boolean;
}

export interface RetryContext {
  method: HttpMethod;
  /** Defaults to `isIdempotent(method)`. */
  idempotent?: boolean;
  /** The attempt that just failed, 1-based. */
  attempt: number;
  /** Milliseconds since the first attempt started. */
  elapsedMs: number;
  now: number;
  random: number;
}

export function decideRetry(error: unknown, ctx: RetryContext, options: RetryOptions): RetryDecision {
  if (!(error instanceof ApiError)) return { retry: false, reason: 'not an API error' };
  if (ctx.attempt >= options.maxAttempts) return { retry: false, reason: `gave up after ${ctx.attempt} attempts` };

  const idempotent = ctx.idempotent ?? isIdempotent(ctx.method);
  const what = !idempotent && isIdempotent(ctx.method) ? `${ctx.method} (not repeatable)` : ctx.method;
  let delayMs: number;
  let reason: string;
  if (error instanceof NetworkError) {
    // Connection refused or connect timeout: nothing was sent, so even a POST is safe to repeat. A reset or a
    // response timeout may come after the server acted on the request.
    if (!idempotent && error.mayHaveReachedServer) {
      return { retry: false, reason: `${what} may have reached the server (${error.name})` };
    }
    delayMs = backoffMs(ctx.attempt, options, ctx.random);
    reason = error.name;
  } else if (RETRYABLE_STATUSES.has(error.status) || (error.status === 500 && isRead(ctx.method))) {
    // A 429 is a refusal before any work, so it is safe for every method; a 502/503/504 from a proxy may follow
    // an upstream that did act.
    if (!idempotent && !(error instanceof RateLimitedError)) {
      return { retry: false, reason: `${what} answered ${error.status} is not repeated` };
    }
    const hint = serverWaitHintMs(error.headers, ctx.now);
    if (hint !== undefined) {
      delayMs = hint;
      reason = `${error.status}, server asked to wait ${hint} ms`;
    } else if (error instanceof RateLimitedError) {
      delayMs = rateLimitBackoffMs(ctx.attempt, options, ctx.random);
      reason = '429 without a wait hint';
    } else {
      delayMs = backoffMs(ctx.attempt, options, ctx.random);
      reason = `${error.status}`;
    }
  } else {
    return {
      retry: false,
      reason: error instanceof ServerError ? `${error.status} is not transient` : `${error.status} is final`,
    };
  }

  if (ctx.elapsedMs + delayMs > options.deadlineMs) {
    return { retry: false, reason: `waiting ${delayMs} ms would pass the ${options.deadlineMs} ms deadline` };
  }
  return { retry: true, delayMs, reason };
}

export interface RetryEvent {
  attempt: number;
  delayMs: number;
  reason: string;
  error: ApiError;
}

/** Runs `attempt(n)` until it succeeds or `decideRetry` says stop; rethrows the last error unchanged. */
export async function withRetry<T>(
  request: RetryRequest,
  attempt: (n: number) => Promise<T>,
  options: RetryOptions,
  clock: Clock,
  onRetry?: (event: RetryEvent) => void,
): Promise<T> {
  // The deadline runs on monotonic time: a wall clock stepped by an hour must not make a request give up at once.
  const started = clock.monotonic();
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (error) {
      const decision = decideRetry(
        error,
        { ...request, attempt: n, elapsedMs: clock.monotonic() - started, now: clock.now(), random: clock.random() },
        options,
      );
      if (!decision.retry) throw error;
      onRetry?.({ attempt: n, delayMs: decision.delayMs, reason: decision.reason, error: error as ApiError });
      await clock.sleep(decision.delayMs);
    }
  }
}
