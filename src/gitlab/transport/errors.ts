import { redactor } from '../../logging/redact';
import { type ResponseHeaders, serverWaitHintMs } from './headers';

export type HttpMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface ApiErrorInit {
  status: number;
  method: HttpMethod;
  path: string;
  body: unknown;
  message: string;
  headers?: ResponseHeaders;
  cause?: unknown;
}

/**
 * Every failure the client reports is an ApiError; callers decide by `instanceof`, never by parsing the message.
 * `status` is the HTTP status, or 0 when no response arrived (NetworkError, TimeoutError).
 * `path` is the request path and query; tokens travel in headers only, so it never holds one.
 * `message` quotes the forge's answer, which a forge or a proxy may have filled with the request's own credential; it
 * is masked here, where the answer enters, because from here it goes to places the logger never sees: the commands'
 * output (`plan`, `once`, `--json`), the refusals kept in Redis and shown again by later passes. `body` stays as
 * answered, for code that reads it.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly method: HttpMethod;
  readonly path: string;
  readonly body: unknown;
  /** Response headers (lower-case names), empty when no response arrived. */
  readonly headers: ResponseHeaders;

  constructor(init: ApiErrorInit) {
    super(redactor.redactText(init.message), init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.status = init.status;
    this.method = init.method;
    this.path = redactPath(init.path);
    this.body = init.body;
    this.headers = init.headers ?? {};
  }

  /** One line for logs: `GET projects/1/jobs → 404: 404 Project Not Found`. */
  get summary(): string {
    return `${this.method} ${this.path} → ${this.status === 0 ? 'no response' : this.status}: ${this.message}`;
  }
}

/** 400 and 422. `fields` holds the per-field messages when the body had the `{message: {field: [..]}}` shape. */
export class ValidationError extends ApiError {
  readonly fields: Readonly<Record<string, readonly string[]>>;
  constructor(init: ApiErrorInit) {
    super(init);
    this.fields = fieldErrors(init.body);
  }
}
export class UnauthorizedError extends ApiError {}
export class ForbiddenError extends ApiError {}
export class NotFoundError extends ApiError {}
export class ConflictError extends ApiError {}

/**
 * The forge's once-an-hour guard on bulk tag deletion answers **400**, not 429, and without `Retry-After`
 * (docs/api-client.md, "Container registry"). Raised by `registry.removeTags` so callers need not match the message.
 */
export class BulkDeleteAlreadyRequestedError extends ValidationError {}

/**
 * The client was closed (the command ended, or the daemon is shutting down) before this request was sent: it never
 * reached the forge, and it is not retried.
 */
export class ClientClosedError extends ApiError {
  constructor(init: Omit<ApiErrorInit, 'status' | 'body' | 'message'>) {
    super({ ...init, status: 0, body: undefined, message: 'not sent: the client is closed (shutting down)' });
  }
}

export class RateLimitedError extends ApiError {
  /** The wait the server asked for (`Retry-After`, else `RateLimit-Reset`), undefined when it gave none. */
  readonly retryAfterMs: number | undefined;
  constructor(init: ApiErrorInit & { now: number }) {
    super(init);
    this.retryAfterMs = serverWaitHintMs(this.headers, init.now);
  }
}
export class ServerError extends ApiError {}

export interface NetworkErrorInit extends Omit<ApiErrorInit, 'status' | 'body'> {
  /** False only when the request provably never left (connection refused, DNS failure, connect timeout). */
  mayHaveReachedServer: boolean;
  code: string | undefined;
}

/** No HTTP response: connection refused or reset, DNS failure, socket closed. */
export class NetworkError extends ApiError {
  readonly mayHaveReachedServer: boolean;
  readonly code: string | undefined;
  constructor(init: NetworkErrorInit) {
    super({ ...init, status: 0, body: undefined });
    this.mayHaveReachedServer = init.mayHaveReachedServer;
    this.code = init.code;
  }
}

/**
 * A NetworkError caused by a deadline. `phase: 'connect'` never reached the server; `'response'` may have (the
 * request was sent and the answer did not come in time), which is why a POST is never retried after it.
 */
