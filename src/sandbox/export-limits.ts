import type { Reply, RequestContext } from './http/context';
import type { ExportRateLimits, SandboxState } from './state';

/**
 * The forge's application rate limits of the import and export endpoints ("Rate limits for imports and exports of
 * project and groups"): each endpoint has its own counter per user (a download: per user and group or project),
 * GitLab's fixed-window `Gitlab::ApplicationRateLimiter`, answered as the endpoint's own 429 (`check_rate_limit!` →
 * `render_api_error!({error: ...}, 429)`: JSON with `Retry-After`, no `RateLimit-*` headers).
 */

/** The forge's answer over a rate limit. */
export const RATE_LIMIT_MESSAGE = 'This endpoint has been requested too many times. Try again later.';

/** The limited endpoints, named as their settings (`ExportRateLimits`). */
export type RateLimitedAction = Exclude<keyof ExportRateLimits, 'windowMs'>;

/** One fixed window of a rate limit: it starts with the first request and lasts the setting's `window_ms`. */
interface RateWindow {
  startedAt: number;
  count: number;
}

export class ExportRateWindows {
  /** `action:scope` → its current window. */
  private readonly windows = new Map<string, RateWindow>();

  /**
   * Counts one request of `action` for `scope` against `limit` per `windowMs`. Answers the whole seconds until the
   * window lets a request through when this one is over the limit, which is then not counted; undefined otherwise.
   * A limit of 0 is off.
   */
  throttle(action: RateLimitedAction, scope: string, limit: number, windowMs: number, now: number): number | undefined {
    if (limit <= 0) return undefined;
    const key = `${action}:${scope}`;
    let window = this.windows.get(key);
    // A clock set back before the window's start opens a new one, as an expired Redis key would.
    if (!window || now >= window.startedAt + windowMs || now < window.startedAt) {
      window = { startedAt: now, count: 0 };
      this.windows.set(key, window);
    }
    if (window.count >= limit) return Math.max(1, Math.ceil((window.startedAt + windowMs - now) / 1000));
    window.count += 1;
    return undefined;
  }
}

const windows = new WeakMap<SandboxState, ExportRateWindows>();

export function exportRateWindowsOf(state: SandboxState): ExportRateWindows {
  let found = windows.get(state);
  if (!found) windows.set(state, (found = new ExportRateWindows()));
  return found;
}

/**
 * Counts the request against the caller's limit (`export_rate_limits`); over it, the forge's 429 with `Retry-After`
 * (whole seconds until the window lets a request through). Undefined when the request may proceed.
 */
export function rateLimited(ctx: RequestContext, action: RateLimitedAction, scope: string): Reply | undefined {
  const { exportRateLimits: limits } = ctx.state.settings;
  const retryAfter = exportRateWindowsOf(ctx.state).throttle(
    action,
    scope,
    limits[action],
    limits.windowMs,
    ctx.state.clock.now(),
  );
  if (retryAfter === undefined) return undefined;
  return {
    status: 429,
    json: { message: { error: RATE_LIMIT_MESSAGE } },
    headers: { 'Retry-After': String(retryAfter) },
  };
}
