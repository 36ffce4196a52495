import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { FaultDecision } from '../faults';
import type { SandboxState } from '../state';
import { ApiError, unauthorized, forbidden, notFound, type Reply, type RequestContext } from './context';
import { multipartBoundary, parseMultipart } from './multipart';
import type { Router } from './router';
import { authenticateToken } from './token-auth';

/**
 * The HTTP front of the sandbox: parses the request, applies injected faults, authenticates, dispatches to the API
 * router (under `/api/v4`) or the control router (under `/__sandbox`, no auth, no faults, not logged), and records
 * every API request in the request log. A fault answers before the forge acts, or, with `after`, once it has acted.
 */

const API_PREFIX = '/api/v4';
const CONTROL_PREFIX = '/__sandbox';
const SECRET_PARAMS = new Set(['private_token', 'access_token', 'job_token']);
/** Secrets that are written in bodies: a webhook's or integration's `token`, an integration's `password`. */
const SECRET_BODY_PARAMS = new Set([...SECRET_PARAMS, 'token', 'password']);
const LOGGED_HEADERS = [
  'accept',
  'content-type',
  'user-agent',
  'sudo',
  'idempotency-key',
  'x-request-id',
  // What Forgewarden's request was for (policy, phase, action): lets a test tell a precondition's read from an observation.
  'x-forgewarden-policy',
  'x-forgewarden-phase',
  'x-forgewarden-action',
];

export function createSandboxServer(state: SandboxState, api: Router, control: Router): Server {
  return createServer((req, res) => {
    handle(state, api, control, req, res).catch((error: unknown) => {
      process.stderr.write(`sandbox: unexpected error: ${String(error)}\n`);
      if (!res.headersSent) write(res, 'GET', { status: 500, json: { message: '500 Internal Server Error' } });
      else res.destroy();
    });
  });
}

async function handle(
  state: SandboxState,
  api: Router,
  control: Router,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const startedAt = performance.now();
  const method = (req.method ?? 'GET').toUpperCase();
  const url = new URL(req.url ?? '/', 'http://sandbox.invalid');
  const path = url.pathname;
  const baseUrl = `http://${req.headers.host ?? 'localhost'}`;

  let body: Record<string, unknown>;
  try {
    body = await readBody(req);
  } catch {
    write(res, method, { status: 400, json: { error: 'The request body could not be parsed' } });
    return;
  }

  if (path === CONTROL_PREFIX || path.startsWith(`${CONTROL_PREFIX}/`)) {
    const ctx = context(state, method, path.slice(CONTROL_PREFIX.length), url, body, req, baseUrl);
    write(res, method, await route(control, ctx));
    return;
  }

  const log = (status: number, fault: string | null): void => {
    state.requestLog.push({
      time: state.nowIso(),
      method,
      path,
      query: redactedQuery(url.searchParams, path),
      headers: loggedHeaders(req),
      body: redactedBody(body, path),
      status,
      fault,
      duration_ms: Math.round(performance.now() - startedAt),
    });
  };

  // A held request waits here, before the forge (or a fault) looks at it, until the test lets it go.
  await state.holds.pass(method, path, req.headers['user-agent'] ?? '');
  const decision = state.faults.decide(method, path, Math.floor(state.clock.now() / 1000));
  if (decision.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, decision.latencyMs));
  if (decision.kind !== 'pass' && !decision.after) {
    answerWithFault(res, method, decision, log, '');
    return;
  }

  let reply: Reply;
  if (path === API_PREFIX || path.startsWith(`${API_PREFIX}/`)) {
    const ctx = context(state, method, path.slice(API_PREFIX.length), url, body, req, baseUrl);
    // Watchers see the forge as it is at the very moment this request is handled (the handler runs in the same turn).
    state.watch({ method, path, headers: loggedHeaders(req), body });
    reply = await route(api, ctx);
  } else {
    reply = { status: 404, json: { error: '404 Not Found' } };
  }
  if (decision.kind !== 'pass') {
    // The forge has acted; the client gets the fault instead. The log names the forge's own status after the fault,
    // so a test can count the writes that took effect although their answer was lost.
    answerWithFault(res, method, decision, log, ` after ${reply.status}`);
    return;
  }
  const bytesPerSecond = state.settings.downloadBytesPerSecond;
  if (reply.binary !== undefined && bytesPerSecond > 0 && method !== 'HEAD') {
    // Logged once the answer has started, like any other; the bytes follow at the set pace.
    const sent = writePaced(res, reply, reply.binary, bytesPerSecond);
    log(reply.status, null);
    await sent;
    return;
  }
  write(res, method, reply);
  log(reply.status, null);
}

/** Answers with an injected fault (or cuts the connection) and logs it as `reset` or `status N`, plus `suffix`. */
function answerWithFault(
  res: ServerResponse,
  method: string,
  decision: Exclude<FaultDecision, { kind: 'pass' }>,
  log: (status: number, fault: string | null) => void,
  suffix: string,
): void {
  if (decision.kind === 'reset') {
    log(0, `reset${suffix}`);
    res.socket?.destroy();
    return;
  }
  const reply = faultReply(decision.status, decision.retryAfter, decision.rateLimitReset, decision.body);
  write(res, method, reply);
  log(reply.status, `status ${reply.status}${suffix}`);
}

