import { performance } from 'node:perf_hooks';
import { type Dispatcher, Pool } from 'undici';
import { buildQuery, type Endpoint, type Query } from './endpoint';
import { purposeHeaders } from './purpose';
import {
  ApiError,
  ClientClosedError,
  errorFromResponse,
  type HttpMethod,
  NetworkError,
  PageLimitError,
  TimeoutError,
  UnauthorizedError,
  UnexpectedAnswerError,
} from './errors';
import { normaliseHeaders, type ResponseHeaders } from './headers';
import { multipartBody, type MultipartPart } from './multipart';
import {
  DEFAULT_MAX_PAGES,
  DEFAULT_PER_PAGE,
  type PageOptions,
  pageNumberOf,
  type Paginated,
  parseLinkHeader,
  parseNextPage,
  parseTotalPages,
  withPageNumber,
} from './pagination';
import { LimiterClosedError, type RateLimiter } from './rate-limit';
import type { Clock } from '../../clock';
import { isIdempotent, type RetryEvent, type RetryOptions, withRetry } from './retry';
import { checkShape, type Shape } from './shape';
import type { TokenSource } from './token-source';

export type TokenKind = 'private' | 'job';

export interface ResponseEvent {
  method: HttpMethod;
  /** The endpoint with parameters replaced by `:param` (never the token, never ids). */
  route: string;
  status: number | 'network_error';
  durationMs: number;
}

export interface TransportOptions {
  url: string;
  token: TokenSource;
  tokenKind: TokenKind;
  timeoutMs: number;
  connectTimeoutMs: number;
  concurrency: number;
  retry: RetryOptions;
  limiter: RateLimiter;
  clock: Clock;
  /** Tests pass undici's MockAgent; otherwise a Pool to the forge's origin is made and owned here. */
  dispatcher?: Dispatcher;
  userAgent?: string;
  onResponse?: (event: ResponseEvent) => void;
  /** Before each wait between attempts of a request, so a caller waiting on the forge can say why. */
  onRetry?: (event: RetryWait) => void;
}

/** A request about to be tried again after `delayMs`. */
export interface RetryWait extends RetryEvent {
  method: HttpMethod;
  route: string;
}

export interface RequestSpec<T = unknown> {
  method: HttpMethod;
  endpoint: Endpoint;
  query?: Query;
  /** Sent as JSON (`Content-Type: application/json`). */
  body?: unknown;
  /** Sent as `multipart/form-data` instead of `body`; files are streamed from disk on every attempt. */
  multipart?: readonly MultipartPart[];
  /** `job`: authenticate with `JOB-TOKEN` (GitLab's "Jobs API"), using `jobToken` or the client's own token. */
  auth?: 'client' | 'job';
  jobToken?: string;
  /**
   * Whether the request may be sent again after it may have reached the forge (a 502/503/504, a reset after
   * sending, a response timeout). Default: GET/HEAD/PUT/DELETE yes, POST/PATCH no. A 429 or a connection that
   * never left is retried either way.
   */
  idempotent?: boolean;
  /** What the answer must look like (for `paginate`: each item); a mismatch is an UnexpectedAnswerError. */
  shape?: Shape<T>;
}

export interface ApiResponse<T> {
  status: number;
  headers: ResponseHeaders;
  data: T;
}

/** Largest error body kept on an ApiError; HTML error pages from proxies can be big. */
const MAX_ERROR_BODY = 64 * 1024;

type BodyReader<R> = (body: Dispatcher.ResponseData['body'], headers: ResponseHeaders, status: number) => Promise<R>;

/** A page as it arrived, its body still text. */
interface PageText {
  status: number;
  headers: ResponseHeaders;
  text: string;
}

/**
 * A page's body is only read inside the request's limiter slot; it is parsed when the consumer reaches it, so the
 * slot goes to the next request instead of waiting on JSON.parse of 100 records.
 */
