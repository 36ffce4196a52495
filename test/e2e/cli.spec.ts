import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { childEnv, runCli, startCli, statusOf, waitUntil, writeTempFile } from '../support/cli';
import { freePort } from '../support/redis-server';

const TOKEN = 'glpat-e2e-secret-0123456789';
const redisUrl = () => process.env.REDIS_URL!;

function validFile(extra = ''): string {
  return writeTempFile(
    'policies.yml',
    ['version: 1', 'gitlab:', '  url: https://gitlab.example.com', `  token: ${TOKEN}`, extra].join('\n'),
  );
}

describe('forgewarden validate', () => {
  it('accepts a valid file with exit 0', async () => {
    const file = validFile();
    const result = await runCli(['validate', '-c', file]);
    expect(result).toMatchObject({ code: 0, stdout: `${file}: valid, 0 policies\n`, stderr: '' });
  });

  it('reads FORGEWARDEN_CONFIG when -c is not given', async () => {
    const file = validFile();
    const result = await runCli(['validate'], childEnv({ FORGEWARDEN_CONFIG: file }));
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${file}: valid, 0 policies\n`);
  });

  it('points a YAML syntax error at its line, with exit 2', async () => {
    const file = writeTempFile(
      'broken.yml',
      ['version: 1', 'gitlab:', '  url: https://x.example', '\ttoken: t', ''].join('\n'),
    );
    const result = await runCli(['validate', '-c', file]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(`${file}:4:1 (syntax): Tabs are not allowed as indentation\n${file}: 1 problem\n`);
  });

  it('says an unclosed [ in the demo file once, at the bracket', async () => {
    const lines = readFileSync(resolve(__dirname, '../../config/demo.yml'), 'utf8').split('\n');
    const at = lines.findIndex((line) => line.trim() === 'projects: [acme/api, acme/web]');
    lines[at] = lines[at].replace(']', '');
    const file = writeTempFile('demo.yml', lines.join('\n'));
    const result = await runCli(['validate', '-c', file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `${file}:${at + 1}:${lines[at].indexOf('[') + 1} (syntax): this [ is never closed: end the list with ]\n${file}: 1 problem\n`,
    );
  });

  it('lists an unknown key, a bad duration, a duplicate name and an unknown type, each on its own line', async () => {
    const file = writeTempFile(
      'problems.yml',
      [
        'version: 1',
        'gitlab:',
        '  url: https://gitlab.example.com',
        '  token: ${GITLAB_TOKEN:-glpat-placeholder-000000}',
        '  timeout: 5 minutes',
        'dry_rn: false',
        'policies:',
        '  - name: nightly',
        '    type: registry_clean',
        '  - name: nightly',
        '    type: job_retry',
        '    projects: [acme/api]',
        '    interval: 5m',
      ].join('\n'),
    );
    const result = await runCli(['validate', '-c', file]);
    expect(result.code).toBe(2);
    expect(result.stderr.trimEnd().split('\n')).toEqual([
      `${file}:5:12 gitlab.timeout: expected a duration such as 30s, 5m, 2h, 14d, 2w or 1month`,
      `${file}:6:1 dry_rn: unknown key "dry_rn"; did you mean "dry_run"?`,
      `${file}:9:11 policies[0].type: unknown policy type "registry_clean"; known types: job_retry, registry_cleanup, access_requests, key_rotation, project_settings, group_backup`,
      `${file}:10:11 policies[1].name: duplicate policy name "nightly" (policies[0] has it already)`,
      `${file}: 4 problems`,
    ]);
  });

  it('--no-env checks the example file without GITLAB_URL and GITLAB_TOKEN; without the flag they are errors', async () => {
    const example = resolve(__dirname, '../../config/example.yml');
    const env = childEnv();
    expect(env.GITLAB_URL).toBeUndefined();
    expect(env.GITLAB_TOKEN).toBeUndefined();
    expect(await runCli(['validate', '--no-env', example], env)).toMatchObject({
      code: 0,
      stdout: `${example}: valid, 6 policies\n`,
      stderr: '',
    });

    const withEnv = await runCli(['validate', example], env);
    expect(withEnv.code).toBe(2);
    expect(withEnv.stderr).toMatch(/^\S+:11:8 gitlab\.url: environment variable GITLAB_URL is not set /m);
    // An empty variable is said to be empty.
    const empty = await runCli(
      ['validate', example],
      childEnv({ GITLAB_URL: 'https://gitlab.example.com', GITLAB_TOKEN: '' }),
    );
    expect(empty.code).toBe(2);
    expect(empty.stderr).toBe(
      `${example}:12:10 gitlab.token: environment variable GITLAB_TOKEN is empty (write \${GITLAB_TOKEN:-default} to give a default)\n${example}: 1 problem\n`,
    );
  });

  it('--no-env still reports what is wrong whatever the environment holds, and skips only the checks of its values', async () => {
    const file = writeTempFile(
      'no-env.yml',
      [
        'version: 1',
        'gitlab:',
        '  timeout: ${FORGE_TIMEOUT}',
        'policies:',
        '  - name: retry',
        '    type: job_retry',
        '    projects: [acme/api]',
        '    interval: ${RETRY_INTERVAL:-1m}',
        '    match: { job_names: ["${JOB_PATTERN}", "(?<=x)y"] }',
        '    delay: 30 seconds',
      ].join('\n'),
    );
    const result = await runCli(['validate', '--no-env', file], childEnv({ FORGE_TIMEOUT: 'not a duration' }));
    expect(result.code).toBe(2);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toBe(
      `${file}:9:44 policies[0].match.job_names[1]: invalid RE2 regular expression: RE2 does not support look-behind \`(?<=\``,
    );
    expect(lines[1]).toMatch(new RegExp(`^${file}:10:12 policies\\[0\\]\\.delay: expected a duration`));
    expect(lines[2]).toBe(`${file}: 2 problems`);
  });

  it('says so when the file does not exist', async () => {
    const result = await runCli(['validate', '-c', '/nonexistent/policies.yml']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('/nonexistent/policies.yml:1:1 (file): cannot read the policy file: no such file');
  });
});

