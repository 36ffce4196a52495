import { resolve } from 'node:path';
import {
  childEnv,
  runCli,
  startCli,
  startSandboxCommand,
  statusOf,
  waitUntil,
  writeTempFile,
  type CliProcess,
} from '../support/cli';
import { freePort, dropKeys } from '../support/redis-server';
import { tempDir } from '../support/temp';

const DEMO_CONFIG = resolve(__dirname, '../../config/demo.yml');

describe('plan, once and audit against the sandbox command', () => {
  let sandbox: CliProcess;
  let sandboxUrl: string;
  let env: NodeJS.ProcessEnv;
  const prefix = `e2e-policy-${process.pid}`;

  beforeAll(async () => {
    ({ process: sandbox, url: sandboxUrl } = await startSandboxCommand());
    env = childEnv({
      FORGEWARDEN_DEMO_SECRETS: tempDir('e2e-keys'),
      GITLAB_URL: sandboxUrl,
      GITLAB_TOKEN: 'glpat-sandbox-admin-token',
      REDIS_URL: process.env.REDIS_URL,
      FORGEWARDEN_DEMO_PREFIX: prefix,
    });
  });

  afterAll(async () => {
    await sandbox.stop();
    await dropKeys(prefix);
  });

  const retriesReceived = async () => {
    const response = await fetch(`${sandboxUrl}/__sandbox/requests?method=POST`);
    const log = (await response.json()) as Array<{ path: string }>;
    return log.map((entry) => entry.path).filter((path) => path.endsWith('/retry'));
  };

  it('plan --json lists every decision with its reason and changes nothing', async () => {
    const result = await runCli(['plan', '-c', DEMO_CONFIG, '--json'], env);
    expect(result.code).toBe(0);
    const [pass] = JSON.parse(result.stdout) as Array<{
      policy: string;
      decisions: Array<{ action: string; target: string; reason: string }>;
    }>;
    expect(pass?.policy).toBe('retry-transient-failures');
    expect(pass?.decisions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          action: 'retry',
          target: 'acme/api job 1002 (test-unit)',
          reason: 'retry 1 of 2: log matched "(?i)connection reset"',
        }),
        expect.objectContaining({
          action: 'skip',
          target: 'acme/api job 1005 (audit-deps)',
          reason: 'skip: allowed to fail',
        }),
        expect.objectContaining({
          action: 'skip',
          target: 'acme/web job 2003 (deploy-preview)',
          reason: 'skip: stage deploy not matched',
        }),
      ]),
    );
    expect(await retriesReceived()).toEqual([]);
  });

  it('plan lists the projects globs selected, excludes left out', async () => {
    const file = writeTempFile(
      'globs.yml',
      [
        'version: 1',
        'gitlab: { url: "${GITLAB_URL}", token: "${GITLAB_TOKEN}" }',
        `redis: { url: "\${REDIS_URL}", prefix: ${prefix}-globs }`,
        'policies:',
        '  - name: retry-acme',
        '    type: job_retry',
        '    projects: ["acme/*", "!acme/web"]',
        '    interval: 5m',
      ].join('\n'),
    );
    const result = await runCli(['plan', '-c', file], env);
    expect(result.code).toBe(0);
    expect(result.stdout.split('\n')[1]).toBe('covers 1 project: acme/api');
    const json = await runCli(['plan', '-c', file, '--json'], env);
    expect((JSON.parse(json.stdout) as Array<{ covered: string[] }>)[0].covered).toEqual(['acme/api']);
  });

  it('plan rejects an unknown --policy with exit 2', async () => {
    const result = await runCli(['plan', '-c', DEMO_CONFIG, '--policy', 'nope'], env);
    expect(result).toMatchObject({
      code: 2,
      stderr:
        'forgewarden plan: no policy named "nope"; configured: retry-transient-failures, nightly-image-cleanup, staff-access, branch-baseline, ci-key-rotation\n',
    });
  });

  it('once retries the matching jobs and exits 0; a second once retries nothing more', async () => {
    const first = await runCli(['once', '-c', DEMO_CONFIG], env);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^retry-transient-failures \(job_retry, acting\): .*2 done/m);
    expect(first.stdout).toMatch(
      /^done +retry +acme\/api job 1002 \(test-unit\) +retry 1 of 2: log matched "\(\?i\)connection reset" +new job \d+$/m,
    );
    expect((await retriesReceived()).sort()).toEqual([
      '/api/v4/projects/1/jobs/1002/retry',
      '/api/v4/projects/2/jobs/2002/retry',
    ]);

    const second = await runCli(['once', '-c', DEMO_CONFIG], env);
    expect(second.code).toBe(0);
    expect(second.stdout).not.toMatch(/ done/);
    expect(await retriesReceived()).toHaveLength(2);
  });

  it('audit lists what once did', async () => {
    const result = await runCli(['audit', '-c', DEMO_CONFIG, '--since', '1h', '--json'], env);
    expect(result.code).toBe(0);
    const entries = JSON.parse(result.stdout) as Array<{
      policy: string;
      action: string;
      target: string;
      outcome: string;
      detail?: string;
    }>;
    const done = entries.filter((entry) => entry.outcome === 'done');
    // Key rotation: write, upload and verify for each of the two keys, and the deploy key enabled on its second project;
    // the old keys wait for their grace period.
    expect(done.filter((entry) => entry.policy === 'ci-key-rotation').map((entry) => entry.action)).toEqual([
      'write_key',
      'upload_key',
      'verify_key',
      'write_key',
      'upload_key',
      'enable_key',
      'verify_key',
    ]);
    expect(
      done
        .filter((entry) => entry.policy !== 'ci-key-rotation')
        .map((entry) => `${entry.policy}: ${entry.target}`)
        .sort(),
    ).toEqual([
      'branch-baseline: acme/api protected branch main',
      'nightly-image-cleanup: acme/api (repository 1)',
      'retry-transient-failures: acme/api job 1002 (test-unit)',
      'retry-transient-failures: acme/web job 2002 (e2e-chrome)',
      'staff-access: acme: carol (user 3)',
      'staff-access: acme: spam-bot-42 (user 5)',
    ]);
  });

  it('audit rejects a bad --since', async () => {
    const result = await runCli(['audit', '-c', DEMO_CONFIG, '--since', 'yesterday'], env);
    expect(result).toMatchObject({
      code: 2,
      stderr: 'forgewarden audit: --since expects a duration such as 30m, 24h or 7d (got "yesterday")\n',
    });
  });
});

