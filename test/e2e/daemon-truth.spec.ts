import { writeFileSync } from 'node:fs';
import Redis from 'ioredis';
import { childEnv, runCli, startCli, statusOf, waitUntil, writeTempFile, type CliProcess } from '../support/cli';
import { freePort } from '../support/redis-server';

const ADMIN_TOKEN = 'glpat-sandbox-admin-token';

/** A job_retry policy as the demo's: the demo world's failures with a matching log go back a day. */
function retryPolicy(name: string, project: string, interval: string): string {
  return [
    `  - name: ${name}`,
    '    type: job_retry',
    `    projects: [${project}]`,
    `    interval: ${interval}`,
    '    lookback: 2d',
    '    match:',
    '      stages: [test, build]',
    '      failure_log: ["(?i)connection reset", "ETIMEDOUT", "(?i)no space left on device"]',
    '    max_retries: 2',
  ].join('\n');
}

function policyFile(options: { forge: string; prefix: string; httpPort: number; policies: string[] }): string {
  return [
    'version: 1',
    `gitlab: { url: "${options.forge}", token: "${ADMIN_TOKEN}" }`,
    `redis: { prefix: ${options.prefix} }`,
    `http: { port: ${options.httpPort} }`,
    'dry_run: false',
    options.policies.length === 0 ? 'policies: []' : 'policies:',
    ...options.policies,
    '',
  ].join('\n');
}

async function retriesReceived(forge: string): Promise<string[]> {
  const log = (await (await fetch(`${forge}/__sandbox/requests?method=POST`)).json()) as Array<{ path: string }>;
  return log.map((entry) => entry.path).filter((path) => path.endsWith('/retry'));
}

/** The daemon's metrics; empty until it serves them. */
async function metricsOf(httpPort: number): Promise<string> {
  try {
    return await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
  } catch {
    return '';
  }
}

/** The two reload gauges as /metrics shows them; NaN for one that is not there. */
function reloadGauges(metrics: string): { successful: number; timestamp: number } {
  return {
    successful: Number(/^forgewarden_config_last_reload_successful (\S+)$/m.exec(metrics)?.[1]),
    timestamp: Number(/^forgewarden_config_last_reload_success_timestamp_seconds (\S+)$/m.exec(metrics)?.[1]),
  };
}

async function readyzOf(httpPort: number): Promise<{ status: number; checks: Record<string, string> }> {
  try {
    const response = await fetch(`http://127.0.0.1:${httpPort}/readyz`);
    return { status: response.status, checks: ((await response.json()) as { checks: Record<string, string> }).checks };
  } catch {
    return { status: 0, checks: {} };
  }
}