describe('forgewarden schema', () => {
  it('prints the JSON Schema of the policy file', async () => {
    const result = await runCli(['schema']);
    expect(result.code).toBe(0);
    const schema = JSON.parse(result.stdout) as { $schema: string; title: string; properties: Record<string, unknown> };
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schema.title).toBe('Forgewarden policy file');
    expect(Object.keys(schema.properties)).toEqual(
      expect.arrayContaining(['version', 'gitlab', 'redis', 'dry_run', 'http', 'shutdown_timeout', 'policies']),
    );
  });

  it('prints all of it into a shell pipe, past the pipe buffer', () => {
    // A piped stdout is written asynchronously: exiting before it drained cut the schema off at 64 KiB.
    const main = resolve(__dirname, '../../dist/main.js');
    // The reader starts late, as a busy one would, so the pipe is full when the command is done writing.
    const piped = spawnSync('sh', ['-c', `node "${main}" schema | (sleep 0.3; cat)`], {
      encoding: 'utf8',
      maxBuffer: 16 * 1024 * 1024,
    });
    expect(piped.status).toBe(0);
    expect(piped.stdout.length).toBeGreaterThan(65_536);
    expect(() => JSON.parse(piped.stdout) as unknown).not.toThrow();
  });
});

describe('forgewarden run', () => {
  it('refuses to start with an invalid file, exit 2, listing the problems', async () => {
    const file = validFile('dry_run: maybe\nhttp: { port: 70000 }');
    const result = await runCli(['run', '-c', file], childEnv({ REDIS_URL: redisUrl() }));
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr.trimEnd().split('\n')).toEqual([
      `${file}:5:10 dry_run: Invalid input: expected boolean, received string`,
      `${file}:6:15 http.port: Too big: expected number to be <=65535`,
      `${file}: 2 problems`,
    ]);
  });

  it('fails within its connect timeout, naming Redis and the cause, when Redis is down', async () => {
    const port = await freePort();
    const file = validFile('redis:\n  connect_timeout: 1s\nhttp: { port: 0 }');
    const result = await runCli(['run', '-c', file], childEnv({ REDIS_URL: `redis://127.0.0.1:${port}` }), 15_000);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      new RegExp(
        `^forgewarden run: cannot reach Redis at redis://127\\.0\\.0\\.1:${port} \\(REDIS_URL\\): connection refused \\(ECONNREFUSED\\); gave up after \\d+\\.\\ds \\(redis\\.connect_timeout 1s\\)\\n$`,
      ),
    );
    expect(result.stdout + result.stderr).not.toContain(TOKEN);
  });

  it('hides a Redis password in that message', async () => {
    const port = await freePort();
    const file = validFile(
      `redis:\n  url: redis://:hunter2-password@127.0.0.1:${port}\n  connect_timeout: 1s\nhttp: { port: 0 }`,
    );
    const result = await runCli(['run', '-c', file], childEnv(), 15_000);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      new RegExp(
        `^forgewarden run: cannot reach Redis at redis://:\\[REDACTED\\]@127\\.0\\.0\\.1:${port} \\(REDIS_URL\\): connection refused \\(ECONNREFUSED\\); gave up after \\d+\\.\\ds \\(redis\\.connect_timeout 1s\\)\\n$`,
      ),
    );
  });

  it('serves health, readiness and metrics, and exits 0 on SIGTERM; not ready while the forge cannot be reached', async () => {
    const port = await freePort();
    const file = validFile(`redis: { prefix: e2e-run-${port} }\nhttp: { port: ${port} }`);
    const daemon = startCli(['run', '-c', file], childEnv({ REDIS_URL: redisUrl() }));
    try {
      await waitUntil(
        'the daemon serves /healthz',
        async () => (await statusOf(`http://127.0.0.1:${port}/healthz`)) === 200,
      );
      // It serves while it still sets up its schedules (readiness says "starting" then); once they are in place, it says
      // why it is not ready: gitlab.example.com does not resolve here, so the daemon runs and says it cannot work.
      let status = 0;
      let body: { checks: Record<string, string> } = { checks: {} };
      await waitUntil('the daemon has set up its schedules', async () => {
        const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
        status = ready.status;
        body = (await ready.json()) as { checks: Record<string, string> };
        return body.checks.schedules !== 'starting';
      });
      expect(status).toBe(503);
      expect(body.checks).toMatchObject({ redis: 'ok', schedules: 'ok' });
      expect(body.checks.forge).toMatch(/^cannot reach the forge at https:\/\/gitlab\.example\.com \(GITLAB_URL\): /);
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).toMatch(/^forgewarden_build_info\{version="\d+\.\d+\.\d+"\} 1$/m);
      expect(metrics).toMatch(/^process_cpu_user_seconds_total /m);
      expect(metrics).toMatch(/^forgewarden_redis_up 1$/m);
      expect(metrics).toMatch(/^forgewarden_forge_up 0$/m);
    } finally {
      const result = await daemon.stop('SIGTERM');
      expect(result.code).toBe(0);
      expect(result.stdout + result.stderr).not.toContain(TOKEN);
    }
  });

  it('exits 0 on SIGINT too', async () => {
    const port = await freePort();
    const file = validFile(`redis: { prefix: e2e-int-${port} }\nhttp: { port: ${port} }`);
    const daemon = startCli(['run', '-c', file], childEnv({ REDIS_URL: redisUrl() }));
    await waitUntil(
      'the daemon serves /healthz',
      async () => (await statusOf(`http://127.0.0.1:${port}/healthz`)) === 200,
    );
    const result = await daemon.stop('SIGINT');
    expect(result.code).toBe(0);
    expect(await statusOf(`http://127.0.0.1:${port}/healthz`)).toBe(0);
  });

  it('says in one line which port is taken and how to choose another, with exit 2, before waiting for Redis', async () => {
    const port = await freePort();
    const blocker = createServer();
    await new Promise<void>((done) => blocker.listen(port, '127.0.0.1', done));
    try {
      const file = validFile(`redis: { prefix: e2e-taken-${port} }\nhttp: { port: ${port} }`);
      // A Redis that never answers: the port is said at once, not after redis.connect_timeout.
      const result = await runCli(['run', '-c', file], childEnv({ REDIS_URL: 'redis://10.255.255.1:6379' }));
      expect({ code: result.code, stderr: result.stderr }).toEqual({
        code: 2,
        stderr: `forgewarden run: port ${port} on 127.0.0.1 is taken by another process; choose another with --http-port N (or http.port in ${file}; 0 turns HTTP off)\n`,
      });
    } finally {
      await new Promise((done) => blocker.close(done));
    }
  });

  it('serves on --http-port instead of http.port', async () => {
    const [filePort, port] = [await freePort(), await freePort()];
    const daemon = startCli(
      [
        'run',
        '-c',
        validFile(`redis: { prefix: e2e-http-port-${port} }\nhttp: { port: ${filePort} }`),
        '--http-port',
        String(port),
      ],
      childEnv({ REDIS_URL: redisUrl() }),
    );
    await waitUntil(
      'the daemon serves /healthz',
      async () => (await statusOf(`http://127.0.0.1:${port}/healthz`)) === 200,
    );
    expect(await statusOf(`http://127.0.0.1:${filePort}/healthz`)).toBe(0);
    expect((await daemon.stop('SIGINT')).code).toBe(0);
    const bad = await runCli(['run', '-c', validFile(), '--http-port', 'http']);
    expect({ code: bad.code, stderr: bad.stderr }).toEqual({
      code: 2,
      stderr: 'forgewarden run: --http-port must be a whole number from 0 to 65535 (got "http")\n',
    });
  });
});