describe('the daemon with a job_retry policy', () => {
  it('ticks on its interval, retries after the delay through the queue, and drains on SIGTERM', async () => {
    const sandboxPort = await freePort();
    const sandbox = startCli(['sandbox', '--port', String(sandboxPort)], childEnv());
    const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
    const prefix = `e2e-daemon-${process.pid}`;
    const file = writeTempFile(
      'daemon.yml',
      [
        'version: 1',
        `gitlab: { url: "${sandboxUrl}", token: glpat-sandbox-admin-token }`,
        `redis: { url: "${process.env.REDIS_URL}", prefix: ${prefix} }`,
        'dry_run: false',
        'http: { port: 0 }',
        'policies:',
        '  - name: retry-fast',
        '    type: job_retry',
        '    projects: [acme/api, acme/web]',
        '    interval: 1s',
        '    lookback: 2d',
        '    delay: 1s',
        '    match: { failure_log: ["(?i)connection reset", "ETIMEDOUT"], stages: [test] }',
      ].join('\n'),
    );
    let daemon: CliProcess | undefined;
    try {
      await waitUntil('the sandbox answers', async () => (await statusOf(`${sandboxUrl}/api/v4/user`)) === 401);
      daemon = startCli(['run', '-c', file], childEnv());
      const retries = async () => {
        const log = (await (await fetch(`${sandboxUrl}/__sandbox/requests?method=POST`)).json()) as Array<{
          path: string;
        }>;
        return log
          .map((entry) => entry.path)
          .filter((path) => path.endsWith('/retry'))
          .sort();
      };
      await waitUntil('both retries reach the sandbox', async () => (await retries()).length >= 2, 20_000);
      // Several more ticks: nothing is retried twice.
      await new Promise((r) => setTimeout(r, 2_500));
      expect(await retries()).toEqual(['/api/v4/projects/1/jobs/1002/retry', '/api/v4/projects/2/jobs/2002/retry']);
      const result = await daemon.stop('SIGTERM');
      expect(result.code).toBe(0);
    } finally {
      if (daemon?.running) await daemon.stop('SIGKILL');
      await sandbox.stop();
      await dropKeys(prefix);
    }
  });
});
