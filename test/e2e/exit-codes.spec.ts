import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  childEnv,
  runCli,
  startSandboxCommand,
  writeTempFile,
  type CliProcess,
  type CliResult,
  DEMO_RETRY_POLICIES,
} from '../support/cli';
import { dropKeys } from '../support/redis-server';

const REPO = resolve(__dirname, '../..');
const ADMIN_TOKEN = 'glpat-sandbox-admin-token';
/** Nothing listens here: a command that tried Redis would fail (exit 1), not report a usage error (exit 2). */
const NO_REDIS = 'redis://127.0.0.1:1';

/** The README's exit-code table, row by row: what the commands promise. */
function readmeExitCodes(): Array<{ code: number; meaning: string }> {
  const lines = readFileSync(join(REPO, 'README.md'), 'utf8').split('\n');
  const header = lines.findIndex((line) => /^\| exit code \| meaning \|$/.test(line));
  if (header < 0) throw new Error('README.md has no exit-code table');
  const rows: Array<{ code: number; meaning: string }> = [];
  for (const line of lines.slice(header + 2)) {
    const row = /^\| (\d+) \| (.+) \|$/.exec(line);
    if (!row) break;
    rows.push({ code: Number(row[1]), meaning: row[2] });
  }
  return rows;
}

interface Case {
  readonly what: string;
  readonly args: () => string[];
  /** `usage`: Redis unreachable and the sandbox's request log checked empty afterwards. */
  readonly env?: 'usage' | 'wrong-token';
  /** Every line of stderr, in order. */
  readonly stderr: ReadonlyArray<string | RegExp> | (() => ReadonlyArray<string | RegExp>);
  /** Only the first line of stderr is the command's: commander prints its help after its own usage errors. */
  readonly helpFollows?: boolean;
  readonly stdout?: RegExp;
  /** Run before the command, to put the forge in the state the case needs. */
  readonly before?: () => Promise<void>;
}

/**
 * Every row of the README's exit-code table, walked with commands that end with that code, each with the one line
 * (or lines) it prints on stderr. The usage errors (2) are found before anything contacts Redis or the forge: Redis
 * points at a closed port and the sandbox forge records no request.
 */
