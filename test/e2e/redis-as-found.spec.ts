import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Redis from 'ioredis';
import { childEnv, runCli, startCli, startSandboxCommand, statusOf, waitUntil, type CliProcess } from '../support/cli';
import { freePort, startRedisServer, type ThrowawayRedis } from '../support/redis-server';

const DEMO = resolve(__dirname, '../../config/demo.yml');
/** config/demo.yml's prefix when FORGEWARDEN_DEMO_PREFIX is not set: the tour's. */
const PREFIX = 'forgewarden-demo';
/** The shared request budget's window of the minute: documented as the one key a command that changes nothing writes. */
const BUDGET_WINDOW = new RegExp(`^${PREFIX}:ratelimit:\\d+$`);

/** Every key of a Redis with its value as DUMP gives it, but the budget's windows. */
async function snapshot(redis: Redis): Promise<Record<string, string>> {
  const keys = (await redis.keys('*')).filter((key) => !BUDGET_WINDOW.test(key)).sort();
  const values: Record<string, string> = {};
  for (const key of keys) values[key] = (await redis.dumpBuffer(key))?.toString('base64') ?? '';
  return values;
}

/**
 * The README's tour on a Redis of its own: the commands that change nothing (`validate`, `doctor`, `audit`, `plan`,
 * `hooks list`) leave it as they found it, but for the request budget's window of the minute, which expires by itself;
 * everything the tour writes is under config/demo.yml's prefix, and `forgewarden clear` removes it.
 */
describe("the tour leaves Redis as it found it, and clear removes the tour's keys", () => {
  let throwaway: ThrowawayRedis;
  let redis: Redis;
  let forge: { process: CliProcess; url: string };
  let secrets: string;
  let env: NodeJS.ProcessEnv;
  let httpPort: number;

  beforeAll(async () => {
    throwaway = await startRedisServer();
    redis = new Redis(throwaway.url);
    forge = await startSandboxCommand();
    secrets = mkdtempSync(join(tmpdir(), 'forgewarden-as-found-keys-'));
    httpPort = await freePort();
    env = childEnv({
      GITLAB_URL: forge.url,
      REDIS_URL: throwaway.url,
      FORGEWARDEN_DEMO_SECRETS: secrets,
      FORGEWARDEN_HTTP_PORT: String(httpPort),
    });
  });

  afterAll(async () => {
    await forge.process.stop('SIGTERM');
    await redis.quit();
    await throwaway.stop();
    rmSync(secrets, { recursive: true, force: true });
  });

  const looks: string[][] = [
    ['validate', DEMO],
    ['doctor', '-c', DEMO],
    ['audit', '-c', DEMO],
    ['plan', '-c', DEMO],
    ['hooks', 'list', '-c', DEMO, '--url', `http://127.0.0.1:9464/webhooks/gitlab`],
  ];

  async function expectLeftAsFound(): Promise<void> {
    for (const args of looks) {
      const before = await snapshot(redis);
      const result = await runCli(args, env, 60_000);
      expect({ command: args.slice(0, 2).join(' '), code: result.code }).toEqual({
        command: args.slice(0, 2).join(' '),
        code: 0,
      });
      expect({ command: args[0], keys: await snapshot(redis) }).toEqual({ command: args[0], keys: before });
    }
    // The budget's windows expire by themselves within two minutes.
    for (const key of (await redis.keys('*')).filter((name) => BUDGET_WINDOW.test(name))) {
      expect(await redis.pttl(key)).toBeGreaterThan(0);
      expect(await redis.pttl(key)).toBeLessThanOrEqual(120_000);
    }
  }

  it('plan, validate, doctor, audit and hooks list write nothing to an empty Redis', async () => {
    await expectLeftAsFound();
    expect(await snapshot(redis)).toEqual({});
  }, 180_000);

  it('nor to the records an acting pass left, whose every key and value they leave as found', async () => {
    const once = await runCli(['once', '-c', DEMO], env, 60_000);
    expect(once.code).toBe(0);
    expect(Object.keys(await snapshot(redis)).length).toBeGreaterThan(10);
    await expectLeftAsFound();
  }, 180_000);

  it('clear removes every key the tour left, all under its prefix; not while the daemon runs, and not in a dry run', async () => {
    const daemon = startCli(['run', '-c', DEMO], env);
    await waitUntil(
      'the daemon is ready',
      async () => (await statusOf(`http://127.0.0.1:${httpPort}/readyz`)) === 200,
      60_000,
    );
    const refused = await runCli(['clear', '-c', DEMO], env);
    expect({ code: refused.code, stderr: refused.stderr }).toEqual({
      code: 1,
      stderr: expect.stringMatching(
        new RegExp(
          `^forgewarden clear: a daemon uses the keys under ${PREFIX}: \\S+:\\d+ \\(seen \\d+s ago\\); stop it first`,
        ),
      ),
    });
    expect((await daemon.stop('SIGINT')).code).toBe(0);

    const keys = (await redis.keys('*')).sort();
    expect(keys.length).toBeGreaterThan(10);
    // Nothing outside the tour's prefix.
    expect(keys.filter((key) => !key.startsWith(`${PREFIX}:`))).toEqual([]);
    // A budget window may expire meanwhile: the counts are of the keys there, give or take those.
    const lasting = keys.filter((key) => !BUDGET_WINDOW.test(key));
    const counted = await runCli(['clear', '-c', DEMO, '--dry-run'], env);
    expect(counted.code).toBe(0);
    const wouldRemove = Number(
      new RegExp(`^would remove (\\d+) keys under ${PREFIX} \\(dry run: --no-dry-run removes them\\)\n$`).exec(
        counted.stdout,
      )?.[1],
    );
    expect(wouldRemove >= lasting.length && wouldRemove <= keys.length).toBe(true);
    expect(Object.keys(await snapshot(redis))).toEqual(lasting);

    const cleared = await runCli(['clear', '-c', DEMO], env);
    expect(cleared.code).toBe(0);
    const removed = Number(new RegExp(`^removed (\\d+) keys under ${PREFIX}\n$`).exec(cleared.stdout)?.[1]);
    expect(removed >= lasting.length && removed <= keys.length).toBe(true);
    expect(await redis.dbsize()).toBe(0);
  }, 180_000);
});
