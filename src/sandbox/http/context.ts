import type { IncomingHttpHeaders } from 'node:http';
import type { AccessTokenRecord } from '../access-tokens-state';
import type { JobRecord, SandboxState, UserRecord } from '../state';

/** One API request as handlers see it. */
export interface RequestContext {
  readonly method: string;
  /** Path below `/api/v4`, still percent-encoded (so `acme%2Fapi` stays one segment). */
  readonly path: string;
  /** Route parameters, percent-decoded. */
  readonly params: Record<string, string>;
  readonly query: URLSearchParams;
  /** Parameters sent in the body (form or JSON). The forge accepts most parameters in either place. */
  readonly body: Record<string, unknown>;
  readonly headers: IncomingHttpHeaders;
  readonly state: SandboxState;
  /** `http://host:port` as the client addressed the sandbox; used for web_url and Link headers. */
  readonly baseUrl: string;
  /** The authenticated caller (after `sudo`); set by the dispatcher for authenticated routes. */
  user?: UserRecord;
  /** The access token that authenticated the request (the token, not the `sudo` user's). */
  token?: AccessTokenRecord;
  /** The job whose CI job token authenticated the request. */
  job?: JobRecord;
}

export interface Reply {
  status: number;
  json?: unknown;
  /** A plain-text body (job logs, some proxy-style fault answers). */
  text?: string;
  /** Raw bytes (downloads); `Content-Type` from `headers`, else `application/octet-stream`. */
  binary?: Buffer;
  headers?: Record<string, string>;
}

/** Thrown by handlers to answer with an error; the body shapes are the forge's (Grape's) own. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`${status} ${JSON.stringify(body)}`);
    this.name = 'ApiError';
  }
}

/** `404 <Thing> Not Found` from `not_found!('Thing')`; bare `404 Not found` from an ActiveRecord `find`. */
export function notFound(what?: string): ApiError {
  return new ApiError(404, { message: what ? `404 ${what} Not Found` : '404 Not found' });
}

export function unauthorized(): ApiError {
  return new ApiError(401, { message: '401 Unauthorized' });
}

export function forbidden(reason?: string): ApiError {
  return new ApiError(403, { message: reason ? `403 Forbidden - ${reason}` : '403 Forbidden' });
}

export function badRequest(reason: string): ApiError {
  return new ApiError(400, { message: `400 Bad request - ${reason}` });
}

/** A parameter validation failure, answered by Grape as `{"error": "..."}`. */
export function paramError(message: string): ApiError {
  return new ApiError(400, { error: message });
}

/** A model validation failure: `{"message": {"field": ["text", ...]}}`. */
export function validationError(fields: Record<string, string[]>): ApiError {
  return new ApiError(400, { message: fields });
}

export const ok = (json: unknown, status = 200): Reply => ({ status, json });
export const noContent = (status = 204): Reply => ({ status });

// ---- parameters ---------------------------------------------------------------------------------------------

export function param(ctx: RequestContext, name: string): string | undefined {
  const fromBody = ctx.body[name];
  if (typeof fromBody === 'string') return fromBody;
  if (typeof fromBody === 'number' || typeof fromBody === 'boolean') return String(fromBody);
  return ctx.query.get(name) ?? undefined;
}

export function requiredParam(ctx: RequestContext, name: string): string {
  const value = param(ctx, name);
  if (value === undefined || value === '') throw paramError(`${name} is missing`);
  return value;
}

/** An array parameter: repeated `name[]=v` (GitLab's REST API conventions), a single `name=v`, or a JSON array. */
export function listParam(ctx: RequestContext, name: string): string[] | undefined {
  const fromBody = ctx.body[name] ?? ctx.body[`${name}[]`];
  if (Array.isArray(fromBody)) return fromBody.map(String);
  if (typeof fromBody === 'string') return [fromBody];
  const values = [...ctx.query.getAll(`${name}[]`), ...ctx.query.getAll(name)];
  return values.length > 0 ? values : undefined;
}

const TRUE = new Set(['true', 't', '1', 'yes', 'y', 'on']);
const FALSE = new Set(['false', 'f', '0', 'no', 'n', 'off']);

export function boolParam(ctx: RequestContext, name: string): boolean | undefined {
  const value = param(ctx, name);
  if (value === undefined) return undefined;
  if (TRUE.has(value.toLowerCase())) return true;
  if (FALSE.has(value.toLowerCase())) return false;
  throw paramError(`${name} is invalid`);
}

export function intParam(ctx: RequestContext, name: string): number | undefined {
  const value = param(ctx, name);
  if (value === undefined || value === '') return undefined;
  if (!/^-?\d+$/.test(value.trim())) throw paramError(`${name} is invalid`);
  return Number(value);
}

/** A route parameter declared `Integer` by the forge: anything else fails validation with `<name> is invalid`. */
export function intRouteParam(ctx: RequestContext, name: string): number {
  const value = ctx.params[name];
  if (value === undefined || !/^\d+$/.test(value)) throw paramError(`${name} is invalid`);
  return Number(value);
}

export function timestampParam(ctx: RequestContext, name: string): string | undefined {
  const value = param(ctx, name);
  if (value === undefined || value === '') return undefined;
  const parsed = Date.parse(value);
  if (Number.isNaN(parsed)) throw paramError(`${name} is invalid`);
  return new Date(parsed).toISOString();
}

export function enumParam<T extends string>(ctx: RequestContext, name: string, values: readonly T[]): T | undefined {
  const value = param(ctx, name);
  if (value === undefined) return undefined;
  if (!(values as readonly string[]).includes(value)) throw paramError(`${name} does not have a valid value`);
  return value as T;
}