describe('the daemon tells the truth about itself', () => {
  const prefixes: string[] = [];
  const running: CliProcess[] = [];

  async function startSandbox(port?: number): Promise<{ url: string; process: CliProcess }> {
    const sandboxPort = port ?? (await freePort());
    const process = startCli(['sandbox', '--port', String(sandboxPort)], childEnv());
    running.push(process);
    const url = `http://127.0.0.1:${sandboxPort}`;
    await waitUntil('the sandbox answers', async () => (await statusOf(`${url}/api/v4/user`)) === 401);
    return { url, process };
  }

  function prefix(name: string): string {
    const value = `e2e-truth-${name}-${process.pid}`;
    prefixes.push(value);
    return value;
  }

  afterAll(async () => {
    for (const child of running) await child.stop();
    const redis = new Redis(process.env.REDIS_URL!);
    for (const value of prefixes) {
      const keys = await redis.keys(`${value}:*`);
      if (keys.length > 0) await redis.del(...keys);
    }
    await redis.quit();
  });

  it('run with a wrong token exits 1 with one line naming GITLAB_TOKEN, and acts on nothing', async () => {
    const forge = await startSandbox();
    const httpPort = await freePort();
    const file = writeTempFile(
      'policies.yml',
      policyFile({
        forge: forge.url,
        prefix: prefix('token'),
        httpPort,
        policies: [retryPolicy('retry', 'acme/api', '1m')],
      }).replace(ADMIN_TOKEN, 'glpat-wrong-token-000000'),
    );
    const result = await runCli(['run', '-c', file], childEnv({ REDIS_URL: process.env.REDIS_URL }), 15_000);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `forgewarden run: the forge at ${forge.url} refused the token (401 Unauthorized): check GITLAB_TOKEN (gitlab.token in ${file}) and that GITLAB_URL (gitlab.url) is the forge it belongs to\n`,
    );
    expect(result.stdout + result.stderr).not.toContain('glpat-wrong-token-000000');
    expect(await retriesReceived(forge.url)).toEqual([]);
  });

  it('answers 503 on /readyz while the forge cannot be reached, and 200 once it answers', async () => {
    const forgePort = await freePort();
    const forgeUrl = `http://127.0.0.1:${forgePort}`;
    const httpPort = await freePort();
    const file = writeTempFile(
      'policies.yml',
      policyFile({ forge: forgeUrl, prefix: prefix('readyz'), httpPort, policies: [] }),
    );
    const daemon = startCli(['run', '-c', file], childEnv({ REDIS_URL: process.env.REDIS_URL }));
    running.push(daemon);
    await waitUntil(
      'the daemon serves /healthz',
      async () => (await statusOf(`http://127.0.0.1:${httpPort}/healthz`)) === 200,
    );
    const before = await fetch(`http://127.0.0.1:${httpPort}/readyz`);
    expect(before.status).toBe(503);
    expect(((await before.json()) as { checks: Record<string, string> }).checks.forge).toBe(
      `cannot reach the forge at ${forgeUrl} (GITLAB_URL): network error ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:${forgePort}`,
    );
    expect(await metricsOf(httpPort)).toMatch(/^forgewarden_forge_up 0$/m);

    await startSandbox(forgePort);
    await waitUntil(
      'the daemon is ready',
      async () => (await statusOf(`http://127.0.0.1:${httpPort}/readyz`)) === 200,
      20_000,
    );
    expect(await metricsOf(httpPort)).toMatch(/^forgewarden_forge_up 1$/m);
    expect(daemon.running).toBe(true);
  });

  it('passes an interval policy at start, not at the next multiple of its interval, and records the pass', async () => {
    const forge = await startSandbox();
    const httpPort = await freePort();
    const file = writeTempFile(
      'policies.yml',
      policyFile({
        forge: forge.url,
        prefix: prefix('first'),
        httpPort,
        policies: [retryPolicy('retry-api', 'acme/api', '1h')],
      }),
    );
    const daemon = startCli(['run', '-c', file], childEnv({ REDIS_URL: process.env.REDIS_URL }));
    running.push(daemon);
    await waitUntil(
      'the first pass retried the matching job',
      async () => (await retriesReceived(forge.url)).length > 0,
      20_000,
    );
    expect(await retriesReceived(forge.url)).toEqual(['/api/v4/projects/1/jobs/1002/retry']);
    await waitUntil('the pass is counted', async () =>
      /^forgewarden_passes_total\{policy="retry-api",result="ok"\} 1$/m.test(await metricsOf(httpPort)),
    );
    const metrics = await metricsOf(httpPort);
    expect(metrics).toMatch(/^forgewarden_policy_interval_seconds\{policy="retry-api"\} 3600$/m);
    const lastPass = Number(
      /^forgewarden_last_successful_pass_timestamp_seconds\{policy="retry-api"\} (\S+)$/m.exec(metrics)?.[1],
    );
    expect(Math.abs(lastPass - Date.now() / 1000)).toBeLessThan(60);
    await daemon.stop();
  });

  it('on SIGHUP keeps the running policies when the file is broken, and applies a good file without a restart', async () => {
    const forge = await startSandbox();
    const httpPort = await freePort();
    const redisPrefix = prefix('reload');
    const good = policyFile({
      forge: forge.url,
      prefix: redisPrefix,
      httpPort,
      policies: [retryPolicy('retry-api', 'acme/api', '1h')],
    });
    const file = writeTempFile('policies.yml', good);
    const daemon = startCli(['run', '-c', file], childEnv({ REDIS_URL: process.env.REDIS_URL }));
    running.push(daemon);
    await waitUntil(
      'the first pass is done',
      async () => /^forgewarden_passes_total\{policy="retry-api",result="ok"\} 1$/m.test(await metricsOf(httpPort)),
      20_000,
    );

    // A broken file: the old policies keep running, the process lives on.
    writeFileSync(file, good.replace('interval: 1h', 'interval: often'));
    daemon.child.kill('SIGHUP');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(daemon.running).toBe(true);
    expect(await metricsOf(httpPort)).toMatch(/^forgewarden_policy_interval_seconds\{policy="retry-api"\} 3600$/m);

    // A good file with a second policy: its schedule applies at once, and it passes at once.
    writeFileSync(
      file,
      policyFile({
        forge: forge.url,
        prefix: redisPrefix,
        httpPort,
        policies: [retryPolicy('retry-api', 'acme/api', '1h'), retryPolicy('retry-web', 'acme/web', '1m')],
      }),
    );
    daemon.child.kill('SIGHUP');
    await waitUntil(
      'the new policy retried its job',
      async () => (await retriesReceived(forge.url)).includes('/api/v4/projects/2/jobs/2002/retry'),
      20_000,
    );
    const metrics = await metricsOf(httpPort);
    expect(metrics).toMatch(/^forgewarden_policy_interval_seconds\{policy="retry-web"\} 60$/m);
    expect(metrics).toMatch(/^forgewarden_policy_interval_seconds\{policy="retry-api"\} 3600$/m);
    // Bull's repeatable jobs (`<prefix>:work:repeat`, one member per schedule) hold both policies' schedules now.
    const redis = new Redis(process.env.REDIS_URL!);
    try {
      const schedules = await redis.zrange(`${redisPrefix}:work:repeat`, 0, -1);
      expect(
        schedules
          .filter((key) => key.startsWith('policy.tick:'))
          .map((key) => key.split(':')[1])
          .sort(),
      ).toEqual(['retry-api', 'retry-web']);
    } finally {
      await redis.quit();
    }
    expect(await retriesReceived(forge.url)).toEqual([
      '/api/v4/projects/1/jobs/1002/retry',
      '/api/v4/projects/2/jobs/2002/retry',
    ]);
    const result = await daemon.stop();
    expect(result.code).toBe(0);
  });

  it('says on /readyz and in its metrics that a SIGHUP reload was refused, until a reload is taken', async () => {
    const forge = await startSandbox();
    const httpPort = await freePort();
    const good = policyFile({
      forge: forge.url,
      prefix: prefix('reload-state'),
      httpPort,
      policies: [retryPolicy('retry-api', 'acme/api', '1h')],
    });
    const file = writeTempFile('policies.yml', good);
    const beforeStart = Date.now() / 1000;
    const daemon = startCli(['run', '-c', file], childEnv({ REDIS_URL: process.env.REDIS_URL }));
    running.push(daemon);
    await waitUntil('the daemon is ready', async () => (await readyzOf(httpPort)).status === 200, 20_000);
    expect((await readyzOf(httpPort)).checks.config).toBe('ok');
    // The load at start is the first successful one.
    const atStart = reloadGauges(await metricsOf(httpPort));
    expect(atStart.successful).toBe(1);
    expect(atStart.timestamp).toBeGreaterThanOrEqual(beforeStart);
    expect(atStart.timestamp).toBeLessThanOrEqual(Date.now() / 1000);

    // Two problems: the old policies go on serving, so it stays ready, and says the file on disk is not what runs.
    writeFileSync(file, good.replace('interval: 1h', 'interval: often').replace('max_retries: 2', 'max_retries: many'));
    const brokenSent = Date.now();
    daemon.child.kill('SIGHUP');
    await waitUntil(
      'the config check reports the refused reload',
      async () => (await readyzOf(httpPort)).checks.config?.startsWith('reload failed') === true,
    );
    const refused = await readyzOf(httpPort);
    expect(refused.status).toBe(200);
    const reported = /^reload failed at (\S+): 2 problems in (.+)$/.exec(refused.checks.config);
    expect(reported?.[2]).toBe(file);
    const failedAt = new Date(reported?.[1] ?? '');
    expect(failedAt.toISOString()).toBe(reported?.[1]);
    expect(failedAt.getTime()).toBeGreaterThanOrEqual(brokenSent);
    expect(failedAt.getTime()).toBeLessThanOrEqual(Date.now());
    expect(reloadGauges(await metricsOf(httpPort))).toEqual({ successful: 0, timestamp: atStart.timestamp });

    // Fixed: taken, and the check and the gauges say so.
    writeFileSync(file, good);
    const fixedSent = Date.now() / 1000;
    daemon.child.kill('SIGHUP');
    await waitUntil('the config check is ok again', async () => (await readyzOf(httpPort)).checks.config === 'ok');
    expect((await readyzOf(httpPort)).status).toBe(200);
    const fixed = reloadGauges(await metricsOf(httpPort));
    expect(fixed.successful).toBe(1);
    expect(fixed.timestamp).toBeGreaterThan(atStart.timestamp);
    expect(fixed.timestamp).toBeGreaterThanOrEqual(fixedSent);
    expect(daemon.running).toBe(true);
  });
});