const readPageText: BodyReader<PageText> = async (body, headers, status) => ({
  status,
  headers,
  text: await body.text(),
});

/** A page of a listing asked for and not yet handed to the consumer. */
interface RequestedPage {
  pathAndQuery: string;
  answer: Promise<PageText>;
}

/** Offset pagination with totals: pages `next`..`last` are `template` with another `page` number. */
interface CountedPages {
  template: string;
  next: number;
  last: number;
}

/** Splits the configured URL into origin and API prefix; accepts it with or without a trailing `/api/v4`. */
function apiBase(url: string): { origin: string; prefix: string } {
  const parsed = new URL(url);
  if (parsed.username || parsed.password) throw new TypeError('put the token in `token`, not in the URL');
  const path = parsed.pathname.replace(/\/+$/, '').replace(/\/api\/v4$/, '');
  return { origin: parsed.origin, prefix: `${path}/api/v4` };
}

const NEVER_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

function errorCode(error: unknown): string | undefined {
  for (let current: unknown = error, depth = 0; current && depth < 4; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Why a page read ahead is not sent after all: the listing's consumer stopped before it (see paginate). */
const LISTING_LEFT = new Error('the listing was left before this page was needed');

/** Maps what undici throws when no response arrived to NetworkError/TimeoutError, deciding if it may have arrived. */
export function networkError(error: unknown, method: HttpMethod, path: string): NetworkError {
  const code = errorCode(error);
  const detail = error instanceof Error ? error.message : String(error);
  if (code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new TimeoutError({
      method,
      path,
      code,
      phase: 'connect',
      message: `connect timeout: ${detail}`,
      cause: error,
    });
  }
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return new TimeoutError({
      method,
      path,
      code,
      phase: 'response',
      message: `response timeout: ${detail}`,
      cause: error,
    });
  }
  return new NetworkError({
    method,
    path,
    code,
    mayHaveReachedServer: !(code !== undefined && NEVER_SENT.has(code)),
    message: `network error${code ? ` ${code}` : ''}: ${detail}`,
    cause: error,
  });
}

/** What came instead of a list: an HTML login page from a proxy is `text`, an error envelope `an object`. */
function kindOf(data: unknown): string {
  if (data === undefined) return 'nothing';
  if (data === null) return 'null';
  if (typeof data === 'string') return 'text';
  return typeof data === 'object' ? 'an object' : `a ${typeof data}`;
}

function withoutQuery(pathAndQuery: string): string {
  const at = pathAndQuery.indexOf('?');
  return at === -1 ? pathAndQuery : pathAndQuery.slice(0, at);
}

/** The same page however its link spells the query: parameter order and percent-encoding vary between headers. */
function pageKey(pathAndQuery: string): string {
  const url = new URL(pathAndQuery, 'http://placeholder/');
  url.searchParams.sort();
  return url.pathname + url.search;
}

function looksLikeJson(headers: ResponseHeaders, text: string): boolean {
  return /\bjson\b/i.test(headers['content-type'] ?? '') || /^\s*[[{]/.test(text);
}

function parseBody(headers: ResponseHeaders, text: string): unknown {
  if (text === '') return undefined;
  if (!looksLikeJson(headers, text)) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The only code that talks HTTP to the forge: auth, encoding, rate limiting, retries, pagination, streaming. */
export class Transport {
  private readonly origin: string;
  private readonly prefix: string;
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: TransportOptions) {
    if (!options.token.current()) throw new TypeError('a token is required');
    const { origin, prefix } = apiBase(options.url);
    this.origin = origin;
    this.prefix = prefix;
    this.ownsDispatcher = options.dispatcher === undefined;
    this.dispatcher =
      options.dispatcher ??
      new Pool(origin, {
        connections: options.concurrency,
        connect: { timeout: options.connectTimeoutMs },
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
      });
  }

  /** Sends nothing more, lets the requests already sent finish, then closes the connections it opened. */
  async close(): Promise<void> {
    this.closing ??= (async () => {
      await this.options.limiter.close();
      if (this.ownsDispatcher) await this.dispatcher.close();
    })();
    await this.closing;
  }

  /** A JSON request; 204 and empty bodies give `undefined` (unless a `shape` asks for a record). */
  async request<T>(spec: RequestSpec<T>): Promise<ApiResponse<T>> {
    const pathAndQuery = spec.endpoint.path + buildQuery(spec.query);
    const response = await this.send(spec, pathAndQuery, async (body, headers, status) => {
      const text = await body.text();
      return { status, headers, data: parseBody(headers, text) };
    });
    if (spec.shape) this.check(spec.shape, response.data, spec.method, pathAndQuery, response, undefined);
    return { ...response, data: response.data as T };
  }

  async json<T>(spec: RequestSpec<T>): Promise<T> {
    return (await this.request<T>(spec)).data;
  }

  /** Hands a 2xx body to `consume` as a byte stream; errors are mapped as usual. Retried whole on failure. */
  async stream<R>(spec: RequestSpec, consume: (chunks: AsyncIterable<Buffer>) => Promise<R>): Promise<R> {
    return this.send(spec, spec.endpoint.path + buildQuery(spec.query), async (body) => consume(body));
  }

  /**
   * Streams every item of a list endpoint with `per_page=100`, in the forge's order, reading pages ahead of the
   * consumer (how, and what stopping early costs: docs/api-client.md, "Reading pages ahead").
   */
  async *paginate<T>(spec: Omit<RequestSpec<T>, 'body'>, options: PageOptions<T> = {}): Paginated<T> {
    const perPage = Math.min(Math.max(1, options.perPage ?? DEFAULT_PER_PAGE), 100);
    const maxPages = options.maxPages ?? DEFAULT_MAX_PAGES;
    const pagesAhead = Math.max(1, this.options.concurrency);
    const abandoned = new AbortController();
    const readAhead: RequestedPage[] = [];
    // A forge (or a proxy rewriting links) whose `next` points back to a page already asked for would otherwise make
    // the listing loop until the page guard, yielding the same records again and again.
    const requested = new Set<string>();
    const requestPage = (pathAndQuery: string): void => {
      const answer = this.send(spec, pathAndQuery, readPageText, abandoned.signal);
      // The rejection is awaited where the page's items belong; a page the consumer never reaches (it stopped, or an
      // earlier page failed) must not become an unhandled rejection.
      answer.catch(() => undefined);
      readAhead.push({ pathAndQuery, answer });
      requested.add(pageKey(pathAndQuery));
    };
    let counted: CountedPages | undefined;
    let pastPageLimit: string | undefined;
    let index = 0;
    const firstPage = spec.endpoint.path + buildQuery({ ...spec.query, page: 1, per_page: perPage });
    if (maxPages >= 1) requestPage(firstPage);
    else pastPageLimit = firstPage;
    try {
      for (let current = readAhead.shift(), first = true; current; current = readAhead.shift(), first = false) {
        const arrived = await current.answer;
        const page: ApiResponse<unknown> = {
          status: arrived.status,
          headers: arrived.headers,
          data: parseBody(arrived.headers, arrived.text),
        };
        if (!Array.isArray(page.data)) {
          throw new UnexpectedAnswerError({
            status: page.status,
            method: spec.method,
            path: current.pathAndQuery,
            body: page.data,
            headers: page.headers,
            field: '',
            message: `unexpected answer from ${spec.method} ${withoutQuery(current.pathAndQuery)}: expected a JSON array, got ${kindOf(page.data)}`,
          });
        }
        if (first) counted = this.countedPages(current.pathAndQuery, page.headers);
        while (counted && readAhead.length < pagesAhead && counted.next <= counted.last && requested.size < maxPages) {
          requestPage(withPageNumber(counted.template, counted.next++));
        }
        if (readAhead.length === 0) {
          // Nothing more planned: past the counted pages (or there were none), the page itself says what follows.
          counted = undefined;
          const next = this.nextPage(current.pathAndQuery, page.headers);
          if (next !== undefined && !requested.has(pageKey(next))) {
            if (requested.size < maxPages) requestPage(next);
            else pastPageLimit = next;
          }
        }
        for (const item of page.data as unknown[]) {
          if (spec.shape) this.check(spec.shape, item, spec.method, current.pathAndQuery, page, index);
          index++;
          if (options.until?.(item as T)) return;
          yield item as T;
        }
      }
      if (pastPageLimit !== undefined) {
        if (options.onPageLimit === 'stop') return;
        throw new PageLimitError({ status: 200, method: spec.method, path: pastPageLimit, maxPages });
      }
    } finally {
      // Only pages read ahead and not reached are called off, with one reason made once: a DOMException per listing
      // (most stop on their first page) was a visible share of a poll's CPU over 20,000 projects.
      if (readAhead.length > 0) abandoned.abort(LISTING_LEFT);
    }
  }

  /** The pages still to come when the first page counted them and numbers its next page (offset pagination). */
  private countedPages(first: string, headers: ResponseHeaders): CountedPages | undefined {
    const last = parseTotalPages(headers['x-total-pages']);
    const next = this.nextPage(first, headers);
    if (last === undefined || last < 2 || next === undefined || pageNumberOf(next) !== 2) return undefined;
    // Built from the forge's own link to page 2 rather than from the request, so that a forge normalising the query
    // (a clamped per_page, a default it adds) is asked for exactly the pages it counted.
    return { template: next, next: 2, last };
  }

  private check(
    shape: Shape<unknown>,
    value: unknown,
    method: HttpMethod,
    pathAndQuery: string,
    response: ApiResponse<unknown>,
    item: number | undefined,
  ): void {
    const found = checkShape(shape, value);
    if (!found) return;
    const where = item === undefined ? '' : `item ${item}: `;
    throw new UnexpectedAnswerError({
      status: response.status,
      method,
      path: pathAndQuery,
      body: value,
      headers: response.headers,
      item,
      field: found.field,
      message: `unexpected answer from ${method} ${withoutQuery(pathAndQuery)}: ${where}${found.problem}`,
    });
  }

  private nextPage(current: string, headers: ResponseHeaders): string | undefined {
    const link = parseLinkHeader(headers.link).get('next');
    if (link) {
      // Keep only path and query: the token must never follow a link to another host, and a proxy may have
      // written an internal host name into the header.
      const target = new URL(link, `${this.origin}${this.prefix}/`);
      if (target.pathname.startsWith(`${this.prefix}/`)) {
        return target.pathname.slice(this.prefix.length + 1) + target.search;
      }
    }
    const next = parseNextPage(headers['x-next-page']);
    if (next === undefined) return undefined;
    const url = new URL(current, 'http://placeholder/');
    url.searchParams.set('page', String(next));
    return url.pathname.slice(1) + url.search;
  }

  private headersFor(spec: RequestSpec, token: string): Record<string, string> {
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': this.options.userAgent ?? 'forgewarden',
      ...purposeHeaders(),
    };
    if (spec.auth === 'job' || this.options.tokenKind === 'job') {
      headers['job-token'] = spec.jobToken ?? token;
    } else {
      headers['private-token'] = token;
    }
    if (spec.body !== undefined) headers['content-type'] = 'application/json';
    return headers;
  }

  /** Through the limiter; a request the closing client will not send fails as a ClientClosedError. */
  private async scheduled<R>(method: HttpMethod, pathAndQuery: string, send: () => Promise<R>): Promise<R> {
    try {
      return await this.options.limiter.schedule(method, send);
    } catch (error) {
      if (error instanceof LimiterClosedError) throw new ClientClosedError({ method, path: pathAndQuery });
      throw error;
    }
  }

  /**
   * `abandoned`: a page read ahead for a listing the consumer has left. It is not sent if it has not been yet: it may
   * still be waiting for a limiter slot or a retry, and its answer would be thrown away. One already sent is let
   * finish rather than aborted, which would cost the pooled connection for the sake of one page.
   */
  private async send<R>(
    spec: Omit<RequestSpec, 'shape'>,
    pathAndQuery: string,
    read: BodyReader<R>,
    abandoned?: AbortSignal,
  ): Promise<R> {
    const sent = { token: '' };
    try {
      return await this.sendWith(sent, spec, pathAndQuery, read, abandoned);
    } catch (error) {
      // The token may have been rotated under this process: the source reads it again, and a repeatable request is sent
      // once more with the new value. A POST is not: a rotate answered 401 must never be sent again with another token.
      if (!(error instanceof UnauthorizedError) || spec.jobToken !== undefined) throw error;
      const changed = await this.options.token.refresh(sent.token);
      if (!changed || !(spec.idempotent ?? isIdempotent(spec.method))) throw error;
      return this.sendWith(sent, spec, pathAndQuery, read, abandoned);
    }
  }

  /** `sent.token` is the token of the last attempt: each attempt takes the source's current one, retries included. */
  private sendWith<R>(
    sent: { token: string },
    spec: Omit<RequestSpec, 'shape'>,
    pathAndQuery: string,
    read: BodyReader<R>,
    abandoned?: AbortSignal,
  ): Promise<R> {
    const { method } = spec;
    const route = spec.endpoint.route;
    const payload = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    const path = `${this.prefix}/${pathAndQuery}`;
    return withRetry(
      { method, idempotent: spec.idempotent },
      async () => {
        abandoned?.throwIfAborted();
        return this.scheduled(method, pathAndQuery, async () => {
          abandoned?.throwIfAborted();
          const started = performance.now();
          const report = (status: number | 'network_error') =>
            this.options.onResponse?.({ method, route, status, durationMs: performance.now() - started });
          // Outside the try: a missing file is the caller's error, not a network failure to retry.
          const form = spec.multipart ? await multipartBody(spec.multipart) : undefined;
          sent.token = this.options.token.current();
          const headers = this.headersFor(spec, sent.token);
          let response: Dispatcher.ResponseData;
          try {
            response = await this.dispatcher.request({
              origin: this.origin,
              path,
              method,
              headers: form
                ? { ...headers, 'content-type': form.contentType, 'content-length': String(form.contentLength) }
                : headers,
              body: form ? form.open() : payload,
              headersTimeout: this.options.timeoutMs,
              bodyTimeout: this.options.timeoutMs,
            });
          } catch (error) {
            report('network_error');
            throw networkError(error, method, pathAndQuery);
          }
          const responseHeaders = normaliseHeaders(response.headers);
          this.options.limiter.observe(response.statusCode, responseHeaders);
          try {
            if (response.statusCode >= 200 && response.statusCode < 300) {
              const result = await read(response.body, responseHeaders, response.statusCode);
              report(response.statusCode);
              return result;
            }
            const text = (await response.body.text()).slice(0, MAX_ERROR_BODY);
            report(response.statusCode);
            throw errorFromResponse({
              status: response.statusCode,
              method,
              path: pathAndQuery,
              body: parseBody(responseHeaders, text),
              headers: responseHeaders,
              now: this.options.clock.now(),
              url: `${this.origin}${path}`,
            });
          } catch (error) {
            if (!response.body.destroyed) response.body.destroy();
            // Only socket and timeout failures (which carry a code) become NetworkError; a bug in a stream consumer
            // must surface as itself, not be retried as if the network had failed.
            if (error instanceof ApiError || errorCode(error) === undefined) throw error;
            // The answer started but its body broke off (reset, body timeout): the server has seen the request.
            report('network_error');
            throw networkError(error, method, pathAndQuery);
          }
        });
      },
      this.options.retry,
      this.options.clock,
      this.options.onRetry && ((event) => this.options.onRetry?.({ ...event, method, route })),
    );
  }
}