describe('the exit codes, as the README lists them', () => {
  let sandbox: CliProcess;
  let sandboxUrl: string;
  let env: NodeJS.ProcessEnv;
  let file: string;
  let invalidFile: string;
  let notAnArchive: string;
  const prefix = `e2e-exit-codes-${process.pid}`;

  const control = async (method: string, path: string, body?: unknown) =>
    (
      await fetch(`${sandboxUrl}/__sandbox${path}`, {
        method,
        ...(body ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
      })
    ).status;
  const requests = async () =>
    ((await (await fetch(`${sandboxUrl}/__sandbox/requests`)).json()) as Array<{ method: string; path: string }>).map(
      (entry) => `${entry.method} ${entry.path}`,
    );

  beforeAll(async () => {
    ({ process: sandbox, url: sandboxUrl } = await startSandboxCommand());
    // At warn, the commands log nothing on a pass that goes well: stderr holds only what the command says.
    env = childEnv({
      GITLAB_URL: sandboxUrl,
      GITLAB_TOKEN: ADMIN_TOKEN,
      REDIS_URL: process.env.REDIS_URL,
      LOG_LEVEL: 'warn',
    });
    file = writeTempFile(
      'exit-codes.yml',
      [
        'version: 1',
        'gitlab: { url: "${GITLAB_URL}", token: "${GITLAB_TOKEN}" }',
        `redis: { url: "\${REDIS_URL}", prefix: ${prefix} }`,
        'dry_run: true',
        'policies:',
        ...DEMO_RETRY_POLICIES,
      ].join('\n'),
    );
    invalidFile = writeTempFile('invalid.yml', ['version: 1', 'dry_rn: true', ''].join('\n'));
    notAnArchive = writeTempFile('backup.tar.gz', 'not an archive');
  });

  afterAll(async () => {
    await sandbox.stop();
    await dropKeys(prefix);
  });

  const invalidLines = () => [
    `${invalidFile}:2:1 dry_rn: unknown key "dry_rn"; did you mean "dry_run"?`,
    `${invalidFile}: 1 problem`,
  ];
  const policies = 'configured: retry-network, retry-full-disk';

  const cases: Record<number, Case[]> = {
    0: [
      {
        what: 'validate --no-env of the example file, without GITLAB_URL or GITLAB_TOKEN',
        args: () => ['validate', '--no-env', join(REPO, 'config/example.yml')],
        stderr: [],
      },
      {
        what: 'plan --exit-code when nothing would be done',
        args: () => ['plan', '-c', file, '--policy', 'retry-full-disk', '--exit-code'],
        stderr: [],
        stdout: /^retry-full-disk \(job_retry, dry run\): 0 to act on/,
      },
    ],
    1: [
      {
        what: 'plan with a token the forge refuses',
        args: () => ['plan', '-c', file],
        env: 'wrong-token',
        stderr: [/^forgewarden plan: (?=.*GITLAB_TOKEN)(?=.*\b401\b)/],
      },
    ],
    2: [
      {
        what: 'an unknown option',
        args: () => ['plan', '--nope'],
        env: 'usage',
        stderr: ["error: unknown option '--nope'"],
        helpFollows: true,
      },
      {
        what: 'validate of an invalid file',
        args: () => ['validate', invalidFile],
        env: 'usage',
        stderr: invalidLines,
      },
      {
        what: 'doctor of an invalid file',
        args: () => ['doctor', '-c', invalidFile],
        env: 'usage',
        stderr: invalidLines,
        stdout: /^✗ policy file .*: invalid/,
      },
      { what: 'plan of an invalid file', args: () => ['plan', '-c', invalidFile], env: 'usage', stderr: invalidLines },
      {
        what: 'plan --policy of an unknown policy',
        args: () => ['plan', '-c', file, '--policy', 'nope'],
        env: 'usage',
        stderr: [`forgewarden plan: no policy named "nope"; ${policies}`],
      },
      {
        what: 'once --policy of an unknown policy',
        args: () => ['once', '-c', file, '--policy', 'nope'],
        env: 'usage',
        stderr: [`forgewarden once: no policy named "nope"; ${policies}`],
      },
      ...(['plan', 'once', 'restore', 'hooks install', 'hooks remove'] as const).map((command): Case => ({
        what: `${command} --dry-run --no-dry-run`,
        args: () => [
          ...command.split(' '),
          '-c',
          file,
          '--dry-run',
          '--no-dry-run',
          ...(command.startsWith('hooks') ? ['--url', 'https://fw.example/webhooks/gitlab'] : []),
        ],
        env: 'usage',
        stderr: ['error: --dry-run and --no-dry-run cannot be used together'],
      })),
      {
        what: 'restore without --from',
        args: () => ['restore', '-c', file, '--group', 'restored'],
        env: 'usage',
        stderr: [
          'forgewarden restore: --from PATH is required: the backup archive, or the backup set folder, to restore',
        ],
      },
      {
        what: 'restore --from a file that does not exist',
        args: () => ['restore', '-c', file, '--from', '/nonexistent.tar.gz', '--group', 'restored'],
        env: 'usage',
        stderr: ['forgewarden restore: --from /nonexistent.tar.gz: no such file'],
      },
      {
        what: 'restore --wait that is no number',
        args: () => ['restore', '-c', file, '--from', notAnArchive, '--group', 'restored', '--wait', 'soon'],
        env: 'usage',
        stderr: ['forgewarden restore: --wait soon: expected a number of seconds'],
      },
      {
        what: 'hooks install with a bad --url',
        args: () => ['hooks', 'install', '-c', file, '--url', 'ftp://x'],
        env: 'usage',
        stderr: [/^forgewarden hooks install: --url must be the daemon's webhook URL/],
      },
      {
        what: 'hooks install with webhooks off in the file',
        args: () => ['hooks', 'install', '-c', file, '--url', 'https://fw.example/webhooks/gitlab'],
        env: 'usage',
        stderr: [/^forgewarden hooks install: webhooks are not enabled in the policy file/],
      },
      {
        what: 'test of a test file that is not there',
        args: () => ['test', '/nonexistent.test.yml'],
        env: 'usage',
        stderr: [
          '/nonexistent.test.yml:1:1 (file): cannot read the test file: no such file or folder',
          'forgewarden test: 1 problem; no test was run',
        ],
      },
      {
        what: 'record --max-projects that is no number',
        args: () => ['record', '-c', file, '--policy', 'retry-network', '-o', '/dev/null', '--max-projects', 'all'],
        env: 'usage',
        stderr: ['forgewarden record: --max-projects must be a whole number of 1 or more (got "all")'],
      },
      {
        what: 'audit --since that is no duration',
        args: () => ['audit', '-c', file, '--since', 'lately'],
        env: 'usage',
        stderr: ['forgewarden audit: --since expects a duration such as 30m, 24h or 7d (got "lately")'],
      },
    ],
    3: [
      {
        what: 'plan --exit-code when an action would be taken',
        args: () => ['plan', '-c', file, '--exit-code'],
        stderr: [],
        stdout: /^retry +acme\/api job \d+ /m,
      },
    ],
    4: [
      {
        what: 'plan when a project is closed to the token: the others are planned, that one is named',
        before: async () =>
          expect(await control('POST', '/access', { user: 'root', project: 'acme/web', level: 0 })).toBe(200),
        args: () => ['plan', '-c', file],
        stderr: [],
        stdout: /^not read: project acme\/web: /m,
      },
    ],
  };

  const rows = readmeExitCodes();

  it('the README lists exactly the codes walked here', () => {
    expect(rows.map((row) => row.code)).toEqual(Object.keys(cases).map(Number));
  });

  it.each(rows)(
    'exit $code ($meaning)',
    async ({ code }) => {
      for (const example of cases[code] ?? []) {
        await example.before?.();
        if (example.env === 'usage') expect(await control('DELETE', '/requests')).toBeLessThan(300);
        const caseEnv =
          example.env === 'usage'
            ? { ...env, REDIS_URL: NO_REDIS }
            : example.env === 'wrong-token'
              ? { ...env, GITLAB_TOKEN: 'glpat-wrong-0000' }
              : env;
        const result: CliResult = await runCli(example.args(), caseEnv);
        const seen = { what: example.what, code: result.code, stderr: result.stderr };
        expect(seen).toEqual({ what: example.what, code, stderr: expect.any(String) });
        const all = result.stderr === '' ? [] : result.stderr.trimEnd().split('\n');
        const lines = example.helpFollows ? all.slice(0, 1) : all;
        const expected: unknown[] = (typeof example.stderr === 'function' ? example.stderr() : example.stderr).map(
          (line): unknown => (typeof line === 'string' ? line : expect.stringMatching(line)),
        );
        expect({ what: example.what, lines }).toEqual({ what: example.what, lines: expected });
        if (example.stdout) expect(result.stdout).toMatch(example.stdout);
        if (example.env === 'usage')
          expect({ what: example.what, requests: await requests() }).toEqual({ what: example.what, requests: [] });
      }
      // A code walks up to a dozen commands, each a process of its own: on a loaded machine that is minutes, not seconds.
    },
    240_000,
  );
});
