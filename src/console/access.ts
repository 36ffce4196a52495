import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';
import { isLoopback } from '../config/load';
import type { HttpConfig } from '../config/schema';

/** The cookie the login form sets: a digest of the token, never the token itself. */
export const SESSION_COOKIE = 'forgewarden_console';

/** How a request may see the console. */
export type Admission =
  /** Served: loopback without a token, a right bearer token, or the login form's cookie. */
  | { readonly kind: 'admitted'; readonly session: string }
  /** The console is off: the host is not loopback and no token is configured. */
  | { readonly kind: 'off' }
  /** A token is needed and the request brings none that is right. */
  | { readonly kind: 'unauthorized' };

/**
 * Who may see the console and press its buttons (docs/console.md): on a loopback `http.host` it is open; on any
 * other it is off unless `http.console_token` is set, and then every console page asks for it (a bearer header, or the
 * cookie of the login form). Forms that change something carry a token derived from the session (CSRF), so a page of
 * another site cannot press the pause button through a browser that is logged in, or that reaches a loopback console.
 */
export class ConsoleAccess {
  private readonly token: Buffer | undefined;
  /** Keys the session cookie and the form tokens: from the console token, so every replica accepts another's. */
  private readonly key: Buffer;
  readonly open: boolean;

  constructor(http: HttpConfig) {
    this.token = http.console_token === undefined ? undefined : Buffer.from(http.console_token, 'utf8');
    this.open = this.token === undefined && isLoopback(http.host);
    // Without a token (loopback) each process has its own key: a form is posted back to the process that served it.
    this.key = this.token
      ? createHmac('sha256', this.token).update('forgewarden console key').digest()
      : randomBytes(32);
  }

  /** Whether a token is asked for (the login form is offered). */
  get protectedByToken(): boolean {
    return this.token !== undefined;
  }

  admit(request: Request): Admission {
    if (this.token === undefined) return this.open ? { kind: 'admitted', session: 'open' } : { kind: 'off' };
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(request.header('authorization') ?? '')?.[1];
    if (bearer !== undefined && this.tokenMatches(bearer)) return { kind: 'admitted', session: 'bearer' };
    const cookie = readCookie(request.header('cookie'), SESSION_COOKIE);
    if (cookie !== undefined && sameText(cookie, this.sessionValue())) return { kind: 'admitted', session: cookie };
    return { kind: 'unauthorized' };
  }

  /** The login form's check; the cookie's value when the token is right. */
  login(token: string): string | undefined {
    return this.tokenMatches(token) ? this.sessionValue() : undefined;
  }

  /** The form token of a session: what a page puts in its forms, and what a POST must bring back. */
  formToken(session: string): string {
    return this.digest(`form:${session}`);
  }

  formTokenMatches(session: string, given: string | undefined): boolean {
    return given !== undefined && sameText(given, this.formToken(session));
  }

  private sessionValue(): string {
    return this.digest('session');
  }

  private tokenMatches(given: string): boolean {
    if (this.token === undefined) return false;
    // Compared as digests, in constant time: the length of the token does not show either.
    return timingSafeEqual(sha(Buffer.from(given, 'utf8')), sha(this.token));
  }

  private digest(text: string): string {
    return createHmac('sha256', this.key).update(text).digest('base64url');
  }
}

/**
 * A POST from a page of another origin is refused whatever it carries: browsers send `Origin` with every POST (and
 * `Sec-Fetch-Site`), so this holds even before the form token is looked at.
 */
export function sameOrigin(request: Request): boolean {
  const site = request.header('sec-fetch-site');
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return false;
  const origin = request.header('origin');
  if (origin === undefined || origin === 'null') return origin === undefined;
  try {
    return new URL(origin).host === request.header('host');
  } catch {
    return false;
  }
}

function sha(data: Buffer): Buffer {
  return createHmac('sha256', 'forgewarden').update(data).digest();
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}

export function readCookie(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}
