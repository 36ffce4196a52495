import { Controller, Get, Inject, Logger, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { APP_CONFIG } from '../config/config.module';
import type { AppConfig } from '../config/schema';
import { PauseSwitch } from '../engine/pause-switch';
import { AUDIT_ID } from '../engine/stores/audit';
import { readBody } from '../http/read-body';
import { redactor } from '../logging/redact';
import { type Admission, ConsoleAccess, SESSION_COOKIE, sameOrigin } from './access';
import { ConsoleReader } from './console-reader';
import { ConsoleExplain } from './explain';
import type { Html } from './html';
import { type AuditQuery, auditEntryPage, auditPage } from './views/audit';
import { explainPage } from './views/explain';
import { type PageFrame, messagePage } from './views/layout';
import { loginPage } from './views/login';
import { overviewPage } from './views/overview';
import { policyPage } from './views/policy';
import { CONSOLE_CSS } from './views/style';

/** Forms are a reason and a token or two: anything larger is no form of the console's. */
const FORM_LIMIT = 8 * 1024;
/** Entries `/audit.ndjson` gives at most in one answer; `before` pages on. */
const NDJSON_MAX = 1_000;

/**
 * No script at all, styles and forms of the console's own only, never framed; nothing cached (pages show live state and
 * carry form tokens).
 */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy':
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'same-origin',
  'Cache-Control': 'no-store',
};

/** An admitted request: its session (for form tokens) and the frame its page is drawn in. */
interface Visit {
  readonly session: string;
  readonly frame: PageFrame;
}

/**
 * The operator console (docs/console.md): server-rendered pages on the daemon's HTTP port, read from Redis so
 * every replica shows the same, and the pause switch. `/healthz`, `/readyz`, `/metrics` and the webhook route are not
 * the console's and stay as they are.
 */
@Controller()
export class ConsoleController {
  private readonly logger = new Logger('Console');
  private readonly access: ConsoleAccess;

  constructor(
    private readonly reader: ConsoleReader,
    private readonly explainer: ConsoleExplain,
    private readonly pauses: PauseSwitch,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.access = new ConsoleAccess(config.http);
  }

  @Get('console.css')
  style(@Res() response: Response): void {
    response.set(SECURITY_HEADERS).type('text/css').send(CONSOLE_CSS);
  }

  @Get()
  overview(@Req() request: Request, @Res() response: Response): Promise<void> {
    return this.serve(request, response, async (visit) => overviewPage(await this.reader.overview(), visit.frame));
  }

  @Get('policies/:name')
  policy(@Req() request: Request, @Res() response: Response): Promise<void> {
    return this.serve(request, response, async (visit) => {
      const detail = await this.reader.policy(param(request, 'name'));
      return detail ? policyPage(detail, visit.frame) : this.unknownPolicy(param(request, 'name'), visit);
    });
  }

  @Get('policies/:name/plan')
  explain(@Req() request: Request, @Res() response: Response): Promise<void> {
    return this.serve(request, response, async (visit) => {
      const name = param(request, 'name');
      if (!this.reader.policyNames().includes(name)) return this.unknownPolicy(name, visit);
      const explained = await this.explainer.explain(name);
      if (explained.kind === 'busy') {
        return {
          status: 409,
          page: messagePage(
            'Explain is running',
            visit.frame,
            `An explain of ${name} is running already, here or on another replica; try again in a moment.`,
          ),
        };
      }
      return explainPage(explained.result, explained.tookMs, visit.frame);
    });
  }

  @Get('audit')
  audit(@Req() request: Request, @Res() response: Response): Promise<void> {
    return this.serve(request, response, async (visit) => {
      const { query, before, problem } = auditQuery(request);
      const page = await this.reader.auditPage(query, before);
      return auditPage(query, page, this.reader.policyNames(), visit.frame, problem);
    });
  }

  /** The same entries for scripts, one JSON object a line; the `Link` header (rel="next") pages on. */
  @Get('audit.ndjson')
  async auditNdjson(@Req() request: Request, @Res() response: Response): Promise<void> {
    if (!this.admitted(request, response)) return;
    const { query, before, problem } = auditQuery(request);
    if (problem) {
      response.status(400).set(SECURITY_HEADERS).type('text/plain').send(`${problem}\n`);
      return;
    }
    try {
      const limit = Math.min(NDJSON_MAX, Math.max(1, Number(text(request.query.limit) ?? 100) || 100));
      const page = await this.reader.auditPage(query, before, limit);
      if (page.before) {
        const next = new URLSearchParams(request.query as Record<string, string>);
        next.set('before', page.before);
        response.set('Link', `</audit.ndjson?${next.toString()}>; rel="next"`);
      }
      const lines = page.entries.map((entry) => `${redactor.redactText(JSON.stringify(entry))}\n`).join('');
      response.status(200).set(SECURITY_HEADERS).type('application/x-ndjson').send(lines);
    } catch (error) {
      this.failed(request, response, error);
    }
  }

