/** Response headers as undici hands them over, normalised to lower-case name → single string. */
export type ResponseHeaders = Readonly<Record<string, string>>;

export function normaliseHeaders(raw: Record<string, string | string[] | undefined>): ResponseHeaders {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** `Retry-After` is either delta-seconds or an HTTP date (RFC 9110 §10.2.3). Milliseconds from `now`, or undefined. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (text === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.ceil(Number(text) * 1000);
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/**
 * The forge sends `RateLimit-Reset` as epoch seconds. The IETF draft sends delta seconds under the same name; a value
 * too small to be a plausible epoch (before 2001) is read as a delta so a proxy speaking the draft does not turn into
 * "wait 0 ms" forever.
 */
export function parseRateLimitReset(value: string | undefined, now: number): number | undefined {
  if (value === undefined || !/^\d+(\.\d+)?$/.test(value.trim())) return undefined;
  const seconds = Number(value.trim());
  if (seconds < 1_000_000_000) return Math.ceil(seconds * 1000);
  return Math.max(0, Math.ceil(seconds * 1000 - now));
}

/** How long the server asked us to wait: `Retry-After` first, then `RateLimit-Reset`. */
export function serverWaitHintMs(headers: ResponseHeaders, now: number): number | undefined {
  return parseRetryAfter(headers['retry-after'], now) ?? parseRateLimitReset(headers['ratelimit-reset'], now);
}

function intHeader(headers: ResponseHeaders, name: string): number | undefined {
  const value = headers[name];
  if (value === undefined || !/^\d+$/.test(value.trim())) return undefined;
  return Number(value.trim());
}

export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Milliseconds from `now` until the forge's window resets, when it said. */
  resetInMs: number | undefined;
}

/** `RateLimit-Limit` / `RateLimit-Remaining` / `RateLimit-Reset` as the forge sends them on every answer. */
export function parseRateLimitState(headers: ResponseHeaders, now: number): RateLimitState | undefined {
  const limit = intHeader(headers, 'ratelimit-limit');
  const remaining = intHeader(headers, 'ratelimit-remaining');
  if (limit === undefined || remaining === undefined || limit <= 0) return undefined;
  return { limit, remaining, resetInMs: parseRateLimitReset(headers['ratelimit-reset'], now) };
}