function context(
  state: SandboxState,
  method: string,
  path: string,
  url: URL,
  body: Record<string, unknown>,
  req: IncomingMessage,
  baseUrl: string,
): RequestContext {
  return { method, path, params: {}, query: url.searchParams, body, headers: req.headers, state, baseUrl };
}

async function route(router: Router, base: RequestContext): Promise<Reply> {
  const match = router.match(base.method, base.path);
  // Unknown routes get Grape's catch-all answers, before any authentication.
  if (match.kind === 'not-found') return { status: 404, json: { error: '404 Not Found' } };
  if (match.kind === 'method-not-allowed') return { status: 405, json: { error: '405 Not Allowed' } };
  const ctx: RequestContext = { ...base, params: match.params };
  try {
    if (match.auth === 'user') authenticateUser(ctx);
    if (match.auth === 'job') authenticateJob(ctx);
    return await match.handler(ctx);
  } catch (error) {
    if (error instanceof ApiError) return { status: error.status, json: error.body };
    throw error;
  }
}

/** Personal access token from `PRIVATE-TOKEN`, `Authorization: Bearer`, or `private_token`/`access_token`. */
function userToken(ctx: RequestContext): string | undefined {
  const header = ctx.headers['private-token'];
  if (typeof header === 'string' && header !== '') return header;
  const authorization = ctx.headers.authorization;
  const bearer = typeof authorization === 'string' ? /^Bearer\s+(.+)$/i.exec(authorization) : null;
  if (bearer) return bearer[1].trim();
  return ctx.query.get('private_token') ?? ctx.query.get('access_token') ?? undefined;
}

/** The forge's `find_current_user!`: a blocked account's valid token is refused with the reason, as 403. */
const BLOCKED = 'Your account has been blocked.';

function authenticateUser(ctx: RequestContext): void {
  const value = userToken(ctx);
  if (value === undefined) throw unauthorized();
  const { user, token } = authenticateToken(ctx, value);
  ctx.user = user;
  ctx.token = token;
  const sudo = (typeof ctx.headers.sudo === 'string' ? ctx.headers.sudo : undefined) ?? ctx.query.get('sudo');
  if (sudo === undefined || sudo === null || sudo === '') return;
  // Administrators may act as another user (`sudo`, GitLab's REST API conventions).
  if (!user.is_admin) throw forbidden('Must be admin to use sudo');
  const target = /^\d+$/.test(sudo) ? ctx.state.users.get(Number(sudo)) : ctx.state.userByUsername(sudo);
  if (!target) throw new ApiError(404, { message: `404 User with ID or username '${sudo}' Not Found` });
  ctx.user = target;
}

/**
 * CI job token from `JOB-TOKEN` or `job_token` (GitLab's "Jobs API"). As on the forge, a token authenticates only
 * while its job runs; a personal token on a job-token endpoint finds no job (404).
 */
function authenticateJob(ctx: RequestContext): void {
  const header = ctx.headers['job-token'];
  const token = (typeof header === 'string' && header !== '' ? header : undefined) ?? ctx.query.get('job_token');
  if (token === undefined || token === null) {
    authenticateUser(ctx);
    throw notFound('Job');
  }
  const job = ctx.state.jobByToken(token);
  const user = job?.user_id !== null && job?.user_id !== undefined ? ctx.state.users.get(job.user_id) : undefined;
  if (!job || job.status !== 'running' || !user) throw unauthorized();
  if (user.state === 'blocked') throw forbidden(BLOCKED);
  ctx.job = job;
  ctx.user = user;
}

function faultReply(status: number, retryAfter?: number, rateLimitReset?: number, body?: unknown): Reply {
  const headers: Record<string, string> = {};
  if (retryAfter !== undefined) headers['Retry-After'] = String(retryAfter);
  if (rateLimitReset !== undefined) {
    headers['RateLimit-Limit'] = '600';
    headers['RateLimit-Remaining'] = '0';
    headers['RateLimit-Reset'] = String(rateLimitReset);
    headers['RateLimit-ResetTime'] = new Date(rateLimitReset * 1000).toUTCString();
  }
  if (body !== undefined) {
    return typeof body === 'string' ? { status, text: body, headers } : { status, json: body, headers };
  }
  // The forge's rate limiter answers in plain text; server errors come as JSON from the API or text from a proxy.
  if (status === 429) return { status, text: 'Retry later\n', headers };
  if (status === 502 || status === 503 || status === 504)
    return { status, text: `${status} ${STATUS_CODES[status]}\n`, headers };
  return { status, json: { message: `${status} ${STATUS_CODES[status] ?? 'Error'}` }, headers };
}

function write(res: ServerResponse, method: string, reply: Reply): void {
  const { headers, payload } = encoded(reply);
  res.writeHead(reply.status, headers);
  res.end(method === 'HEAD' ? undefined : payload);
}