export class TimeoutError extends NetworkError {
  readonly phase: 'connect' | 'response';
  constructor(init: Omit<NetworkErrorInit, 'mayHaveReachedServer'> & { phase: 'connect' | 'response' }) {
    super({ ...init, mayHaveReachedServer: init.phase === 'response' });
    this.phase = init.phase;
  }
}

/** A list ran past the page guard (`maxPages`) with pages still to come; raised instead of truncating silently. */
export class PageLimitError extends ApiError {
  readonly maxPages: number;
  constructor(init: Omit<ApiErrorInit, 'message' | 'body'> & { maxPages: number }) {
    super({ ...init, body: undefined, message: `stopped after ${init.maxPages} pages with more to come` });
    this.maxPages = init.maxPages;
  }
}

/**
 * A 3xx answer. The client never follows one: the token travels in a header that a redirect would carry to
 * wherever `Location` points, and a forge API does not redirect in normal use, so the configured URL is almost
 * always wrong (http where the forge wants https, a missing path prefix such as `/gitlab`, an old host name).
 */
export class RedirectError extends ApiError {
  /** Where the answer pointed, resolved against the request URL; undefined when it gave no `Location`. */
  readonly location: string | undefined;
  constructor(init: ApiErrorInit & { location: string | undefined }) {
    super(init);
    this.location = init.location;
  }
}

/**
 * A 2xx answer without the shape the code relies on (a field missing or of another type, an HTML page where JSON
 * was expected). Raised where the answer is read, so that a forge answering oddly fails the request that got the
 * answer instead of a TypeError far away, or a request to `.../undefined/...`.
 */
