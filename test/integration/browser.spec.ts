import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { launchBrowser, withPage } from '../support/browser';

/**
 * The browser-test infrastructure itself: Debian's Chromium, driven by playwright-core, loads a page from a local
 * server, submits its form by a click, and the server is what tells whether the POST arrived with the field's value.
 */

interface Received {
  method: string;
  url: string;
  contentType: string | undefined;
  body: string;
}

const FORM_PAGE = `<!doctype html>
<html><head><title>Sign up</title></head><body>
<h1 id="heading">Sign up</h1>
<form method="post" action="/signup">
  <input name="username" id="username">
  <button type="submit" id="send">Send</button>
</form>
</body></html>`;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

describe('browser tests (Debian chromium through playwright-core)', () => {
  let browser: Browser;
  let server: Server;
  let baseUrl: string;
  const received: Received[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      void (async () => {
        const body = await readBody(request);
        received.push({
          method: request.method ?? '',
          url: request.url ?? '',
          contentType: request.headers['content-type'],
          body,
        });
        response.setHeader('Content-Type', 'text/html; charset=utf-8');
        if (request.method === 'GET' && request.url === '/') {
          response.end(FORM_PAGE);
        } else if (request.method === 'POST' && request.url === '/signup') {
          const username = new URLSearchParams(body).get('username') ?? '';
          response.end(`<!doctype html><html><body><p id="result">Welcome, ${escapeHtml(username)}</p></body></html>`);
        } else {
          response.statusCode = 404;
          response.end('not found');
        }
      })();
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // Starting Chromium takes a few seconds on a loaded 2-core machine.
    browser = await launchBrowser();
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('clicks a button that POSTs the form, and the server gets the field and renders the answer', async () => {
    const text = await withPage(browser, async (page) => {
      // Fail with Playwright's own message (which names the step) before jest's 30 s timeout does.
      page.setDefaultTimeout(15_000);
      await page.goto(`${baseUrl}/`);
      expect(await page.textContent('#heading')).toBe('Sign up');
      await page.fill('#username', 'ada & <co>');
      await Promise.all([page.waitForURL(`${baseUrl}/signup`), page.click('#send')]);
      return page.textContent('#result');
    });

    const posts = received.filter((request) => request.method === 'POST');
    expect(posts).toHaveLength(1);
    expect(posts[0].url).toBe('/signup');
    expect(posts[0].contentType).toBe('application/x-www-form-urlencoded');
    expect(new URLSearchParams(posts[0].body).get('username')).toBe('ada & <co>');
    expect(text).toBe('Welcome, ada & <co>');
  });
});