function encoded(reply: Reply): { headers: Record<string, string>; payload: string | Buffer } {
  const headers: Record<string, string> = { ...reply.headers };
  let payload: string | Buffer = '';
  if (reply.binary !== undefined) {
    headers['Content-Type'] ??= 'application/octet-stream';
    payload = reply.binary;
  } else if (reply.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(reply.json);
  } else if (reply.text !== undefined) {
    headers['Content-Type'] = 'text/plain; charset=utf-8';
    payload = reply.text;
  }
  headers['Content-Length'] = String(Buffer.byteLength(payload));
  return { headers, payload };
}

/** Slices a second of a paced download is written in: small enough to stop a client part-way through. */
const PACE_SLICES_PER_SECOND = 10;

/**
 * Writes a binary answer at `bytesPerSecond` (`download_bytes_per_second`), with its whole `Content-Length` up front,
 * so a test can kill a client mid-download. Each slice waits for the time the bytes before it took at that pace
 * (and for the socket to drain); resolves when everything is written or the client went away.
 */
async function writePaced(res: ServerResponse, reply: Reply, data: Buffer, bytesPerSecond: number): Promise<void> {
  res.writeHead(reply.status, encoded(reply).headers);
  const slice = Math.max(1, Math.ceil(bytesPerSecond / PACE_SLICES_PER_SECOND));
  const startedAt = performance.now();
  for (let offset = 0; offset < data.length; offset += slice) {
    const due = startedAt + (offset / bytesPerSecond) * 1000;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    if (res.destroyed) return;
    if (!res.write(data.subarray(offset, offset + slice))) await settled(res, 'drain');
  }
  if (res.destroyed) return;
  const finished = settled(res, 'finish');
  res.end();
  await finished;
}

/** Resolves on `event`, or when the connection closes first (the client went away). */
function settled(res: ServerResponse, event: 'drain' | 'finish'): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off(event, done);
      res.off('close', done);
      resolve();
    };
    res.on(event, done);
    res.on('close', done);
  });
}

async function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const bytes = Buffer.concat(chunks);
  const boundary = multipartBoundary(req.headers['content-type']);
  if (boundary !== undefined) return parseMultipart(bytes, boundary);
  const raw = bytes.toString('utf8');
  if (raw.trim() === '') return {};
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type === 'application/json') {
    const parsed: unknown = JSON.parse(raw);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
    return parsed as Record<string, unknown>;
  }
  if (type === 'application/x-www-form-urlencoded' || type === '') {
    const form = new URLSearchParams(raw);
    const result: Record<string, unknown> = {};
    for (const key of new Set(form.keys())) {
      const values = form.getAll(key);
      result[key] = key.endsWith('[]') ? values : values[values.length - 1];
    }
    return result;
  }
  return {};
}

function redactedQuery(query: URLSearchParams, path: string): Record<string, string | string[]> {
  const result: Record<string, string | string[]> = {};
  const variable = VARIABLE_PATH.test(path);
  for (const key of new Set(query.keys())) {
    const values = query
      .getAll(key)
      .map((v) => (SECRET_PARAMS.has(key) || (variable && key === 'value') ? '[redacted]' : v));
    result[key] = values.length === 1 ? values[0] : values;
  }
  return result;
}

function redactedBody(body: Record<string, unknown>, path: string): Record<string, unknown> {
  const variable = VARIABLE_PATH.test(path);
  return Object.fromEntries(
    Object.entries(body).map(([k, v]) => [
      k,
      SECRET_BODY_PARAMS.has(k) || (variable && k === 'value')
        ? '[redacted]'
        : SECRET_LISTS.has(k)
          ? redactedValues(v)
          : v,
    ]),
  );
}

/** A CI/CD variable's `value` is what the variable keeps secret, in the query or the body. */
const VARIABLE_PATH = /\/variables(\/|$)/;

/** A webhook's `custom_headers` and `url_variables` (`[{key, value}]`): the keys stay, the values may be secrets. */
const SECRET_LISTS = new Set(['custom_headers', 'url_variables']);

function redactedValues(list: unknown): unknown {
  if (!Array.isArray(list)) return list;
  return list.map((item: unknown) =>
    typeof item === 'object' && item !== null && 'value' in item ? { ...item, value: '[redacted]' } : item,
  );
}

/** Selected headers; credentials are only said to be present, never recorded. */
function loggedHeaders(req: IncomingMessage): Record<string, string> {
  const result: Record<string, string> = {};
  for (const name of LOGGED_HEADERS) {
    const value = req.headers[name];
    if (typeof value === 'string') result[name] = value;
  }
  if (req.headers['private-token'] !== undefined) result['private-token'] = '[redacted]';
  if (req.headers['job-token'] !== undefined) result['job-token'] = '[redacted]';
  const authorization = req.headers.authorization;
  if (typeof authorization === 'string') result.authorization = `${authorization.split(' ')[0]} [redacted]`;
  return result;
}