export class UnexpectedAnswerError extends ApiError {
  /** Position of the offending record in the listing (0-based), undefined for a single record. */
  readonly item: number | undefined;
  /** Dotted path of the offending field (`pipeline.project_id`), empty when the record itself is wrong. */
  readonly field: string;
  constructor(init: ApiErrorInit & { item?: number; field: string }) {
    super(init);
    this.item = init.item;
    this.field = init.field;
  }
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** Why the forge likely redirected, in terms of the configured URL. */
function redirectHint(requestUrl: string | undefined, location: string | undefined): string {
  const generic = 'check the configured forge URL (http or https, a missing path prefix such as /gitlab)';
  if (requestUrl === undefined || location === undefined) return generic;
  const from = new URL(requestUrl);
  const to = new URL(location);
  if (to.host !== from.host) {
    return `the forge sends this host's requests to ${to.host}: configure the forge URL with that host if it is the forge's own`;
  }
  if (to.protocol !== from.protocol && to.pathname === from.pathname) {
    return `the forge wants ${to.protocol.slice(0, -1)}: configure the forge URL as ${to.protocol}//${to.host}`;
  }
  if (to.pathname !== from.pathname && to.pathname.endsWith(from.pathname)) {
    const prefix = to.pathname.slice(0, -from.pathname.length);
    return `the forge is served under ${prefix}: add it to the configured forge URL (${to.protocol}//${to.host}${prefix})`;
  }
  if (/\/users\/sign_in\b|\/login\b|\/oauth\//.test(to.pathname)) {
    return `it points to a sign-in page: the configured URL may reach the web front end behind a login instead of the API; ${generic}`;
  }
  return generic;
}

function redirectError(init: ApiErrorInit, requestUrl: string | undefined): RedirectError {
  const raw = init.headers?.location;
  let location: string | undefined;
  if (raw !== undefined && raw.trim() !== '') {
    try {
      location = redactPath(new URL(raw.trim(), requestUrl ?? 'http://invalid/').href);
    } catch {
      location = redactPath(raw.trim());
    }
  }
  const where = location === undefined ? 'without a Location' : `pointing to ${location}`;
  let hint: string;
  try {
    hint = redirectHint(requestUrl, location);
  } catch {
    hint = redirectHint(undefined, undefined);
  }
  return new RedirectError({
    ...init,
    location,
    message: `the forge answered ${init.status} ${where}; not followed, so the token stays with the configured forge; ${hint}`,
  });
}

const MAX_MESSAGE = 300;

function truncate(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > MAX_MESSAGE ? `${flat.slice(0, MAX_MESSAGE - 1)}…` : flat;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function fieldErrors(body: unknown): Record<string, string[]> {
  if (!isRecord(body) || !isRecord(body.message)) return {};
  const out: Record<string, string[]> = {};
  for (const [field, value] of Object.entries(body.message)) {
    const list = Array.isArray(value) ? value : [value];
    out[field] = list.map((item) => (typeof item === 'string' ? item : JSON.stringify(item)));
  }
  return out;
}

function stripHtml(html: string): string {
  // Proxies and the forge's own error pages answer HTML; the title is the useful part ("502 Bad Gateway").
  const title = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html)?.[1];
  if (title && title.trim()) return title;
  const h1 = /<h1[^>]*>([\s\S]*?)<\/h1>/i.exec(html)?.[1];
  const text = (h1 ?? html)
    .replace(/<(script|style)[\s\S]*?<\/\1>/gi, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&nbsp;/g, ' ')
    .replace(/&amp;/g, '&')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>');
  return text;
}

/**
 * The forge answers errors in several shapes (docs/api-client.md, "Conventions"):
 * `{message: string}`, `{message: {field: [..]}}` (flattened to `field: msg`), `{error: string}` (OAuth-style, with
 * `error_description`), plain text or HTML from a proxy.
 */
export function extractMessage(body: unknown, status: number): string {
  const fallback = `HTTP ${status}`;
  if (body === undefined || body === null || body === '') return fallback;
  if (typeof body === 'string') {
    const text = /^\s*</.test(body) ? stripHtml(body) : body;
    return truncate(text) || fallback;
  }
  if (!isRecord(body)) return truncate(JSON.stringify(body));
  const { message, error } = body;
  if (typeof message === 'string' && message.trim()) return truncate(message);
  if (Array.isArray(message)) return truncate(message.map(String).join('; '));
  if (isRecord(message)) {
    const parts = Object.entries(fieldErrors(body)).map(([field, msgs]) => `${field}: ${msgs.join(', ')}`);
    if (parts.length) return truncate(parts.join('; '));
  }
  if (typeof error === 'string' && error.trim()) {
    const description = body.error_description;
    return truncate(typeof description === 'string' && description ? `${error}: ${description}` : error);
  }
  return truncate(JSON.stringify(body));
}

/** Maps a non-2xx answer to its subclass. */
export function errorFromResponse(init: {
  status: number;
  method: HttpMethod;
  path: string;
  body: unknown;
  headers: ResponseHeaders;
  now: number;
  /** The absolute URL requested; lets a RedirectError say what is wrong with the configured URL. */
  url?: string;
}): ApiError {
  const { url, ...rest } = init;
  const full: ApiErrorInit = { ...rest, message: extractMessage(init.body, init.status) };
  if (REDIRECT_STATUSES.has(init.status)) return redirectError(full, url);
  switch (init.status) {
    case 400:
    case 422:
      return new ValidationError(full);
    case 401:
      return new UnauthorizedError(full);
    case 403:
      return new ForbiddenError(full);
    case 404:
      return new NotFoundError(full);
    case 409:
      return new ConflictError(full);
    case 429:
      return new RateLimitedError({ ...full, now: init.now });
  }
  if (init.status >= 500) return new ServerError(full);
  return new ApiError(full);
}

const SECRET_PARAMS = /([?&](?:private_token|job_token|access_token)=)[^&]*/gi;

/** Defence in depth: the client never puts a token in the query, but a Link header from the server might. */
export function redactPath(path: string): string {
  return path.replace(SECRET_PARAMS, '$1[redacted]');
}

/**
 * The forge refused before acting and may accept later (rate limited, token not accepted), or the request never
 * left: nothing happened, so the same action may be tried again later. Anything else may have acted.
 */
export function certainlyNotActed(error: unknown): boolean {
  if (error instanceof RateLimitedError || error instanceof UnauthorizedError) return true;
  return error instanceof NetworkError && !error.mayHaveReachedServer;
}
