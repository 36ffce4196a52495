import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Redis from 'ioredis';
import { childEnv, CliProcess, type CliResult, startSandboxCommand, waitUntil } from '../support/cli';
import { dropKeys, freePort, startRedisServer } from '../support/redis-server';

const ROOT = resolve(__dirname, '../..');
const TIMES = 10;

/** Whether any process of the group `pgid` is still there. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A command as a terminal runs it: the leader of a process group of its own (the foreground job), stdin not a
 * terminal. Ctrl-C is SIGINT to every process of the group: npm or npx and the daemon below it alike.
 */
class Terminal {
  readonly process: CliProcess;

  constructor(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }) {
    this.process = new CliProcess(
      spawn(command, args, { ...options, detached: true, stdio: ['ignore', 'pipe', 'pipe'] }),
    );
  }

  get output(): string {
    return this.process.stdout + this.process.stderr;
  }

  /** Ctrl-C, then the command's exit once every process of its group has ended. */
  async ctrlC(): Promise<CliResult> {
    const pgid = this.process.child.pid!;
    process.kill(-pgid, 'SIGINT');
    const result = await this.process.exited;
    await waitUntil('every process of the group has ended', () => !groupAlive(pgid), 30_000);
    return result;
  }

  kill(): void {
    const pgid = this.process.child.pid!;
    if (groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
  }
}

describe('Ctrl-C in a terminal', () => {
  const prefixes: string[] = [];
  const open: Terminal[] = [];
  let forge: { process: CliProcess; url: string };
  let dir: string;

  beforeAll(async () => {
    forge = await startSandboxCommand();
    dir = mkdtempSync(join(tmpdir(), 'forgewarden-ctrl-c-'));
  });

  afterAll(async () => {
    for (const terminal of open) terminal.kill();
    await forge.process.stop('SIGTERM');
    for (const prefix of prefixes) await dropKeys(prefix);
    rmSync(dir, { recursive: true, force: true });
  });

  /** A policy file for a daemon of its own: a prefix and HTTP port of its own, one policy at work on the sandbox. */
  async function daemonEnv(name: string): Promise<NodeJS.ProcessEnv> {
    const prefix = `e2e-ctrl-c-${name}-${process.pid}`;
    prefixes.push(prefix);
    const file = join(dir, `${name}.yml`);
    writeFileSync(
      file,
      [
        'version: 1',
        `gitlab: { url: "${forge.url}", token: "glpat-sandbox-admin-token" }`,
        `redis: { prefix: ${prefix} }`,
        `http: { port: ${await freePort()} }`,
        'policies:',
        '  - { name: retry, type: job_retry, projects: [acme/api], interval: 1m, match: { failure_log: ["ETIMEDOUT"] } }',
        '',
      ].join('\n'),
    );
    return childEnv({ FORGEWARDEN_CONFIG: file, REDIS_URL: process.env.REDIS_URL });
  }

  /** Starts the daemon in a terminal, waits until it runs, presses Ctrl-C: `TIMES` times in a row. */
  async function stopsCleanly(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<CliResult[]> {
    const results: CliResult[] = [];
    for (let time = 0; time < TIMES; time++) {
      const terminal = new Terminal(command, args, { cwd: ROOT, env });
      open.push(terminal);
      await waitUntil(
        'the daemon runs',
        () => terminal.output.includes('started with 1 policy') || !terminal.process.running,
        60_000,
      );
      results.push(await terminal.ctrlC());
      // The daemon's own word for it, whatever npx did meanwhile.
      expect({
        stopped: /"message":"stopped"/.test(terminal.output),
        second: terminal.output.includes('second signal'),
        output: terminal.output.length > 0,
      }).toEqual({
        stopped: true,
        second: false,
        output: true,
      });
    }
    return results;
  }

  it(`stops npm start cleanly, ${TIMES} times in a row: exit 0 and "stopped" each time`, async () => {
    const results = await stopsCleanly('npm', ['start', '--silent'], await daemonEnv('npm-start'));
    expect(results.map((result) => result.code)).toEqual(Array(TIMES).fill(0));
  }, 300_000);

  it(`stops forgewarden run cleanly, ${TIMES} times in a row`, async () => {
    const results = await stopsCleanly(process.execPath, [join(ROOT, 'dist/main.js'), 'run'], await daemonEnv('run'));
    expect(results.map((result) => result.code)).toEqual(Array(TIMES).fill(0));
  }, 300_000);

  // npx ends at the signal itself (npm's own behaviour), leaving its child to finish: the daemon stops as cleanly as above.
  it(`stops npx forgewarden run cleanly, ${TIMES} times in a row`, async () => {
    const results = await stopsCleanly('npx', ['--no-install', 'forgewarden', 'run'], await daemonEnv('npx'));
    expect(results.every((result) => result.code === 0 || result.signal === 'SIGINT')).toBe(true);
  }, 300_000);

  it(`stops npm run demo cleanly, ${TIMES} times in a row, leaving no key behind`, async () => {
    // The demo script as package.json has it, after its build step: the suite runs against one build, and rebuilding
    // dist/ under the other tests would pull it from under them.
    const script = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
      .scripts.demo;
    expect(script.startsWith('npm run build && ')).toBe(true);
    const project = join(dir, 'demo-project');
    mkdirSync(project);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({
        name: 'demo-after-build',
        private: true,
        scripts: {
          demo: script.replace('npm run build && ', '').replace('scripts/demo.js', join(ROOT, 'scripts/demo.js')),
        },
      }),
    );
    // A Redis of its own: every key in it is the demo's, and none may be left.
    const throwaway = await startRedisServer();
    const env = childEnv({ REDIS_URL: throwaway.url, FORGEWARDEN_HTTP_PORT: String(await freePort()) });
    delete env.LOG_LEVEL;
    const redis = new Redis(throwaway.url);
    for (let time = 0; time < TIMES; time++) {
      const terminal = new Terminal('npm', ['run', 'demo', '--silent'], { cwd: project, env });
      open.push(terminal);
      await waitUntil(
        'the demo prints its console address',
        () => terminal.output.includes('(Ctrl-C stops the demo)') || !terminal.process.running,
        120_000,
      );
      const result = await terminal.ctrlC();
      expect({
        code: result.code,
        signal: result.signal,
        last: terminal.process.stdout.trimEnd().split('\n').at(-1),
      }).toEqual({
        code: 0,
        signal: null,
        last: expect.stringMatching(
          /^Demo stopped: the daemon stopped cleanly, the sandbox is closed, and its \d+ keys are gone from Redis\.$/,
        ),
      });
      expect(terminal.output).not.toContain('second signal');
      expect(await redis.dbsize()).toBe(0);
    }
    await redis.quit();
    await throwaway.stop();
  }, 900_000);
});
