import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Redis, { type RedisOptions } from 'ioredis';
import {
  childEnv,
  DEMO_RETRY_POLICIES,
  runCli,
  startCli,
  startSandboxCommand,
  statusOf,
  waitUntil,
  writeTempFile,
  type CliProcess,
} from '../support/cli';
import { freePort, redisAnswers } from '../support/redis-server';
import { tempDir } from '../support/temp';

const FIXTURES = resolve(__dirname, '../fixtures/redis-tls');
const CA_FILE = join(FIXTURES, 'ca.crt');
const ACL_USER = 'forgewarden';
const ACL_PASSWORD = 's3cret-acl-password';

/** A redis-server that speaks only TLS (certificate for redis.test) and lets in only one ACL user; undefined without TLS. */
function startTlsRedis(port: number): { pidFile: string } | undefined {
  const dir = tempDir('redis-tls');
  const pidFile = join(dir, 'redis.pid');
  const started = spawnSync(
    'redis-server',
    [
      '--port',
      '0',
      '--tls-port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--tls-cert-file',
      join(FIXTURES, 'server.crt'),
      '--tls-key-file',
      join(FIXTURES, 'server.key'),
      '--tls-ca-cert-file',
      CA_FILE,
      '--tls-auth-clients',
      'no',
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'yes',
      '--pidfile',
      pidFile,
      '--dir',
      dir,
      '--logfile',
      join(dir, 'redis.log'),
      '--user',
      'default',
      'off',
      '--user',
      ACL_USER,
      'on',
      `>${ACL_PASSWORD}`,
      '~*',
      '&*',
      '+@all',
    ],
    { stdio: 'ignore' },
  );
  return started.status === 0 ? { pidFile } : undefined;
}

/** How a test's own connection gets in: the ACL user, over TLS checked against the test CA. */
function aclOverTls(): RedisOptions {
  return { username: ACL_USER, password: ACL_PASSWORD, tls: { ca: readFileSync(CA_FILE), servername: 'redis.test' } };
}

/**
 * Whether this redis-server was built with TLS. Given a TLS port and no usable certificate, one built with it fails to
 * configure TLS and one built without it refuses the directive; neither starts.
 */
function redisHasTls(): boolean {
  const answer = spawnSync(
    'redis-server',
    ['--tls-port', '1', '--port', '0', '--tls-cert-file', '/nonexistent', '--tls-key-file', '/nonexistent'],
    {
      encoding: 'utf8',
      timeout: 10_000,
    },
  );
  return /Failed to configure TLS/i.test(`${answer.stdout}${answer.stderr}`);
}

const tlsBuilt = redisHasTls();

