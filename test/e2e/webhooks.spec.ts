import Redis from 'ioredis';
import { childEnv, runCli, startCli, statusOf, waitUntil, writeTempFile, type CliProcess } from '../support/cli';
import { freePort } from '../support/redis-server';

const SECRET = 'e2e-webhook-secret-0123456789';

/**
 * The whole loop as a user sets it up: the sandbox command, the daemon (`run`) with webhooks on, `hooks install` to
 * register the daemon on every covered project, and a job that fails on the forge, retried from the delivery.
 */
describe('webhooks end to end: hooks install, a delivery from the forge, a retry', () => {
  let sandbox: CliProcess;
  let daemon: CliProcess;
  let sandboxUrl: string;
  let hookUrl: string;
  let file: string;
  let env: NodeJS.ProcessEnv;
  const prefix = `e2e-webhooks-${process.pid}`;

  beforeAll(async () => {
    const [forgePort, daemonPort] = [await freePort(), await freePort()];
    sandbox = startCli(['sandbox', '--port', String(forgePort)], childEnv());
    sandboxUrl = `http://127.0.0.1:${forgePort}`;
    hookUrl = `http://127.0.0.1:${daemonPort}/webhooks/gitlab`;
    await waitUntil('the sandbox answers', async () => (await statusOf(`${sandboxUrl}/api/v4/user`)) === 401);
    env = childEnv({
      GITLAB_URL: sandboxUrl,
      GITLAB_TOKEN: 'glpat-sandbox-admin-token',
      REDIS_URL: process.env.REDIS_URL,
      FORGEWARDEN_WEBHOOK_TOKEN: SECRET,
    });
    file = writeTempFile(
      'webhooks.yml',
      [
        'version: 1',
        'gitlab: { url: "${GITLAB_URL}", token: "${GITLAB_TOKEN}", max_requests_per_minute: 6000 }',
        `redis: { url: "\${REDIS_URL}", prefix: ${prefix} }`,
        'dry_run: false',
        `http: { host: 127.0.0.1, port: ${daemonPort} }`,
        'webhooks: { enabled: true, secret_token: "${FORGEWARDEN_WEBHOOK_TOKEN}" }',
        'policies:',
        '  - name: retry-acme',
        '    type: job_retry',
        '    projects: ["acme/*"]',
        '    interval: 1h',
        '    lookback: 2d',
        '    match: { stages: [test, build], failure_log: ["(?i)connection reset"] }',
      ].join('\n'),
    );
    daemon = startCli(['run', '-c', file], env);
    // Ready, and its first pass (which retries the demo world's old failures) done.
    await waitUntil('the daemon is ready and has passed once', async () => {
      if ((await statusOf(`http://127.0.0.1:${daemonPort}/readyz`)) !== 200) return false;
      const metrics = await (await fetch(`http://127.0.0.1:${daemonPort}/metrics`)).text();
      return /forgewarden_last_successful_pass_timestamp_seconds\{policy="retry-acme"\}/.test(metrics);
    });
  });

  afterAll(async () => {
    await daemon?.stop();
    await sandbox?.stop();
    const redis = new Redis(process.env.REDIS_URL!);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  const hooksOf = async (
    project: string,
  ): Promise<Array<{ id: number; url: string; job_events: boolean; pipeline_events: boolean }>> => {
    const response = await fetch(`${sandboxUrl}/api/v4/projects/${encodeURIComponent(project)}/hooks`, {
      headers: { 'PRIVATE-TOKEN': 'glpat-sandbox-admin-token' },
    });
    return (await response.json()) as Array<{ id: number; url: string; job_events: boolean; pipeline_events: boolean }>;
  };

  const retriesOf = async (jobId: number): Promise<number> => {
    const log = (await (await fetch(`${sandboxUrl}/__sandbox/requests?method=POST`)).json()) as Array<{ path: string }>;
    return log.filter((entry) => entry.path.endsWith(`/jobs/${jobId}/retry`)).length;
  };

  it('installs its hook on every covered project, dry run first, then idempotently', async () => {
    const dry = await runCli(['hooks', 'install', '-c', file, '--url', hookUrl, '--dry-run'], env);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/acme\/api\s+-\s+would create it/);
    expect(dry.stdout).toMatch(/acme\/web\s+-\s+would create it/);
    expect(dry.stdout).toContain('2 projects, 2 would change (dry run: nothing changed; --no-dry-run to apply)');
    expect(await hooksOf('acme/api')).toEqual([]);

    const applied = await runCli(['hooks', 'install', '-c', file, '--url', hookUrl], env);
    expect(applied.code).toBe(0);
    expect(applied.stdout).toContain('2 projects, 2 changed');
    for (const project of ['acme/api', 'acme/web']) {
      expect(await hooksOf(project)).toEqual([
        expect.objectContaining({ url: hookUrl, job_events: true, pipeline_events: true }),
      ]);
    }

    const again = await runCli(['hooks', 'install', '-c', file, '--url', hookUrl], env);
    expect(again.stdout).toContain('2 projects, 0 changed');
    expect((await hooksOf('acme/api')).length).toBe(1);

    const list = await runCli(['hooks', 'list', '-c', file, '--url', hookUrl], env);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/acme\/api\s+\d+\s+active/);
  });

  it("retries a job that fails on the forge, from the forge's own delivery, within seconds", async () => {
    // lint (job 1003 of acme/api) passed; it now fails with a log the policy retries.
    const failed = await fetch(`${sandboxUrl}/__sandbox/jobs/1003`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'failed', log: 'npm ERR! read ECONNRESET: connection reset by peer\n' }),
    });
    expect(failed.status).toBe(200);
    await waitUntil('the job is retried', async () => (await retriesOf(1003)) > 0, 5_000);
    const deliveries = (await (await fetch(`${sandboxUrl}/__sandbox/hook-deliveries`)).json()) as Array<{
      event: string;
      status?: number;
    }>;
    expect(deliveries).toEqual(expect.arrayContaining([expect.objectContaining({ event: 'Job Hook', status: 200 })]));
    expect(await retriesOf(1003)).toBe(1);
  });

  it('refuses a wrong token, and removes its hooks', async () => {
    const refused = await fetch(hookUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gitlab-token': 'wrong' },
      body: '{}',
    });
    expect(refused.status).toBe(401);

    const removed = await runCli(['hooks', 'remove', '-c', file, '--url', hookUrl], env);
    expect(removed.code).toBe(0);
    expect(removed.stdout).toContain('2 projects, 2 changed');
    expect(await hooksOf('acme/api')).toEqual([]);
  });

  it('says what is wrong with a bad --url or webhooks off', async () => {
    const badUrl = await runCli(['hooks', 'install', '-c', file, '--url', 'forgewarden.example.com'], env);
    expect(badUrl.code).toBe(2);
    expect(badUrl.stderr).toContain("--url must be the daemon's webhook URL");
    const off = writeTempFile(
      'off.yml',
      [
        'version: 1',
        'gitlab: { url: "${GITLAB_URL}", token: "${GITLAB_TOKEN}" }',
        `redis: { url: "\${REDIS_URL}", prefix: ${prefix}-off }`,
      ].join('\n'),
    );
    const notEnabled = await runCli(['hooks', 'install', '-c', off, '--url', hookUrl], env);
    expect(notEnabled.code).toBe(2);
    expect(notEnabled.stderr).toContain('webhooks are not enabled in the policy file');
  });
});
