import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import Redis from 'ioredis';
import { childEnv, CliProcess, startSandboxCommand, statusOf, waitUntil, writeTempFile } from '../support/cli';
import { freePort } from '../support/redis-server';

const ROOT = resolve(__dirname, '../..');

/** Whether `pid` is a live process (a zombie waiting to be reaped has ended). */
function alive(pid: number): boolean {
  if (!existsSync(`/proc/${pid}/stat`)) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** The processes below `pid` whose command line runs the built daemon. */
function daemonsUnder(pid: number): number[] {
  const found: number[] = [];
  const visit = (parent: number) => {
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${parent}/task`);
    } catch {
      return;
    }
    for (const task of tasks) {
      let children: string[] = [];
      try {
        children = readFileSync(`/proc/${parent}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
      } catch {
        continue;
      }
      for (const child of children.map(Number)) {
        try {
          if (
            readFileSync(`/proc/${child}/cmdline`, 'utf8')
              .split('\0')
              .some((arg) => arg.endsWith('dist/main.js'))
          )
            found.push(child);
        } catch {
          // ended meanwhile
        }
        visit(child);
      }
    }
  };
  visit(pid);
  return found;
}

/**
 * `npm start` as an operator runs it: npm in its own process group (as under `setsid`), the daemon below it. A
 * signal to npm alone must stop the daemon, and the daemon must not outlive npm.
 */
describe('npm start', () => {
  const prefixes: string[] = [];
  const running: CliProcess[] = [];
  const daemons: number[] = [];
  let forge: string;

  beforeAll(async () => {
    const sandbox = await startSandboxCommand();
    running.push(sandbox.process);
    forge = sandbox.url;
  });

  afterAll(async () => {
    for (const pid of daemons) if (alive(pid)) process.kill(pid, 'SIGKILL');
    for (const child of running) await child.stop('SIGTERM');
    const redis = new Redis(process.env.REDIS_URL!);
    for (const value of prefixes) {
      const keys = await redis.keys(`${value}:*`);
      if (keys.length > 0) await redis.del(...keys);
    }
    await redis.quit();
  });

  async function npmStart(name: string): Promise<{ npm: CliProcess; daemon: number; httpPort: number }> {
    const prefix = `e2e-npm-start-${name}-${process.pid}`;
    prefixes.push(prefix);
    const httpPort = await freePort();
    const file = writeTempFile(
      'policies.yml',
      [
        'version: 1',
        `gitlab: { url: "${forge}", token: "glpat-sandbox-admin-token" }`,
        `redis: { prefix: ${prefix} }`,
        `http: { port: ${httpPort} }`,
        'shutdown_timeout: 10s',
        'policies: []',
        '',
      ].join('\n'),
    );
    const npm = new CliProcess(
      spawn('npm', ['start', '--silent'], {
        cwd: ROOT,
        detached: true,
        env: childEnv({ FORGEWARDEN_CONFIG: file, REDIS_URL: process.env.REDIS_URL }),
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    running.push(npm);
    await waitUntil(
      'the daemon is ready',
      async () => (await statusOf(`http://127.0.0.1:${httpPort}/readyz`)) === 200,
      30_000,
    );
    const found = daemonsUnder(npm.child.pid!);
    expect(found).toHaveLength(1);
    daemons.push(found[0]);
    return { npm, daemon: found[0], httpPort };
  }

  // The bound: the drain (shutdown_timeout 10s, with nothing running it takes far less) plus slack for a loaded machine.
  const BOUND_MS = 25_000;

  it.each(['SIGTERM', 'SIGINT'] as const)(
    '%s to npm stops the daemon in order: it exits 0 and npm with it',
    async (signal) => {
      const { npm, daemon, httpPort } = await npmStart(signal.toLowerCase());
      process.kill(npm.child.pid!, signal);
      await waitUntil('the daemon is gone', () => !alive(daemon), BOUND_MS);
      // npm waits for its child and exits with its code.
      const result = await Promise.race([
        npm.exited,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('npm did not exit')), BOUND_MS).unref()),
      ]);
      expect({ code: result.code, signal: result.signal }).toEqual({ code: 0, signal: null });
      expect(await statusOf(`http://127.0.0.1:${httpPort}/healthz`)).toBe(0);
    },
  );

  it('the daemon does not outlive npm killed outright', async () => {
    const { npm, daemon, httpPort } = await npmStart('kill');
    process.kill(npm.child.pid!, 'SIGKILL');
    expect((await npm.exited).signal).toBe('SIGKILL');
    await waitUntil('the daemon is gone', () => !alive(daemon), BOUND_MS);
    expect(await statusOf(`http://127.0.0.1:${httpPort}/healthz`)).toBe(0);
  });
});