  @Get('audit/:id')
  auditEntry(@Req() request: Request, @Res() response: Response): Promise<void> {
    return this.serve(request, response, async (visit) => {
      const entry = await this.reader.auditEntry(param(request, 'id'));
      if (entry) return auditEntryPage(entry, visit.frame);
      return {
        status: 404,
        page: messagePage(
          'No such entry',
          visit.frame,
          'The audit trail holds no entry with this id (older entries are trimmed).',
        ),
      };
    });
  }

  @Post('policies/:name/pause')
  pause(@Req() request: Request, @Res() response: Response): Promise<void> {
    return this.change(request, response, async (form, name) => {
      const reason = (form.get('reason') ?? '').trim().slice(0, 500);
      if (reason === '') return 'say why the policy is paused';
      await this.pauses.pause(name, reason, `console (${remote(request)})`);
      return undefined;
    });
  }

  @Post('policies/:name/resume')
  resume(@Req() request: Request, @Res() response: Response): Promise<void> {
    return this.change(request, response, async (_form, name) => {
      await this.pauses.resume(name, `console (${remote(request)})`);
      return undefined;
    });
  }

  @Get('login')
  loginForm(@Req() request: Request, @Res() response: Response): void {
    if (!this.access.protectedByToken) {
      response.redirect(303, '/');
      return;
    }
    response
      .status(200)
      .set(SECURITY_HEADERS)
      .type('html')
      .send(loginPage(nextPath(text(request.query.next)), false).text);
  }

  @Post('login')
  async login(@Req() request: Request, @Res() response: Response): Promise<void> {
    const form = await readForm(request);
    if (!this.access.protectedByToken || !form || !sameOrigin(request)) {
      response.status(400).set(SECURITY_HEADERS).type('text/plain').send('not a login of this console\n');
      return;
    }
    const next = nextPath(form.get('next') ?? undefined);
    const session = this.access.login(form.get('token') ?? '');
    if (session === undefined) {
      response.status(401).set(SECURITY_HEADERS).type('html').send(loginPage(next, true).text);
      return;
    }
    response.cookie(SESSION_COOKIE, session, { httpOnly: true, sameSite: 'strict', path: '/', secure: request.secure });
    response.redirect(303, next);
  }

  @Post('logout')
  async logout(@Req() request: Request, @Res() response: Response): Promise<void> {
    const admission = this.access.admit(request);
    const form = await readForm(request);
    if (
      admission.kind !== 'admitted' ||
      !form ||
      !sameOrigin(request) ||
      !this.access.formTokenMatches(admission.session, form.get('form_token') ?? undefined)
    ) {
      response
        .status(403)
        .set(SECURITY_HEADERS)
        .type('text/plain')
        .send('refused: this form is not from this console\n');
      return;
    }
    response.clearCookie(SESSION_COOKIE, { path: '/' });
    response.redirect(303, '/login');
  }

  /** A console page: admitted, drawn, sent with the security headers; a failure is a page that says what failed. */
  private async serve(
    request: Request,
    response: Response,
    draw: (visit: Visit) => Promise<Html | { status: number; page: Html }>,
  ): Promise<void> {
    const admission = this.admitted(request, response);
    if (!admission) return;
    const visit = this.visit(admission);
    try {
      const drawn = await draw(visit);
      const { status, page } = 'page' in drawn ? drawn : { status: 200, page: drawn };
      response.status(status).set(SECURITY_HEADERS).type('html').send(page.text);
    } catch (error) {
      this.failed(request, response, error, visit);
    }
  }

  /** A form that changes something: admitted, from this console's own page (origin and form token), then done. */
  private async change(
    request: Request,
    response: Response,
    act: (form: URLSearchParams, policy: string) => Promise<string | undefined>,
  ): Promise<void> {
    const admission = this.admitted(request, response);
    if (!admission) return;
    const visit = this.visit(admission);
    const form = await readForm(request);
    if (
      !form ||
      !sameOrigin(request) ||
      !this.access.formTokenMatches(admission.session, form.get('form_token') ?? undefined)
    ) {
      response
        .status(403)
        .set(SECURITY_HEADERS)
        .type('html')
        .send(
          messagePage(
            'Refused',
            visit.frame,
            'This form is not from this console (its token is missing or stale): reload the page and try again.',
          ).text,
        );
      return;
    }
    const name = param(request, 'name');
    if (!this.reader.policyNames().includes(name)) {
      const { status, page } = this.unknownPolicy(name, visit);
      response.status(status).set(SECURITY_HEADERS).type('html').send(page.text);
      return;
    }
    try {
      const problem = await act(form, name);
      if (problem) {
        response
          .status(400)
          .set(SECURITY_HEADERS)
          .type('html')
          .send(messagePage('Not done', visit.frame, problem).text);
        return;
      }
      response.redirect(303, `/policies/${encodeURIComponent(name)}`);
    } catch (error) {
      this.failed(request, response, error, visit);
    }
  }

