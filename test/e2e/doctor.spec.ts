import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Redis from 'ioredis';
import {
  childEnv,
  runCli,
  startCli,
  startSandboxCommand,
  waitUntil,
  writeTempFile,
  type CliProcess,
  type CliResult,
} from '../support/cli';
import { freePort, startRedisServer } from '../support/redis-server';
import { tempDir } from '../support/temp';

const DEMO_CONFIG = resolve(__dirname, '../../config/demo.yml');
const ADMIN_TOKEN = 'glpat-sandbox-admin-token';
const USER_TOKEN = 'glpat-sandbox-user-token';

/** The lines doctor printed, without the trailing newline. */
const linesOf = (result: CliResult) => result.stdout.trimEnd().split('\n');

describe('forgewarden doctor against the sandbox', () => {
  let sandbox: CliProcess;
  let sandboxUrl: string;
  let secretsDir: string;
  const prefix = `e2e-doctor-${process.pid}`;
  const redisUrl = () => process.env.REDIS_URL!;

  /** The environment the demo config reads, with `extra` on top. */
  const demoEnv = (extra: NodeJS.ProcessEnv = {}) =>
    childEnv({
      GITLAB_URL: sandboxUrl,
      GITLAB_TOKEN: ADMIN_TOKEN,
      REDIS_URL: redisUrl(),
      FORGEWARDEN_DEMO_PREFIX: prefix,
      FORGEWARDEN_DEMO_SECRETS: secretsDir,
      ...extra,
    });

  /** Every request the sandbox recorded that could change something on the forge. */
  const writesRecorded = async () => {
    const log = (await (await fetch(`${sandboxUrl}/__sandbox/requests`)).json()) as Array<{
      method: string;
      path: string;
    }>;
    return log
      .filter((entry) => entry.method !== 'GET' && entry.method !== 'HEAD')
      .map((entry) => `${entry.method} ${entry.path}`);
  };

  beforeAll(async () => {
    ({ process: sandbox, url: sandboxUrl } = await startSandboxCommand());
    secretsDir = tempDir('e2e-doctor-keys');
  });

  afterAll(async () => {
    await sandbox.stop();
    const redis = new Redis(redisUrl());
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('passes every check of the demo config with the administrator token, reads the forge and changes nothing', async () => {
    await fetch(`${sandboxUrl}/__sandbox/requests`, { method: 'DELETE' });
    const result = await runCli(['doctor', '-c', DEMO_CONFIG], demoEnv());
    expect(result.code).toBe(0);
    expect(linesOf(result)).toEqual([
      `✓ policy file ${DEMO_CONFIG}: valid, 5 policies`,
      `✓ Redis at ${redisUrl()}: answers and accepts writes`,
      '✓ Redis maxmemory-policy: noeviction',
      `✓ forge at ${sandboxUrl}: answers`,
      '✓ token: accepted, user root, an administrator',
      '✓ token: does not expire',
      '✓ retry-transient-failures: project acme/api (jobs)',
      '✓ retry-transient-failures: project acme/web (jobs)',
      '✓ nightly-image-cleanup: group acme (container registry)',
      '✓ staff-access: group acme (access requests)',
      '✓ staff-access: project acme/web (access requests)',
      '✓ branch-baseline: project acme/api (protected branches)',
      `✓ ci-key-rotation: secrets_dir ${secretsDir}`,
      "✓ ci-key-rotation: the token's user's SSH keys",
      '✓ ci-key-rotation: project acme/api (deploy keys)',
      '✓ ci-key-rotation: project acme/web (deploy keys)',
      'all checks passed',
    ]);

    // It did ask the forge (who the token is, and each target), but only read.
    const log = (await (await fetch(`${sandboxUrl}/__sandbox/requests?method=GET`)).json()) as Array<{ path: string }>;
    expect(log.map((entry) => entry.path)).toEqual(
      expect.arrayContaining([
        '/api/v4/user',
        '/api/v4/projects/acme%2Fapi/jobs',
        '/api/v4/projects/acme%2Fweb/deploy_keys',
      ]),
    );
    expect(await writesRecorded()).toEqual([]);
    // No key was written to the secrets folder, and its Redis check left no value behind.
    expect(readdirSync(secretsDir)).toEqual([]);
    const redis = new Redis(redisUrl());
    try {
      expect(await redis.keys(`${prefix}:*doctor*`)).toEqual([]);
    } finally {
      await redis.quit();
    }
  });

  it('fails on a wrong token with exit 1, naming GITLAB_TOKEN and the 401, and does not check the policies', async () => {
    const result = await runCli(['doctor', '-c', DEMO_CONFIG], demoEnv({ GITLAB_TOKEN: 'glpat-wrong' }));
    expect(result.code).toBe(1);
    expect(linesOf(result)).toEqual([
      `✓ policy file ${DEMO_CONFIG}: valid, 5 policies`,
      `✓ Redis at ${redisUrl()}: answers and accepts writes`,
      '✓ Redis maxmemory-policy: noeviction',
      `✓ forge at ${sandboxUrl}: answers`,
      `✗ token: the forge at ${sandboxUrl} refused the token (401 Unauthorized): check GITLAB_TOKEN (gitlab.token in ${DEMO_CONFIG}) and that GITLAB_URL (gitlab.url) is the forge it belongs to`,
      '✗ policies: not checked, the forge refused the token',
      '2 checks failed',
    ]);
    expect(result.stdout).not.toContain('glpat-wrong');
  });

  it('fails when Redis does not answer, and still checks the forge, the token and the policies', async () => {
    const deadRedis = `redis://127.0.0.1:${await freePort()}`;
    const result = await runCli(['doctor', '-c', DEMO_CONFIG], demoEnv({ REDIS_URL: deadRedis }));
    expect(result.code).toBe(1);
    const lines = linesOf(result);
    expect(lines[1]).toBe(`✗ Redis at ${deadRedis} (REDIS_URL): does not answer: connection refused (ECONNREFUSED)`);
    expect(lines).toEqual(
      expect.arrayContaining([
        `✓ forge at ${sandboxUrl}: answers`,
        '✓ token: accepted, user root, an administrator',
        '✓ retry-transient-failures: project acme/api (jobs)',
        '✓ ci-key-rotation: project acme/web (deploy keys)',
      ]),
    );
    expect(lines.filter((line) => line.startsWith('✗'))).toHaveLength(1);
    expect(lines.at(-1)).toBe('1 check failed');
  });

  it('fails on a Redis that may evict keys, naming maxmemory-policy; the daemon on it says so in forgewarden_redis_noeviction', async () => {
    const evicting = await startRedisServer();
    const connection = new Redis(evicting.url);
    try {
      await connection.config('SET', 'maxmemory-policy', 'allkeys-lru');
      const result = await runCli(['doctor', '-c', DEMO_CONFIG], demoEnv({ REDIS_URL: evicting.url }));
      expect(result.code).toBe(1);
      expect(linesOf(result).filter((line) => line.startsWith('✗'))).toEqual([
        '✗ Redis maxmemory-policy is allkeys-lru: Redis may evict a ledger or claim key when memory runs short, and an evicted ledger key is an action done twice; set maxmemory-policy noeviction',
      ]);

      // A daemon with no policies: it acts on nothing, so the sandbox stays unchanged for the last test.
      const httpPort = await freePort();
      const idle = writeTempFile(
        'idle.yml',
        ['version: 1', `redis: { prefix: ${prefix} }`, `http: { port: ${httpPort} }`, 'policies: []', ''].join('\n'),
      );
      const daemon = startCli(['run', '-c', idle], demoEnv({ REDIS_URL: evicting.url }));
      try {
        const gauge = async () =>
          /^forgewarden_redis_noeviction (\S+)$/m.exec(
            await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text(),
          )?.[1];
        await waitUntil(
          'the daemon reports the eviction policy',
          async () => (await gauge().catch(() => undefined)) !== undefined,
          30_000,
        );
        expect(await gauge()).toBe('0');
        await connection.config('SET', 'maxmemory-policy', 'noeviction');
        // Looked at again with the Redis check, every 10 s.
        await waitUntil('the daemon sees noeviction', async () => (await gauge()) === '1', 30_000);
      } finally {
        expect((await daemon.stop('SIGTERM')).code).toBe(0);
      }
    } finally {
      await connection.quit();
      await evicting.stop();
    }
  }, 90_000);

  it('fails when the forge does not answer within gitlab.start_timeout, naming GITLAB_URL and the bound, and says the token and policies were not checked', async () => {
    const deadForge = `http://127.0.0.1:${await freePort()}`;
    const file = writeTempFile(
      'policies.yml',
      readFileSync(DEMO_CONFIG, 'utf8').replace(/^gitlab:\n/m, 'gitlab:\n  start_timeout: 2s\n'),
    );
    const result = await runCli(['doctor', '-c', file], demoEnv({ GITLAB_URL: deadForge }));
    expect(result.code).toBe(1);
    const lines = linesOf(result);
    expect(lines.slice(0, 3)).toEqual([
      `✓ policy file ${file}: valid, 5 policies`,
      `✓ Redis at ${redisUrl()}: answers and accepts writes`,
      '✓ Redis maxmemory-policy: noeviction',
    ]);
    expect(lines[3]).toMatch(
      new RegExp(
        `^✗ cannot reach the forge at ${deadForge.replace(/\./g, '\\.')} \\(GITLAB_URL\\): .+; gave up after \\d+\\.\\ds \\(gitlab\\.start_timeout 2s\\)$`,
      ),
    );
    expect(lines.slice(4)).toEqual([
      '✗ token: not checked, the forge did not answer',
      '✗ policies: not checked, the forge did not answer',
      '3 checks failed',
    ]);
  });

  it('fails on a secrets_dir that does not exist, and passes everything else', async () => {
    const missing = join(secretsDir, 'not-there');
    const result = await runCli(['doctor', '-c', DEMO_CONFIG], demoEnv({ FORGEWARDEN_DEMO_SECRETS: missing }));
    expect(result.code).toBe(1);
    const failures = linesOf(result).filter((line) => line.startsWith('✗'));
    expect(failures).toEqual([`✗ ci-key-rotation: secrets_dir ${missing}: does not exist`]);
    expect(linesOf(result).at(-1)).toBe('1 check failed');
  });

  it('fails on a project that does not exist, naming the policy and the project, and passes the one that does', async () => {
    const file = writeTempFile(
      'nope.yml',
      [
        'version: 1',
        `gitlab: { url: "${sandboxUrl}", token: ${ADMIN_TOKEN} }`,
        `redis: { url: "${redisUrl()}", prefix: ${prefix} }`,
        'policies:',
        '  - name: retry-nope',
        '    type: job_retry',
        '    projects: [acme/api, acme/nope]',
        '    interval: 5m',
        '    match: { failure_log: ["ETIMEDOUT"] }',
      ].join('\n'),
    );
    const result = await runCli(['doctor', '-c', file], childEnv());
    expect(result.code).toBe(1);
    expect(linesOf(result).slice(5)).toEqual([
      '✓ token: does not expire',
      '✓ retry-nope: project acme/api (jobs)',
      "✗ retry-nope: project acme/nope (jobs): not found, or the token cannot see it (check the path and that the token's user is a member)",
      '1 check failed',
    ]);
  });

  it('warns about a glob that matches no project, without failing, and passes one that matches', async () => {
    const file = writeTempFile(
      'globs.yml',
      [
        'version: 1',
        `gitlab: { url: "${sandboxUrl}", token: ${ADMIN_TOKEN} }`,
        `redis: { url: "${redisUrl()}", prefix: ${prefix} }`,
        'policies:',
        '  - name: retry-globs',
        '    type: job_retry',
        '    projects: ["acme/*", "acme/nothing-*"]',
        '    interval: 5m',
      ].join('\n'),
    );
    const result = await runCli(['doctor', '-c', file], childEnv());
    expect(result.code).toBe(0);
    expect(linesOf(result).slice(5)).toEqual([
      '✓ token: does not expire',
      '! retry-globs: projects acme/*, acme/nothing-* (group acme): acme/nothing-* matches no project the token can see',
      'all checks passed',
    ]);
  });

  it("with a non-administrator's token: the rules that need an administrator and the targets it may not work on fail", async () => {
    const result = await runCli(['doctor', '-c', DEMO_CONFIG], demoEnv({ GITLAB_TOKEN: USER_TOKEN }));
    expect(result.code).toBe(1);
    // alice: Developer of the group acme (so of acme/web), Maintainer of acme/api.
    expect(linesOf(result).slice(4)).toEqual([
      '✓ token: accepted, user alice, not an administrator',
      '✓ token: does not expire',
      '✓ retry-transient-failures: project acme/api (jobs)',
      '✓ retry-transient-failures: project acme/web (jobs)',
      '✓ nightly-image-cleanup: group acme (container registry)',
      "✗ staff-access: needs an administrator's token: its rules look at email_domains, two_factor, external, which only an administrator's token can see; until it can, the requests those rules would decide are left pending, neither approved nor denied",
      '✗ staff-access: group acme (access requests): the token may not work on it: needs Owner role, or Maintainer where the forge allows it',
      '✗ staff-access: project acme/web (access requests): the token may not work on it: needs Maintainer role or higher',
      '✓ branch-baseline: project acme/api (protected branches)',
      `✓ ci-key-rotation: secrets_dir ${secretsDir}`,
      "✓ ci-key-rotation: the token's user's SSH keys",
      '✓ ci-key-rotation: project acme/api (deploy keys)',
      '✗ ci-key-rotation: project acme/web (deploy keys): the token may not work on it: needs Maintainer role or higher',
      '4 checks failed',
    ]);
  });

  it("with a non-administrator's token: rotating another user's SSH keys needs an administrator", async () => {
    const file = writeTempFile(
      'rotate-carol.yml',
      [
        'version: 1',
        `gitlab: { url: "${sandboxUrl}", token: "\${GITLAB_TOKEN}" }`,
        `redis: { url: "${redisUrl()}", prefix: ${prefix} }`,
        'policies:',
        '  - name: rotate-carol',
        '    type: key_rotation',
        '    interval: 1h',
        `    secrets_dir: ${secretsDir}`,
        '    ssh_keys:',
        '      - { user: carol, titles: ["^ci"], rotate_before: 30d, lifetime: 180d, grace: 1d }',
      ].join('\n'),
    );
    const asUser = await runCli(['doctor', '-c', file], childEnv({ GITLAB_TOKEN: USER_TOKEN }));
    expect(asUser.code).toBe(1);
    expect(linesOf(asUser).filter((line) => line.startsWith('✗'))).toEqual([
      "✗ rotate-carol: needs an administrator's token: it rotates the SSH keys of carol, which only an administrator's token may",
    ]);

    const asAdmin = await runCli(['doctor', '-c', file], childEnv({ GITLAB_TOKEN: ADMIN_TOKEN }));
    expect(asAdmin.code).toBe(0);
    expect(linesOf(asAdmin).slice(4)).toEqual([
      '✓ token: accepted, user root, an administrator',
      '✓ token: does not expire',
      `✓ rotate-carol: secrets_dir ${secretsDir}`,
      '✓ rotate-carol: SSH keys of user carol',
      'all checks passed',
    ]);
  });

  it('warns 30 days before the token expires and fails 7 days before, as the daemon’s alerts do', async () => {
    const day = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);
    const expire = (expires_at: string | null) =>
      fetch(`${sandboxUrl}/__sandbox/access-tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: ADMIN_TOKEN, expires_at }),
      });
    try {
      await expire(day(20));
      const warned = await runCli(['doctor', '-c', DEMO_CONFIG], demoEnv());
      expect(warned.code).toBe(0);
      expect(linesOf(warned)[5]).toMatch(
        new RegExp(`^! token: expires on ${day(20)}, in 19 days: rotate it before it lapses$`),
      );
      expect(linesOf(warned).at(-1)).toBe('all checks passed');

      await expire(day(5));
      const failed = await runCli(['doctor', '-c', DEMO_CONFIG], demoEnv());
      expect(failed.code).toBe(1);
      expect(linesOf(failed)[5]).toBe(`✗ token: expires on ${day(5)}, in 4 days: rotate it now, or the daemon stops`);
      expect(linesOf(failed).at(-1)).toBe('1 check failed');
    } finally {
      await expire(null);
    }
  });

  it('reads the token from gitlab.token_file, and names the file when it cannot be used or a rotation of it is half done', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'forgewarden-e2e-doctor-token-'));
    const tokenFile = join(folder, 'token');
    try {
      const file = writeTempFile(
        'token-file.yml',
        readFileSync(DEMO_CONFIG, 'utf8').replace(/^(\s*)token: .*$/m, `$1token_file: ${tokenFile}`),
      );
      writeFileSync(tokenFile, `${ADMIN_TOKEN}\n`, { mode: 0o600 });
      const fromFile = await runCli(['doctor', '-c', file], demoEnv({ GITLAB_TOKEN: 'glpat-not-this-one' }));
      expect(fromFile.code).toBe(0);
      expect(linesOf(fromFile).slice(4, 6)).toEqual([
        '✓ token: accepted, user root, an administrator',
        '✓ token: does not expire',
      ]);

      chmodSync(tokenFile, 0o644);
      const open = await runCli(['doctor', '-c', file], demoEnv());
      expect(open.code).toBe(1);
      expect(linesOf(open).slice(3)).toEqual([
        `✗ token: token file ${tokenFile} may be read by other users (mode 644): chmod 600 ${tokenFile}`,
        '1 check failed',
      ]);

      const slot = (value: string, id: number) => ({
        id,
        value,
        name: `forgewarden-${id}`,
        expires_at: null,
        retired_at: null,
        retired_generation: null,
        lost: null,
      });
      const halfDone = {
        version: 1,
        generation: 3,
        active: 0,
        tokens: [slot(ADMIN_TOKEN, 1), slot('glpat-spare-0000', 99)],
        pending: { slot: 1, id: 99, sent_at: '2025-06-02T12:00:00.000Z' },
      };
      writeFileSync(tokenFile, JSON.stringify(halfDone));
      chmodSync(tokenFile, 0o600);
      const pending = await runCli(['doctor', '-c', file], demoEnv());
      expect(pending.code).toBe(1);
      expect(linesOf(pending).filter((line) => line.startsWith('✗'))).toEqual([
        '✗ token rotation: the answer to the rotation of token 99 (sent 2025-06-02T12:00:00.000Z) was not written; the daemon looks for its successor at its next run',
      ]);
      expect(`${pending.stdout}${pending.stderr}`).not.toContain('glpat-spare-0000');
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('reports an invalid policy file on stderr and exits 2 (as every command does) without checking anything else', async () => {
    const file = writeTempFile(
      'invalid.yml',
      ['version: 2', `gitlab: { url: "${sandboxUrl}", token: ${ADMIN_TOKEN} }`, ''].join('\n'),
    );
    const result = await runCli(['doctor', '-c', file], childEnv());
    expect(result.code).toBe(2);
    expect(result.stdout).toBe(`✗ policy file ${file}: invalid (the problems are listed above)\n`);
    expect(result.stderr).toContain(`${file}:1:10 version: expected version: 1`);
    expect(result.stderr).toContain(`${file}: 1 problem`);
  });

  it('changed nothing on the forge in any of these runs: the sandbox recorded no POST, PUT or DELETE', async () => {
    expect(await writesRecorded()).toEqual([]);
  });
});
