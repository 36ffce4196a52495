import Redis from 'ioredis';
import { childEnv, runCli, startSandboxCommand, writeTempFile, type CliProcess, type CliResult } from '../support/cli';
import { redisText } from '../support/redis-text';

/**
 * Not shaped like a forge token (no `glpat-` prefix): only the daemon's knowledge that this is its configured token
 * can hide it, not the patterns that recognise forge tokens wherever they appear.
 */
const TOKEN = 'plain-admin-credential-4242';
const ECHO = `upstream refused credential ${TOKEN}`;

const WORLD = [
  'users:',
  '  - { id: 1, username: root, name: Administrator, email: admin@acme.com, admin: true, tokens: [' + TOKEN + '] }',
  'groups:',
  '  - { id: 10, path: acme }',
  'projects:',
  ...[
    ['1', 'api'],
    ['2', 'web'],
  ].flatMap(([id, path]) => [
    `  - id: ${id}`,
    `    path: ${path}`,
    '    namespace: acme',
    '    pipelines:',
    `      - id: ${id}00`,
    '        ref: main',
    `        jobs: [{ id: ${id}01, name: flaky, stage: test, status: failed, finished_at: now-1m, log: "read ECONNRESET: connection reset by peer" }]`,
  ]),
  '',
].join('\n');

/**
 * A forge (or a proxy in front of it) that quotes the request's credential in its error answers. The forge's answer
 * travels into what the daemon tells people and keeps: the commands' output, the audit trail, the refusals it parks.
 */
describe('the configured token, echoed by the forge, never leaves the daemon', () => {
  let sandbox: CliProcess;
  let sandboxUrl: string;
  let env: NodeJS.ProcessEnv;
  let file: string;
  const prefix = `e2e-secrets-${process.pid}`;

  beforeAll(async () => {
    ({ process: sandbox, url: sandboxUrl } = await startSandboxCommand(['--world', writeTempFile('world.yml', WORLD)]));
    env = childEnv({ GITLAB_URL: sandboxUrl, GITLAB_TOKEN: TOKEN, REDIS_URL: process.env.REDIS_URL });
    file = writeTempFile(
      'secrets.yml',
      [
        'version: 1',
        'gitlab: { url: "${GITLAB_URL}", token: "${GITLAB_TOKEN}" }',
        `redis: { url: "\${REDIS_URL}", prefix: ${prefix} }`,
        'dry_run: false',
        'http: { port: 0 }',
        'policies:',
        '  - name: flaky',
        '    type: job_retry',
        '    projects: [acme/api, acme/web]',
        '    interval: 1h',
        '    match: { failure_log: ["(?i)connection reset"] }',
      ].join('\n'),
    );
  });

  afterAll(async () => {
    await sandbox?.stop();
    const redis = new Redis(process.env.REDIS_URL!);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  const fault = async (rule: Record<string, unknown>): Promise<void> => {
    const response = await fetch(`${sandboxUrl}/__sandbox/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(rule),
    });
    expect(response.status).toBe(201);
  };

  async function keptInRedis(): Promise<string> {
    const redis = new Redis(process.env.REDIS_URL!);
    try {
      return await redisText(redis, prefix);
    } finally {
      await redis.quit();
    }
  }

  const output = (result: CliResult): string => result.stdout + result.stderr;

  it('in the output of once, plan (text and --json) and audit, and in Redis, the answer is shown with the token masked', async () => {
    // acme/web cannot be read (its reason is shown), acme/api's retry is refused for good (shown, parked in Redis).
    await fault({ method: 'GET', path: 'acme%2Fweb/jobs$', status: 500, body: { message: ECHO } });
    await fault({ method: 'POST', path: '/retry$', status: 403, body: { message: ECHO } });

    const once = await runCli(['once', '-c', file], env);
    expect(once.code).toBe(4);
    // The answers did reach the output: masked, not dropped.
    expect(once.stdout).toMatch(
      /^not read: project acme\/web: GET projects\/acme%2Fweb\/jobs\?.* → 500: upstream refused credential \[REDACTED\]$/m,
    );
    expect(once.stdout).toMatch(
      /refused +retry +acme\/api job 101 .* POST projects\/1\/jobs\/101\/retry → 403: upstream refused credential \[REDACTED\]; parked until /,
    );

    const onceJson = await runCli(['once', '-c', file, '--json'], env);
    const plan = await runCli(['plan', '-c', file], env);
    const planJson = await runCli(['plan', '-c', file, '--json'], env);
    const audit = await runCli(['audit', '-c', file, '--since', '1h'], env);
    const auditJson = await runCli(['audit', '-c', file, '--since', '1h', '--json'], env);
    // plan shows the refusal it reads back from Redis, the audit trail the one it recorded.
    expect(planJson.stdout).toContain('403: upstream refused credential [REDACTED]');
    expect(auditJson.stdout).toContain('403: upstream refused credential [REDACTED]');
    for (const result of [once, onceJson, plan, planJson, audit, auditJson])
      expect(output(result)).not.toContain(TOKEN);
    expect(await keptInRedis()).not.toContain(TOKEN);
    // Six commands, each a process of its own.
  }, 120_000);
});
