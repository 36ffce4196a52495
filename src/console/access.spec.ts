import type { Request } from 'express';
import { ConsoleAccess, SESSION_COOKIE, readCookie, sameOrigin } from './access';

const TOKEN = 'console-token-0123456789';

function request(headers: Record<string, string>): Request {
  const lower = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
  return { header: (name: string) => lower[name.toLowerCase()] } as unknown as Request;
}

describe('ConsoleAccess', () => {
  it('is open on a loopback host without a token, and off on any other host without one', () => {
    for (const host of ['127.0.0.1', '::1', 'localhost', '127.0.1.1']) {
      expect(new ConsoleAccess({ host, port: 1 }).admit(request({})).kind).toBe('admitted');
    }
    for (const host of ['0.0.0.0', '10.1.2.3', '::', 'forgewarden.example.com']) {
      expect(new ConsoleAccess({ host, port: 1 }).admit(request({})).kind).toBe('off');
    }
  });

  it('asks for the token when one is set, even on loopback: a bearer header or the login cookie', () => {
    const access = new ConsoleAccess({ host: '0.0.0.0', port: 1, console_token: TOKEN });
    expect(access.admit(request({})).kind).toBe('unauthorized');
    expect(access.admit(request({ Authorization: 'Bearer wrong-token-0123456789' })).kind).toBe('unauthorized');
    expect(access.admit(request({ Authorization: `Bearer ${TOKEN}` })).kind).toBe('admitted');
    expect(new ConsoleAccess({ host: '127.0.0.1', port: 1, console_token: TOKEN }).admit(request({})).kind).toBe(
      'unauthorized',
    );

    const cookie = access.login(TOKEN)!;
    expect(access.login('not the token')).toBeUndefined();
    // The cookie is a digest, never the token itself.
    expect(cookie).not.toContain(TOKEN);
    expect(access.admit(request({ Cookie: `other=1; ${SESSION_COOKIE}=${cookie}` }))).toEqual({
      kind: 'admitted',
      session: cookie,
    });
    expect(access.admit(request({ Cookie: `${SESSION_COOKIE}=${cookie}x` })).kind).toBe('unauthorized');
  });

  it('a replica with the same token accepts the cookie and the form tokens of another; a form token is bound to its session', () => {
    const one = new ConsoleAccess({ host: '0.0.0.0', port: 1, console_token: TOKEN });
    const two = new ConsoleAccess({ host: '0.0.0.0', port: 2, console_token: TOKEN });
    const cookie = one.login(TOKEN)!;
    expect(two.admit(request({ Cookie: `${SESSION_COOKIE}=${cookie}` })).kind).toBe('admitted');
    expect(two.formTokenMatches(cookie, one.formToken(cookie))).toBe(true);
    expect(two.formTokenMatches('bearer', one.formToken(cookie))).toBe(false);
    expect(two.formTokenMatches(cookie, undefined)).toBe(false);
    const other = new ConsoleAccess({ host: '0.0.0.0', port: 1, console_token: 'another-token-0123456789' });
    expect(other.formTokenMatches(cookie, one.formToken(cookie))).toBe(false);
  });

  it('without a token, each process has its own form key: a form token made up elsewhere is refused', () => {
    const one = new ConsoleAccess({ host: '127.0.0.1', port: 1 });
    const two = new ConsoleAccess({ host: '127.0.0.1', port: 1 });
    expect(one.formTokenMatches('open', one.formToken('open'))).toBe(true);
    expect(two.formTokenMatches('open', one.formToken('open'))).toBe(false);
  });
});

describe('sameOrigin', () => {
  it('refuses a POST from another origin or site, and takes one from the console itself or without an Origin (curl)', () => {
    expect(sameOrigin(request({ Host: '127.0.0.1:9464', Origin: 'http://127.0.0.1:9464' }))).toBe(true);
    expect(sameOrigin(request({ Host: '127.0.0.1:9464' }))).toBe(true);
    expect(sameOrigin(request({ Host: '127.0.0.1:9464', Origin: 'http://evil.example' }))).toBe(false);
    expect(sameOrigin(request({ Host: '127.0.0.1:9464', Origin: 'null' }))).toBe(false);
    expect(sameOrigin(request({ Host: '127.0.0.1:9464', 'Sec-Fetch-Site': 'cross-site' }))).toBe(false);
    expect(
      sameOrigin(request({ Host: '127.0.0.1:9464', Origin: 'http://127.0.0.1:9464', 'Sec-Fetch-Site': 'same-origin' })),
    ).toBe(true);
  });
});

describe('readCookie', () => {
  it('finds a cookie by name among others', () => {
    expect(readCookie('a=1; forgewarden_console=xyz; b=2', 'forgewarden_console')).toBe('xyz');
    expect(readCookie(undefined, 'forgewarden_console')).toBeUndefined();
    expect(readCookie('forgewarden_consolex=1', 'forgewarden_console')).toBeUndefined();
  });
});
