import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { pack } from 'tar-stream';
import { childEnv, runCli, startCli, startSandboxCommand, waitUntil, type CliProcess } from '../support/cli';
import { freePort } from '../support/redis-server';
import { tempDir } from '../support/temp';

/** A small but valid group export archive: `restore` verifies the archive before it needs Redis. */
async function archiveFile(dir: string): Promise<string> {
  const tar = pack();
  tar.entry({ name: 'VERSION' }, '0.2.4\n');
  tar.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of tar) chunks.push(chunk as Buffer);
  const file = join(dir, 'acme.tar.gz');
  writeFileSync(file, gzipSync(Buffer.concat(chunks)));
  return file;
}

/**
 * Every one-shot command against a Redis that refuses connections: one line naming REDIS_URL (its password hidden)
 * and the cause, nothing else, exit 1, and at once rather than after `redis.connect_timeout`.
 *
 * How fast is measured elsewhere (about 1.2-2 s of wall time, most of it Node loading the application); here the
 * timeout is a minute, so a command that waited it out takes a minute and one that gave up at once takes seconds,
 * however loaded the machine: half of it tells the two apart without timing the machine.
 */
describe('one-shot commands when Redis refuses connections', () => {
  const CONNECT_TIMEOUT_MS = 60_000;
  let sandbox: CliProcess;
  let file: string;
  let archive: string;
  let deadRedis: string;

  beforeAll(async () => {
    const started = await startSandboxCommand();
    sandbox = started.process;
    const dir = tempDir('redis-unreachable');
    file = join(dir, 'policies.yml');
    writeFileSync(
      file,
      [
        'version: 1',
        `gitlab: { url: "${started.url}", token: "glpat-sandbox-admin-token" }`,
        `redis: { connect_timeout: ${CONNECT_TIMEOUT_MS / 1000}s }`,
        'policies: []',
        '',
      ].join('\n'),
    );
    archive = await archiveFile(dir);
    deadRedis = `127.0.0.1:${await freePort()}`;
  });

  afterAll(async () => {
    await sandbox.stop();
  });

  const commands: Array<[string, () => string[]]> = [
    ['plan', () => ['plan']],
    ['once', () => ['once']],
    ['audit', () => ['audit']],
    ['hooks list', () => ['hooks', 'list', '--url', 'http://forgewarden.example/webhooks/gitlab']],
    ['restore', () => ['restore', '--from', archive, '--group', 'restored']],
  ];

  it.each(commands)(
    '%s: one line naming REDIS_URL without its password, exit 1, at once',
    async (name, args) => {
      const started = Date.now();
      const result = await runCli(
        [...args(), '-c', file],
        childEnv({ REDIS_URL: `redis://user:secret-password@${deadRedis}` }),
        2 * CONNECT_TIMEOUT_MS,
      );
      const elapsed = Date.now() - started;
      expect({ code: result.code, stdout: result.stdout, stderr: result.stderr }).toEqual({
        code: 1,
        stdout: '',
        stderr: `forgewarden ${name}: cannot reach Redis at redis://user:[REDACTED]@${deadRedis} (REDIS_URL): connection refused (ECONNREFUSED)\n`,
      });
      expect(elapsed).toBeLessThan(CONNECT_TIMEOUT_MS / 2);
    },
    3 * CONNECT_TIMEOUT_MS,
  );

  it(
    'run says at once what it waits for, why and until when; Ctrl-C while it waits stops it, exit 0',
    async () => {
      const daemon = startCli(['run', '-c', file, '--http-port', '0'], childEnv({ REDIS_URL: `redis://${deadRedis}` }));
      try {
        await waitUntil(
          'the daemon says it waits',
          () => daemon.stdout.includes('waiting for Redis') || !daemon.running,
          CONNECT_TIMEOUT_MS / 2,
        );
        // Said while it waits, not when the wait is over.
        expect(daemon.running).toBe(true);
        const said = daemon.stdout
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as { level: string; message: string });
        expect(said.filter((line) => line.message.startsWith('waiting'))).toEqual([
          expect.objectContaining({
            level: 'warn',
            message: expect.stringMatching(
              new RegExp(
                `^waiting for Redis at redis://${deadRedis} \\(REDIS_URL\\): connection refused \\(ECONNREFUSED\\); trying again until \\d\\d:\\d\\d:\\d\\d at the latest \\(redis\\.connect_timeout 1m\\)$`,
              ),
            ),
          }),
        ]);
      } finally {
        const result = await daemon.stop('SIGINT');
        expect(result.code).toBe(0);
        expect(result.stdout).toContain('SIGINT received while waiting for Redis: stopped');
      }
    },
    3 * CONNECT_TIMEOUT_MS,
  );

  // doctor gives Redis a few seconds at most whatever the timeout, so only what it says is checked here.
  it('doctor: its Redis check fails, naming REDIS_URL without its password, and the rest is checked', async () => {
    const result = await runCli(
      ['doctor', '-c', file],
      childEnv({ REDIS_URL: `redis://user:secret-password@${deadRedis}` }),
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('');
    const failed = result.stdout.split('\n').filter((line) => line.startsWith('✗'));
    expect(failed).toEqual([
      `✗ Redis at redis://user:[REDACTED]@${deadRedis} (REDIS_URL): does not answer: connection refused (ECONNREFUSED)`,
    ]);
    expect(result.stdout).not.toContain('secret-password');
  });
});