if (tlsBuilt)
  describe('Redis over TLS with an ACL user', () => {
    let port: number;
    let server: { pidFile: string };
    let sandbox: CliProcess;
    let sandboxUrl: string;
    const prefix = `e2e-redis-tls-${process.pid}`;

    beforeAll(async () => {
      port = await freePort();
      const started = startTlsRedis(port);
      if (!started) throw new Error('redis-server did not start with TLS');
      server = started;
      await waitUntil('the TLS Redis answers', () => redisAnswers(`rediss://127.0.0.1:${port}`, 1_000, aclOverTls()));
      ({ process: sandbox, url: sandboxUrl } = await startSandboxCommand());
    });

    afterAll(async () => {
      await sandbox.stop();
      try {
        process.kill(Number(readFileSync(server.pidFile, 'utf8').trim()), 'SIGKILL');
      } catch {
        // Already gone.
      }
    });

    function policyFile(redis: { password?: string; tls?: string; httpPort?: number }): string {
      return writeTempFile(
        'policies.yml',
        [
          'version: 1',
          `gitlab: { url: "${sandboxUrl}", token: glpat-sandbox-admin-token }`,
          'redis:',
          `  url: rediss://127.0.0.1:${port}`,
          `  prefix: ${prefix}`,
          `  username: ${ACL_USER}`,
          '  password: ${REDIS_PASSWORD}',
          ...(redis.tls === undefined
            ? [`  tls: { ca_file: "${CA_FILE}", server_name: redis.test }`]
            : redis.tls === ''
              ? []
              : [`  tls: ${redis.tls}`]),
          '  connect_timeout: 30s',
          `http: { port: ${redis.httpPort ?? 0} }`,
          'dry_run: true',
          'policies:',
          ...DEMO_RETRY_POLICIES,
          '',
        ].join('\n'),
      );
    }

    const env = (password = ACL_PASSWORD) => childEnv({ REDIS_PASSWORD: password });

    it('doctor, plan and once work through it, and the password is never printed', async () => {
      const file = policyFile({});
      const doctor = await runCli(['doctor', '-c', file], env());
      expect(doctor.stdout.split('\n').slice(0, 3)).toEqual([
        `✓ policy file ${file}: valid, 2 policies`,
        `✓ Redis at rediss://127.0.0.1:${port}: answers and accepts writes`,
        '✓ Redis maxmemory-policy: noeviction',
      ]);
      expect(doctor.code).toBe(0);
      const once = await runCli(['once', '-c', file], env());
      expect(once.code).toBe(0);
      expect(once.stdout).toMatch(/^would_act +retry +acme\/api job 1002 /m);
      // What once recorded is in that Redis, under the prefix.
      const redis = new Redis(`rediss://127.0.0.1:${port}`, aclOverTls());
      try {
        expect((await redis.keys(`${prefix}:*`)).length).toBeGreaterThan(0);
        await redis.flushdb();
      } finally {
        redis.disconnect();
      }
      for (const result of [doctor, once]) expect(result.stdout + result.stderr).not.toContain(ACL_PASSWORD);
    });

    it('a wrong password, or a server certificate not signed by a trusted CA, is one line and exit 1, at once', async () => {
      const wrong = await runCli(['plan', '-c', policyFile({})], env('not-the-password'));
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toMatch(
        new RegExp(
          `^forgewarden plan: cannot reach Redis at rediss://127\\.0\\.0\\.1:${port} \\(REDIS_URL\\): WRONGPASS.*\\n$`,
        ),
      );
      expect(wrong.stderr).not.toContain('not-the-password');

      const untrusted = await runCli(['plan', '-c', policyFile({ tls: '' })], env());
      expect(untrusted.code).toBe(1);
      expect(untrusted.stderr).toMatch(
        new RegExp(
          `^forgewarden plan: cannot reach Redis at rediss://127\\.0\\.0\\.1:${port} \\(REDIS_URL\\): .*(certificate|CERT).*\\n$`,
        ),
      );

      const missingCa = await runCli(['plan', '-c', policyFile({ tls: '{ ca_file: /nonexistent/ca.crt }' })], env());
      expect(missingCa.code).toBe(1);
      expect(missingCa.stderr).toBe(
        `forgewarden plan: cannot reach Redis at rediss://127.0.0.1:${port} (REDIS_URL): redis.tls.ca_file /nonexistent/ca.crt cannot be read (ENOENT)\n`,
      );
    });

    it('the daemon runs on it: its queues, schedules and health, ready and stopped in order', async () => {
      const httpPort = await freePort();
      const daemon = startCli(['run', '-c', policyFile({ httpPort })], env());
      try {
        await waitUntil(
          'the daemon is ready',
          async () => (await statusOf(`http://127.0.0.1:${httpPort}/readyz`)) === 200,
          30_000,
        );
        const metrics = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
        expect(metrics).toMatch(/^forgewarden_redis_up 1$/m);
        // Both interval policies passed at start, through Bull's queue on that Redis.
        await waitUntil(
          'the first passes are counted',
          async () => {
            const text = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
            return (
              /forgewarden_passes_total\{policy="retry-network",result="ok"\} 1/.test(text) &&
              /forgewarden_passes_total\{policy="retry-full-disk",result="ok"\} 1/.test(text)
            );
          },
          30_000,
        );
      } finally {
        const stopped = await daemon.stop('SIGTERM');
        expect(stopped.code).toBe(0);
        expect(stopped.stdout + stopped.stderr).not.toContain(ACL_PASSWORD);
      }
    }, 60_000);
  });
else it.todo("Redis over TLS: this redis-server was built without TLS (Debian's is built with it)");