  /** The admission of a request, or undefined once it has been answered (the console off, or no token). */
  private admitted(request: Request, response: Response): Extract<Admission, { kind: 'admitted' }> | undefined {
    const admission = this.access.admit(request);
    if (admission.kind === 'admitted') return admission;
    response.set(SECURITY_HEADERS);
    if (admission.kind === 'off') {
      response
        .status(404)
        .type('text/plain')
        .send('The console is off: http.host is not a loopback address and http.console_token is not set.\n');
    } else if (request.method === 'GET' && request.accepts(['html', 'json', 'text']) === 'html') {
      response.redirect(303, `/login?next=${encodeURIComponent(request.originalUrl)}`);
    } else {
      response
        .status(401)
        .set('WWW-Authenticate', 'Bearer realm="forgewarden console"')
        .type('text/plain')
        .send('401 Unauthorized: the console token is needed (Authorization: Bearer, or log in at /login)\n');
    }
    return undefined;
  }

  private visit(admission: Extract<Admission, { kind: 'admitted' }>): Visit {
    const frame: PageFrame = {
      now: new Date(),
      formToken: this.access.formToken(admission.session),
      cookieSession: admission.session !== 'open' && admission.session !== 'bearer',
    };
    return { session: admission.session, frame };
  }

  private unknownPolicy(name: string, visit: Visit): { status: number; page: Html } {
    return {
      status: 404,
      page: messagePage(
        'No such policy',
        visit.frame,
        `No policy named "${name}" is configured; the overview lists those that are.`,
      ),
    };
  }

  private failed(request: Request, response: Response, error: unknown, visit?: Visit): void {
    const message = redactor.redactText(error instanceof Error ? error.message : String(error));
    this.logger.error(`${request.method} ${request.path} failed: ${message}`);
    if (response.headersSent) return;
    response.status(503).set(SECURITY_HEADERS);
    if (visit)
      response
        .type('html')
        .send(messagePage('Not available', visit.frame, `The console could not read what it shows: ${message}`).text);
    else response.type('text/plain').send(`the console could not read what it shows: ${message}\n`);
  }
}

/** The filter of `/audit` and `/audit.ndjson`, where the page starts (`before`), and what is wrong with them, if anything. */
function auditQuery(request: Request): { query: AuditQuery; before?: string; problem?: string } {
  const from = text(request.query.from);
  const to = text(request.query.to);
  const fromMs = from !== undefined ? moment(from) : undefined;
  const toMs = to !== undefined ? moment(to) : undefined;
  // Checked here, not by Redis: a mistyped cursor is the asker's mistake (400), not a console that cannot read (503).
  const given = text(request.query.before);
  const before = given !== undefined && AUDIT_ID.test(given) ? given : undefined;
  const problems = [
    ...(from !== undefined && fromMs === undefined
      ? [`"from" is no time: write it as 2026-11-27T08:00 (UTC) or with a zone`]
      : []),
    ...(to !== undefined && toMs === undefined
      ? [`"to" is no time: write it as 2026-11-27T18:00 (UTC) or with a zone`]
      : []),
    ...(given !== undefined && before === undefined
      ? [
          `"before" is no audit entry id: it is the id of a page's last entry, such as 1795806046225-0, as the "Older entries" link and the Link header carry it`,
        ]
      : []),
  ];
  const query: AuditQuery = {
    ...optional('policy', text(request.query.policy)),
    ...optional('outcome', text(request.query.outcome)),
    ...optional('action', text(request.query.action)),
    ...optional('text', text(request.query.q)),
    ...optional('from', from),
    ...optional('to', to),
    ...(fromMs !== undefined ? { fromMs } : {}),
    ...(toMs !== undefined ? { toMs } : {}),
  };
  const start = before !== undefined ? { before } : {};
  return problems.length > 0 ? { query, ...start, problem: problems.join('; ') } : { query, ...start };
}

function optional<K extends string>(key: K, value: string | undefined): Partial<Record<K, string>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, string>);
}

/** A time as typed: a zone when given, UTC when not. */
function moment(typed: string): number | undefined {
  const zoned = /(?:Z|[+-]\d{2}:?\d{2})$/i.test(typed) || /^\d{4}-\d{2}-\d{2}$/.test(typed) ? typed : `${typed}Z`;
  const ms = Date.parse(zoned);
  return Number.isNaN(ms) ? undefined : ms;
}

/** A query parameter given once and not empty; repeated or empty ones count as absent. */
function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

function param(request: Request, name: string): string {
  const value = request.params[name];
  return typeof value === 'string' ? value : '';
}

/** Where the login form leads: a path of this console, never another site (`//evil.example` is refused). */
function nextPath(next: string | undefined): string {
  return next !== undefined && next.startsWith('/') && !next.startsWith('//') && !next.includes('\\') ? next : '/';
}

/** A form of the console's, or undefined when it is none (too large, another type). */
async function readForm(request: Request): Promise<URLSearchParams | undefined> {
  if (!/^application\/x-www-form-urlencoded\s*(;|$)/i.test(request.header('content-type') ?? '')) return undefined;
  const body = await readBody(request, FORM_LIMIT);
  return body === undefined ? undefined : new URLSearchParams(body.toString('utf8'));
}

function remote(request: Request): string {
  return request.socket.remoteAddress ?? 'unknown address';
}
