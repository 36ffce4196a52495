import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Redis from 'ioredis';
import {
  childEnv,
  CLI,
  CliProcess,
  runCli,
  startCli,
  statusOf,
  waitUntil,
  writeTempFile,
  type CliResult,
  DEMO_RETRY_POLICIES,
} from '../support/cli';
import { freePort } from '../support/redis-server';
import { tempDir } from '../support/temp';

const REPO = resolve(__dirname, '../..');
const DEMO_CONFIG = join(REPO, 'config/demo.yml');
const ADMIN_TOKEN = 'glpat-sandbox-admin-token';
const STACK_LINE = /^ {4}at /m;

/** Runs the command in `cwd`, for what depends on the working directory (the default policy file). */
function runCliIn(cwd: string, args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return new CliProcess(spawn(process.execPath, [CLI, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] }))
    .exited;
}

const stderrLines = (result: CliResult) => result.stderr.trimEnd().split('\n');

interface PassJson {
  policy: string;
  type: string;
  dry_run: boolean;
  decisions: Array<{ action: string; target: string; key: string; reason: string }>;
  outcomes?: Array<{ action: string; target: string; key: string; outcome: string; detail?: string }>;
}

describe('forgewarden validate with several files', () => {
  const validFile = (name: string, policies: number) =>
    writeTempFile(
      name,
      [
        'version: 1',
        'gitlab: { url: https://gitlab.example.com, token: glpat-e2e-0000 }',
        policies > 0 ? 'policies:' : '',
        ...Array.from({ length: policies }, (_, i) =>
          [
            `  - name: retry-${i}`,
            '    type: job_retry',
            '    projects: [acme/api]',
            '    interval: 5m',
            '    match: { failure_log: ["ETIMEDOUT"] }',
          ].join('\n'),
        ),
      ].join('\n'),
    );

  it('checks every file: prints each valid one on stdout, each problem of each invalid one on stderr, exit 2', async () => {
    const first = validFile('first.yml', 2);
    const badVersion = writeTempFile(
      'bad-version.yml',
      ['version: 2', 'gitlab: { url: https://gitlab.example.com, token: t0000 }', ''].join('\n'),
    );
    const second = validFile('second.yml', 1);
    const badKey = writeTempFile(
      'bad-key.yml',
      ['version: 1', 'gitlab: { url: https://gitlab.example.com, token: t0000 }', 'dry_rn: true', ''].join('\n'),
    );
    const result = await runCli(['validate', first, badVersion, second, badKey]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe(`${first}: valid, 2 policies\n${second}: valid, 1 policy\n`);
    expect(stderrLines(result)).toEqual([
      `${badVersion}:1:10 version: expected version: 1 (the only version of the policy file so far)`,
      `${badVersion}: 1 problem`,
      `${badKey}:3:1 dry_rn: unknown key "dry_rn"; did you mean "dry_run"?`,
      `${badKey}: 1 problem`,
    ]);
  });

  it('exits 0 when every file is valid', async () => {
    const first = validFile('a.yml', 0);
    const second = validFile('b.yml', 3);
    const result = await runCli(['validate', first, second]);
    expect(result).toMatchObject({
      code: 0,
      stdout: `${first}: valid, 0 policies\n${second}: valid, 3 policies\n`,
      stderr: '',
    });
  });

  it('without an argument checks -c FILE, else FORGEWARDEN_CONFIG', async () => {
    const named = validFile('named.yml', 1);
    const fromEnv = validFile('from-env.yml', 2);
    const withOption = await runCli(['validate', '-c', named], childEnv({ FORGEWARDEN_CONFIG: fromEnv }));
    expect(withOption).toMatchObject({ code: 0, stdout: `${named}: valid, 1 policy\n` });
    const withEnv = await runCli(['validate'], childEnv({ FORGEWARDEN_CONFIG: fromEnv }));
    expect(withEnv).toMatchObject({ code: 0, stdout: `${fromEnv}: valid, 2 policies\n` });
  });

  it('without an argument, -c or FORGEWARDEN_CONFIG checks config/policies.yml of the working directory', async () => {
    // What a user does first: their own config/policies.yml from the example the repository ships.
    const workdir = tempDir('e2e-own');
    mkdirSync(join(workdir, 'config'));
    copyFileSync(join(REPO, 'config/example.yml'), join(workdir, 'config/policies.yml'));
    const own = await runCliIn(
      workdir,
      ['validate'],
      childEnv({ GITLAB_URL: 'https://gitlab.example.com', GITLAB_TOKEN: 'glpat-e2e-0000' }),
    );
    expect(own.code).toBe(0);
    expect(own.stdout).toMatch(/^config\/policies\.yml: valid, \d+ polic(y|ies)\n$/);

    const elsewhere = await runCliIn(tempDir('e2e-empty'), ['validate'], childEnv());
    expect(elsewhere.code).toBe(2);
    // A newcomer's first command: the message names both ways on.
    expect(elsewhere.stderr).toBe(
      'config/policies.yml:1:1 (file): cannot read the policy file: no such file; start one from the example (cp config/example.yml config/policies.yml), ' +
        'or name another with -c (-c config/demo.yml runs against the sandbox forge)\nconfig/policies.yml: 1 problem\n',
    );
  });
});

describe('usage errors, --help and --version', () => {
  it.each([
    ['an unknown option', ['plan', '--nope'], "error: unknown option '--nope'"],
    ['an argument to a command that takes none', ['plan', 'extra'], "error: too many arguments for 'plan'"],
    ['an unknown command', ['frobnicate'], "error: unknown command 'frobnicate'"],
  ])('%s exits 2 and says what is wrong', async (_what, args, message) => {
    const result = await runCli(args);
    expect(result.code).toBe(2);
    expect(result.stderr.startsWith(message)).toBe(true);
    expect(result.stderr).not.toMatch(STACK_LINE);
  });

  it('--help exits 0 and lists the commands', async () => {
    const result = await runCli(['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: forgewarden \[options\] \[command\]/);
    for (const command of ['validate', 'doctor', 'run', 'plan', 'once', 'audit', 'sandbox'])
      expect(result.stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
  });

  it("a command's --help exits 0 and lists its options", async () => {
    const result = await runCli(['plan', '--help']);
    expect(result.code).toBe(0);
    for (const option of ['--exit-code', '--dry-run', '--no-dry-run', '--json', '--policy'])
      expect(result.stdout).toContain(option);
  });

  it('--version exits 0 and prints the version of package.json', async () => {
    const { version } = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string };
    const result = await runCli(['--version']);
    expect(result).toMatchObject({ code: 0, stdout: `${version}\n` });
  });
});

describe('plan, once and audit options against the sandbox', () => {
  let sandbox: CliProcess;
  let sandboxUrl: string;
  let secretsDir: string;
  let env: NodeJS.ProcessEnv;
  const demoPrefix = `e2e-options-demo-${process.pid}`;
  const filePrefix = `e2e-options-file-${process.pid}`;
  const redisUrl = () => process.env.REDIS_URL!;
  /** A file with dry_run: true and two job_retry policies: one with retries to do, one with nothing to do. */
  let dryFile: string;
  /** A file reading the forge's address and token from the environment, with the same Redis keys as `dryFile`. */
  let envFile: string;

  const requests = async () => {
    const log = (await (await fetch(`${sandboxUrl}/__sandbox/requests`)).json()) as Array<{
      method: string;
      path: string;
    }>;
    return log.map((entry) => `${entry.method} ${entry.path}`);
  };
  const writes = async () => (await requests()).filter((request) => !request.startsWith('GET '));

  beforeAll(async () => {
    const port = await freePort();
    sandbox = startCli(['sandbox', '--port', String(port)], childEnv());
    sandboxUrl = `http://127.0.0.1:${port}`;
    secretsDir = tempDir('e2e-options-keys');
    env = childEnv({
      GITLAB_URL: sandboxUrl,
      GITLAB_TOKEN: ADMIN_TOKEN,
      REDIS_URL: redisUrl(),
      FORGEWARDEN_DEMO_PREFIX: demoPrefix,
      FORGEWARDEN_DEMO_SECRETS: secretsDir,
    });
    dryFile = writeTempFile(
      'dry.yml',
      [
        'version: 1',
        `gitlab: { url: "${sandboxUrl}", token: ${ADMIN_TOKEN} }`,
        `redis: { url: "${redisUrl()}", prefix: ${filePrefix} }`,
        'dry_run: true',
        'policies:',
        ...DEMO_RETRY_POLICIES,
      ].join('\n'),
    );
    envFile = writeTempFile(
      'from-env.yml',
      [
        'version: 1',
        'gitlab: { url: "${GITLAB_URL}", token: "${GITLAB_TOKEN}" }',
        `redis: { url: "${redisUrl()}", prefix: ${filePrefix} }`,
        'policies:',
        '  - name: retry-network',
        '    type: job_retry',
        '    projects: [acme/api]',
        '    interval: 5m',
        '    match: { failure_log: ["ETIMEDOUT"] }',
      ].join('\n'),
    );
    await waitUntil('the sandbox answers', async () => (await statusOf(`${sandboxUrl}/api/v4/user`)) === 401);
  });

  afterAll(async () => {
    await sandbox.stop();
    const redis = new Redis(redisUrl());
    for (const prefix of [demoPrefix, filePrefix]) {
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
    }
    await redis.quit();
  });

  describe('a bad LOG_LEVEL or LOG_FORMAT', () => {
    const commands: Record<string, () => string[]> = {
      validate: () => ['validate', '-c', DEMO_CONFIG],
      doctor: () => ['doctor', '-c', DEMO_CONFIG],
      plan: () => ['plan', '-c', DEMO_CONFIG],
      once: () => ['once', '-c', DEMO_CONFIG],
      audit: () => ['audit', '-c', DEMO_CONFIG],
      run: () => ['run', '-c', DEMO_CONFIG],
      schema: () => ['schema'],
      sandbox: () => ['sandbox', '--port', '0'],
    };

    /** Runs every command with `setting` added to the environment, two at a time (each only starts and stops). */
    const runEvery = async (setting: NodeJS.ProcessEnv) => {
      const results: Record<string, CliResult> = {};
      const entries = Object.entries(commands);
      for (let i = 0; i < entries.length; i += 2) {
        await Promise.all(
          entries
            .slice(i, i + 2)
            .map(async ([name, args]) => (results[name] = await runCli(args(), { ...env, ...setting }, 15_000))),
        );
      }
      return results;
    };
    const expectedForEvery = (stderr: string) =>
      Object.fromEntries(
        Object.keys(commands).map((name) => [name, expect.objectContaining({ code: 2, stdout: '', stderr })]),
      );

    beforeAll(async () => {
      await fetch(`${sandboxUrl}/__sandbox/requests`, { method: 'DELETE' });
    });

    it('LOG_LEVEL=chatty: every command exits 2 with one line naming the allowed levels', async () => {
      expect(await runEvery({ LOG_LEVEL: 'chatty' })).toEqual(
        expectedForEvery('error: LOG_LEVEL must be one of fatal, error, warn, info, debug, verbose (got "chatty")\n'),
      );
    });

    it('LOG_FORMAT=xml: every command exits 2 with one line naming the allowed formats', async () => {
      expect(await runEvery({ LOG_FORMAT: 'xml' })).toEqual(
        expectedForEvery('error: LOG_FORMAT must be one of json, pretty (got "xml")\n'),
      );
    });

    it('stops before any command talks to the forge', async () => {
      expect(await requests()).toEqual([]);
    });
  });

  it('plan with a refused token exits 1 with one line naming GITLAB_TOKEN and the 401, no stack trace', async () => {
    const result = await runCli(['plan', '-c', DEMO_CONFIG], { ...env, GITLAB_TOKEN: 'glpat-wrong' });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    const lines = stderrLines(result);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('GITLAB_TOKEN');
    expect(lines[0]).toContain('401');
    expect(lines[0]).not.toContain('glpat-wrong');
    expect(result.stderr).not.toMatch(STACK_LINE);
  });

  it('audit runs with only Redis: GITLAB_URL and GITLAB_TOKEN unset, no actions yet', async () => {
    const noForge = childEnv();
    expect(noForge.GITLAB_URL).toBeUndefined();
    expect(noForge.GITLAB_TOKEN).toBeUndefined();
    // The same file cannot be planned without them: audit really runs without the forge's settings.
    const plan = await runCli(['plan', '-c', envFile], noForge);
    expect(plan.code).toBe(2);
    expect(plan.stderr).toContain('environment variable GITLAB_TOKEN is not set');

    const audit = await runCli(['audit', '-c', envFile], noForge);
    expect(audit).toMatchObject({ code: 0, stdout: 'no actions in the last 24h\n' });
  });

  it('plan --exit-code exits 3 on the demo config, which has retries to do; plan without it exits 0', async () => {
    const withFlag = await runCli(['plan', '-c', DEMO_CONFIG, '--exit-code'], env);
    expect(withFlag.code).toBe(3);
    expect(withFlag.stdout).toMatch(/^retry +acme\/api job 1002 \(test-unit\) /m);
    const without = await runCli(['plan', '-c', DEMO_CONFIG], env);
    expect(without.code).toBe(0);
    expect(without.stdout).toMatch(/^retry +acme\/api job 1002 \(test-unit\) /m);
  });

  it('plan --exit-code exits 0 for a policy that has nothing to do, 3 for one that has', async () => {
    const nothing = await runCli(['plan', '-c', dryFile, '--policy', 'retry-full-disk', '--exit-code', '--json'], env);
    expect(nothing.code).toBe(0);
    const [pass] = JSON.parse(nothing.stdout) as PassJson[];
    expect(pass?.decisions.length).toBeGreaterThan(0);
    expect(pass?.decisions.every((decision) => decision.action === 'skip')).toBe(true);

    const something = await runCli(['plan', '-c', dryFile, '--policy', 'retry-network', '--exit-code'], env);
    expect(something.code).toBe(3);
  });

  it('plan --dry-run --json shows dry_run: true for every policy of a file that acts', async () => {
    const asFile = JSON.parse((await runCli(['plan', '-c', DEMO_CONFIG, '--json'], env)).stdout) as PassJson[];
    expect(asFile.map((pass) => [pass.policy, pass.dry_run])).toEqual([
      ['retry-transient-failures', false],
      ['nightly-image-cleanup', false],
      ['staff-access', false],
      ['branch-baseline', false],
      ['ci-key-rotation', false],
    ]);
    const result = await runCli(['plan', '-c', DEMO_CONFIG, '--dry-run', '--json'], env);
    expect(result.code).toBe(0);
    const passes = JSON.parse(result.stdout) as PassJson[];
    expect(passes.map((pass) => [pass.policy, pass.dry_run])).toEqual([
      ['retry-transient-failures', true],
      ['nightly-image-cleanup', true],
      ['staff-access', true],
      ['branch-baseline', true],
      ['ci-key-rotation', true],
    ]);
  });

  it('once --dry-run on the demo config records would-be actions and sends the forge no write', async () => {
    await fetch(`${sandboxUrl}/__sandbox/requests`, { method: 'DELETE' });
    const result = await runCli(['once', '-c', DEMO_CONFIG, '--dry-run', '--json'], env);
    expect(result.code).toBe(0);
    const passes = JSON.parse(result.stdout) as PassJson[];
    const outcomes = passes.flatMap((pass) =>
      (pass.outcomes ?? []).map((outcome) => ({ policy: pass.policy, ...outcome })),
    );
    expect(new Set(outcomes.map((outcome) => outcome.outcome))).toEqual(new Set(['would_act', 'skipped']));
    expect(
      outcomes
        .filter((outcome) => outcome.outcome === 'would_act')
        .map((outcome) => `${outcome.action} ${outcome.target}`),
    ).toEqual(
      expect.arrayContaining([
        'retry acme/api job 1002 (test-unit)',
        'retry acme/web job 2002 (e2e-chrome)',
        'approve acme: carol (user 3)',
      ]),
    );

    // The forge was read, never written; no key was written to the secrets folder.
    expect(await requests()).toContain('GET /api/v4/user');
    expect(await writes()).toEqual([]);
    expect(readdirSync(secretsDir)).toEqual([]);
    // Nothing counts as done: the actions are still to do.
    expect(
      (await runCli(['plan', '-c', DEMO_CONFIG, '--policy', 'retry-transient-failures', '--exit-code'], env)).code,
    ).toBe(3);

    // The audit trail has the would-be actions, as dry runs.
    const audit = await runCli(['audit', '-c', DEMO_CONFIG, '--json'], env);
    expect(audit.code).toBe(0);
    const entries = JSON.parse(audit.stdout) as Array<{
      policy: string;
      target: string;
      outcome: string;
      dry_run: boolean;
    }>;
    expect(entries.length).toBeGreaterThan(0);
    expect(entries.every((entry) => entry.outcome === 'would_act' && entry.dry_run)).toBe(true);
    expect(entries.map((entry) => `${entry.policy}: ${entry.target}`)).toEqual(
      expect.arrayContaining([
        'retry-transient-failures: acme/api job 1002 (test-unit)',
        'retry-transient-failures: acme/web job 2002 (e2e-chrome)',
      ]),
    );
  });

  it('once --no-dry-run --json acts on a file with dry_run: true; its outcomes are what the sandbox received', async () => {
    await fetch(`${sandboxUrl}/__sandbox/requests`, { method: 'DELETE' });
    const result = await runCli(['once', '-c', dryFile, '--policy', 'retry-network', '--no-dry-run', '--json'], env);
    expect(result.code).toBe(0);
    const passes = JSON.parse(result.stdout) as PassJson[];
    expect(passes).toHaveLength(1);
    const [pass] = passes;
    expect(pass).toMatchObject({ policy: 'retry-network', type: 'job_retry', dry_run: false });
    expect(pass?.decisions.length).toBeGreaterThan(0);
    const done = (pass?.outcomes ?? []).filter((outcome) => outcome.outcome !== 'skipped');
    expect(done).toEqual([
      {
        action: 'retry',
        target: 'acme/api job 1002 (test-unit)',
        key: '1:1002',
        outcome: 'done',
        detail: expect.stringMatching(/^new job \d+$/),
      },
      {
        action: 'retry',
        target: 'acme/web job 2002 (e2e-chrome)',
        key: '2:2002',
        outcome: 'done',
        detail: expect.stringMatching(/^new job \d+$/),
      },
    ]);
    expect((await writes()).sort()).toEqual([
      'POST /api/v4/projects/1/jobs/1002/retry',
      'POST /api/v4/projects/2/jobs/2002/retry',
    ]);

    // Each "new job N" is a job the forge now has, retried from the job the outcome names.
    for (const [outcome, project] of [
      [done[0], 1],
      [done[1], 2],
    ] as const) {
      const newJob = outcome?.detail?.replace('new job ', '');
      const response = await fetch(`${sandboxUrl}/api/v4/projects/${project}/jobs/${newJob}`, {
        headers: { 'private-token': ADMIN_TOKEN },
      });
      expect(response.status).toBe(200);
      const job = (await response.json()) as { name: string };
      expect(job.name).toBe(outcome?.target.match(/\((.+)\)$/)?.[1]);
    }
  });

  it('plan --exit-code exits 0 once the retries are done', async () => {
    const result = await runCli(['plan', '-c', dryFile, '--policy', 'retry-network', '--exit-code'], env);
    expect(result.code).toBe(0);
    expect(result.stdout).not.toMatch(/^retry /m);
  });

  it('audit, still without GITLAB_URL and GITLAB_TOKEN, lists what once did', async () => {
    const result = await runCli(['audit', '-c', envFile], childEnv());
    expect(result.code).toBe(0);
    const rows = result.stdout.trimEnd().split('\n');
    expect(rows[0]).toMatch(/^TIME +POLICY +OUTCOME +ACTION +TARGET +REASON +DETAIL$/);
    expect(rows.slice(1)).toEqual([
      expect.stringMatching(/ retry-network +done +retry +acme\/api job 1002 \(test-unit\) .* new job \d+$/),
      expect.stringMatching(/ retry-network +done +retry +acme\/web job 2002 \(e2e-chrome\) .* new job \d+$/),
    ]);
  });
});
