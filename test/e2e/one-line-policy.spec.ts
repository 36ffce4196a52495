import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Redis from 'ioredis';
import { childEnv, CliProcess, type CliResult, startSandboxCommand, waitUntil, writeTempFile } from '../support/cli';

const DIST = resolve(__dirname, '../../dist');
const FIXTURE = resolve(__dirname, '../fixtures/one-line-policy/project-note.type.js');

/**
 * "A new policy is one folder and one line": a policy type that is not part of the build is added to a copy of the
 * built daemon as a folder of its own and one line in the list of policies (`policies/index.js`), and then runs through
 * `validate`, `plan`, `once` and the daemon, with no change to the engine.
 */
describe('a policy type added with one folder and one line', () => {
  let copy: string;
  let sandbox: CliProcess;
  let env: NodeJS.ProcessEnv;
  const prefix = `e2e-one-line-${process.pid}`;

  beforeAll(async () => {
    copy = mkdtempSync(join(tmpdir(), 'forgewarden-one-line-'));
    cpSync(DIST, join(copy, 'dist'), { recursive: true });
    // The folder…
    cpSync(FIXTURE, join(copy, 'dist/policies/project-note/project-note.type.js'));
    // …and the line.
    const index = join(copy, 'dist/policies/index.js');
    const list = readFileSync(index, 'utf8');
    if (!list.includes('exports.POLICIES = ['))
      throw new Error('dist/policies/index.js does not list POLICIES as expected');
    writeFileSync(
      index,
      list.replace(
        'exports.POLICIES = [',
        "exports.POLICIES = [\n    require('./project-note/project-note.type').projectNoteType,",
      ),
    );
    const forge = await startSandboxCommand();
    sandbox = forge.process;
    // The copy finds its packages in this checkout.
    env = childEnv({
      GITLAB_URL: forge.url,
      GITLAB_TOKEN: 'glpat-sandbox-admin-token',
      REDIS_URL: process.env.REDIS_URL,
      NODE_PATH: resolve(__dirname, '../../node_modules'),
    });
  });

  afterAll(async () => {
    await sandbox.stop();
    rmSync(copy, { recursive: true, force: true });
    const redis = new Redis(process.env.REDIS_URL!);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  const start = (args: string[]) =>
    new CliProcess(
      spawn(process.execPath, [join(copy, 'dist/main.js'), ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] }),
    );
  const run = async (args: string[]): Promise<CliResult> => {
    const command = start(args);
    const timer = setTimeout(() => command.child.kill('SIGKILL'), 20_000);
    try {
      return await command.exited;
    } finally {
      clearTimeout(timer);
    }
  };
  const file = () =>
    writeTempFile(
      'one-line.yml',
      [
        'version: 1',
        'gitlab: { url: "${GITLAB_URL}", token: "${GITLAB_TOKEN}" }',
        `redis: { url: "\${REDIS_URL}", prefix: ${prefix} }`,
        'dry_run: false',
        'http: { port: 0 }',
        'policies:',
        '  - { name: notes, type: project_note, interval: 1h, projects: [acme/api, acme/web] }',
      ].join('\n'),
    );

  it('is validated, planned, acted on once, and run by the daemon', async () => {
    const config = file();
    const validate = await run(['validate', config]);
    expect([validate.code, validate.stdout.trim()]).toEqual([0, `${config}: valid, 1 policy`]);

    const plan = await run(['plan', '-c', config, '--json']);
    expect(plan.code).toBe(0);
    const [planned] = JSON.parse(plan.stdout) as Array<{
      type: string;
      decisions: Array<{ action: string; target: string }>;
    }>;
    expect(planned?.type).toBe('project_note');
    expect(planned?.decisions.map((decision) => `${decision.action} ${decision.target}`)).toEqual([
      'note acme/api',
      'note acme/web',
    ]);

    const once = await run(['once', '-c', config, '--json']);
    expect(once.code).toBe(0);
    const [acted] = JSON.parse(once.stdout) as Array<{ outcomes: Array<{ outcome: string; detail: string }> }>;
    expect(acted?.outcomes.map((outcome) => `${outcome.outcome} ${outcome.detail}`)).toEqual([
      'done noted acme/api',
      'done noted acme/web',
    ]);

    // The daemon: it passes at start (the record of once's pass is taken away, or it would wait out the interval), finds
    // both noted already (the ledger), and acts on nothing.
    const redis = new Redis(process.env.REDIS_URL!);
    try {
      await redis.hdel(`${prefix}:passes:last_ok`, 'notes');
      const daemon = start(['run', '-c', config]);
      try {
        await waitUntil(
          'the daemon records a pass of notes',
          async () => (await redis.hget(`${prefix}:passes:last_ok`, 'notes')) !== null,
          20_000,
        );
      } finally {
        expect((await daemon.stop()).code).toBe(0);
      }
      expect(await redis.get(`${prefix}:state:notes:noted:acme/api`)).not.toBeNull();
      expect(await redis.get(`${prefix}:state:notes:noted:acme/web`)).not.toBeNull();
      const audit = JSON.parse((await run(['audit', '-c', config, '--json'])).stdout) as Array<{
        policy: string;
        outcome: string;
      }>;
      expect(audit.filter((entry) => entry.policy === 'notes').map((entry) => entry.outcome)).toEqual(['done', 'done']);
    } finally {
      await redis.quit();
    }
  });
});
