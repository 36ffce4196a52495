import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  childEnv,
  runCli,
  startCli,
  startSandboxCommand,
  waitUntil,
  writeTempFile,
  type CliProcess,
} from '../support/cli';
import { dropKeys } from '../support/redis-server';

/**
 * A command's first look at the forge (`GET /user`): a passing fault (429, 5xx, a refused connection) is waited out
 * within `gitlab.start_timeout`, as the client's retry layer waits it out everywhere else; a refused token or a URL
 * that is no GitLab API ends the command at once, and a bound run out says so.
 */
describe('the first look at the forge', () => {
  const ADMIN_TOKEN = 'glpat-sandbox-admin-token';
  const prefix = `e2e-forge-start-${process.pid}`;
  let sandbox: { process: CliProcess; url: string };

  beforeAll(async () => {
    sandbox = await startSandboxCommand();
  });
  afterEach(async () => {
    await fetch(`${sandbox.url}/__sandbox/faults`, { method: 'DELETE' });
    await fetch(`${sandbox.url}/__sandbox/requests`, { method: 'DELETE' });
  });
  afterAll(async () => {
    await sandbox.process.stop('SIGTERM');
    await dropKeys(prefix);
  });

  function policyFile(forge: string, gitlabExtra = '', token = ADMIN_TOKEN): string {
    return writeTempFile(
      'policies.yml',
      [
        'version: 1',
        `gitlab: { url: "${forge}", token: "${token}"${gitlabExtra} }`,
        `redis: { prefix: ${prefix} }`,
        'dry_run: true',
        'policies:',
        '  - { name: retry, type: job_retry, projects: [acme/api], interval: 1m, match: { stages: [test] } }',
        '',
      ].join('\n'),
    );
  }

  async function addFault(rule: Record<string, unknown>): Promise<void> {
    const response = await fetch(`${sandbox.url}/__sandbox/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(rule),
    });
    expect(response.ok).toBe(true);
  }

  async function userRequests(): Promise<number> {
    const log = (await (
      await fetch(`${sandbox.url}/__sandbox/requests?method=GET&path=${encodeURIComponent('/user$')}`)
    ).json()) as unknown[];
    return log.length;
  }

  it('waits out a 429 with Retry-After and a 502, then passes: once exits 0', async () => {
    await addFault({ method: 'GET', path: '/user$', sequence: [{ status: 429, retry_after: 1 }, 502, 'pass'] });
    const result = await runCli(
      ['once', '-c', policyFile(sandbox.url)],
      childEnv({ REDIS_URL: process.env.REDIS_URL }),
      30_000,
    );
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^would_act +retry +acme\/api job 1002 /m);
    // The 429, the 502, then the answer (a pass may ask who the token is again).
    expect(await userRequests()).toBeGreaterThanOrEqual(3);
  });

  it('ends after gitlab.start_timeout when the forge keeps answering 503, naming the bound and the time it waited', async () => {
    await addFault({ method: 'GET', path: '/user$', status: 503 });
    const file = policyFile(sandbox.url, ', start_timeout: 2s');
    // The first look retries without an attempt limit: only the bound ends it, within runCli's 30 s or not at all.
    const started = performance.now();
    const result = await runCli(['plan', '-c', file], childEnv({ REDIS_URL: process.env.REDIS_URL }), 30_000);
    const wall = performance.now() - started;
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    // A bound of two seconds or less is not announced: only the final line.
    const match = new RegExp(
      `^forgewarden plan: the forge at ${sandbox.url.replace(/\./g, '\\.')} \\(GITLAB_URL\\) cannot answer now: 503 .+; gave up after (\\d+\\.\\d)s \\(gitlab\\.start_timeout 2s\\)\\n$`,
    ).exec(result.stderr);
    expect(match).not.toBeNull();
    // The time it says is the time it waited: within the command's own run, not the bound's.
    expect(Number(match![1]) * 1000).toBeLessThanOrEqual(wall);
    // More than one try before the bound ran out.
    expect(await userRequests()).toBeGreaterThan(1);
  });

  it.each(['plan', 'once', 'doctor'])('%s says at once what it waits for, why and until when', async (command) => {
    await addFault({ method: 'GET', path: '/user$', status: 503 });
    const file = policyFile(sandbox.url, ', start_timeout: 5m');
    const waiting = startCli([command, '-c', file], childEnv({ REDIS_URL: process.env.REDIS_URL }));
    try {
      await waitUntil('it says it waits', () => waiting.stderr.includes('\n') || !waiting.running, 60_000);
      // Said while it waits, not when the wait is over, and on stderr: stdout is the command's result.
      expect(waiting.running).toBe(true);
      expect(waiting.stderr).toMatch(
        new RegExp(
          `^forgewarden ${command}: waiting for the forge at ${sandbox.url.replace(/\./g, '\\.')} \\(GITLAB_URL\\): it answers 503 .+; trying again until \\d\\d:\\d\\d:\\d\\d at the latest \\(gitlab\\.start_timeout 5m\\)\\n$`,
        ),
      );
    } finally {
      await waiting.stop('SIGTERM');
    }
  });

  it('does not retry a refused token: one request, exit 1', async () => {
    const file = policyFile(sandbox.url, '', 'glpat-wrong-token-000000');
    const result = await runCli(['once', '-c', file], childEnv({ REDIS_URL: process.env.REDIS_URL }), 30_000);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^forgewarden once: the forge at .+ refused the token \(401 Unauthorized\)/);
    expect(await userRequests()).toBe(1);
  });

  describe('a URL that is not a GitLab API', () => {
    let server: Server;
    let url: string;
    const seen: string[] = [];

    beforeAll(async () => {
      server = createServer((request, response) => {
        seen.push(`${request.method} ${request.url}`);
        response.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not Found</h1>');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it.each(['plan', 'once', 'doctor'])('%s says so in one line, after one request', async (command) => {
      seen.length = 0;
      const file = policyFile(url);
      const result = await runCli([command, '-c', file], childEnv({ REDIS_URL: process.env.REDIS_URL }), 30_000);
      expect(result.code).toBe(1);
      const message = `${url} does not look like a GitLab API (GET /api/v4/user answered 404): check GITLAB_URL (gitlab.url in ${file})`;
      if (command === 'doctor')
        expect(result.stdout).toContain(`✗ ${message}\n✗ token: not checked, the URL is not a GitLab API\n`);
      else expect(result.stderr).toBe(`forgewarden ${command}: ${message}\n`);
      expect(seen).toEqual(['GET /api/v4/user']);
    });
  });
});
