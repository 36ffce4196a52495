import { childEnv, runCli, startSandboxCommand, writeTempFile, type CliProcess } from '../support/cli';
import { dropKeys } from '../support/redis-server';

/**
 * `plan` and `once` on a forge a person changed: a project closed to the token and a project archived. The other
 * project's work is done, the commands name what they could not do and why, and exit 4 (partial), not 1.
 */
describe('a partial pass, as the commands show it', () => {
  let sandbox: CliProcess;
  let sandboxUrl: string;
  let env: NodeJS.ProcessEnv;
  const prefix = `e2e-partial-${process.pid}`;

  beforeAll(async () => {
    ({ process: sandbox, url: sandboxUrl } = await startSandboxCommand());
    env = childEnv({
      GITLAB_URL: sandboxUrl,
      GITLAB_TOKEN: 'glpat-sandbox-admin-token',
      REDIS_URL: process.env.REDIS_URL,
    });
  });

  afterAll(async () => {
    await sandbox.stop();
    await dropKeys(prefix);
  });

  const control = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${sandboxUrl}/__sandbox${path}`, {
      method,
      ...(body ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
    });
    return response.status;
  };
  const file = () =>
    writeTempFile(
      'partial.yml',
      [
        'version: 1',
        'gitlab: { url: "${GITLAB_URL}", token: "${GITLAB_TOKEN}" }',
        `redis: { url: "\${REDIS_URL}", prefix: ${prefix} }`,
        'dry_run: false',
        'policies:',
        '  - name: retry',
        '    type: job_retry',
        '    projects: [acme/api, acme/web]',
        '    interval: 1m',
        '    lookback: 2d',
        '    match: { failure_log: ["(?i)connection reset", "ETIMEDOUT", "(?i)no space left on device"] }',
      ].join('\n'),
    );

  it('names a project closed to the token, acts on the others, exits 4; a refused retry is parked and plan says since when', async () => {
    const config = file();
    expect(await control('POST', '/access', { user: 'root', project: 'acme/web', level: 0 })).toBe(200);
    expect(await control('POST', '/projects/acme%2Fapi/archive')).toBe(200);

    const once = await runCli(['once', '-c', config], env);
    expect(once.code).toBe(4);
    expect(once.stdout).toMatch(
      /^not read: project acme\/web: GET projects\/acme%2Fweb\/jobs\?.* → 404: 404 Project Not Found$/m,
    );
    expect(once.stdout).toMatch(
      /refused +retry +acme\/api job \d+ .* POST projects\/1\/jobs\/\d+\/retry → 403: 403 Forbidden; parked until /,
    );

    // Parked: the next run sends nothing, says since when, and still exits 4.
    const again = await runCli(['once', '-c', config, '--json'], env);
    expect(again.code).toBe(4);
    const [pass] = JSON.parse(again.stdout) as Array<{
      unobserved: Array<{ target: string }>;
      outcomes: Array<{ outcome: string; detail: string }>;
    }>;
    expect(pass?.unobserved.map((entry) => entry.target)).toEqual(['project acme/web']);
    const refused = pass?.outcomes.filter((outcome) => outcome.outcome === 'refused') ?? [];
    expect(refused.length).toBeGreaterThan(0);
    for (const outcome of refused)
      expect(outcome.detail).toMatch(
        /^refused since \S+: POST projects\/1\/jobs\/\d+\/retry → 403: 403 Forbidden; looked at again after /,
      );

    const plan = await runCli(['plan', '-c', config], env);
    expect(plan.code).toBe(4);
    expect(plan.stdout).toMatch(
      /refused since \S+: POST projects\/1\/jobs\/\d+\/retry → 403: 403 Forbidden; looked at again after /,
    );
    expect(plan.stdout).toMatch(/^not read: project acme\/web: /m);

    const posts = (await (await fetch(`${sandboxUrl}/__sandbox/requests?method=POST`)).json()) as Array<{
      path: string;
    }>;
    expect(posts.filter((entry) => entry.path.endsWith('/retry'))).toHaveLength(refused.length);
  });
});
