import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Redis from 'ioredis';
import { childEnv, runCli, startCli, statusOf, waitUntil, type CliProcess } from '../support/cli';
import { freePort, startRedisServer, type ThrowawayRedis } from '../support/redis-server';
import { tempDir } from '../support/temp';

const ROOT = resolve(__dirname, '../..');

/** The commands of the README's walk against the sandbox, as written: every `sh` block of "A short tour" up to "Against your forge". */
function walkCommands(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('## A short tour');
  const end = readme.indexOf('**Against your forge.**', start);
  if (start < 0 || end < 0) throw new Error('README.md has no "A short tour" with "Against your forge." after it');
  const blocks = [...readme.slice(start, end).matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]);
  return blocks
    .join('\n')
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line !== '');
}

/** Splits a command line as sh does for the quoting the README uses: words, '…' and "…". */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((match) => match[1] ?? match[2] ?? match[3]);
}

interface Ports {
  readonly forge: number;
  readonly daemon: number;
}

/** The README's ports (the sandbox's and the daemon's defaults) moved to free ones, so the test runs beside others. */
function onPorts(text: string, ports: Ports): string {
  return text
    .replaceAll('127.0.0.1:9480', `127.0.0.1:${ports.forge}`)
    .replaceAll('127.0.0.1:9464', `127.0.0.1:${ports.daemon}`);
}

interface Walk {
  /** Exit codes of the commands that end, in the README's order. */
  readonly exits: Array<[string, number | null]>;
  /** Jobs the sandbox was asked to retry, as `project/job`, in order. */
  readonly retried: string[];
  /** What the last `curl` (the sandbox's request log of retries) answered. */
  readonly lastAnswer: string;
  readonly readyz: number;
  /** What `plan` printed: its decisions (stdout) and what it said beside them (stderr). */
  readonly plan: { stdout: string; stderr: string };
}

/**
 * One walk, command after command as the README has them: `npx forgewarden …` runs the built command, `curl` is
 * fetch with the same method, headers and body; the sandbox and `run` run in the background like the terminals the
 * README opens, and stop as Ctrl-C stops them.
 */
async function walk(commands: readonly string[], env: NodeJS.ProcessEnv, ports: Ports): Promise<Walk> {
  const background: CliProcess[] = [];
  const exits: Array<[string, number | null]> = [];
  let lastAnswer = '';
  let readyz = 0;
  let forgeUrl = '';
  let plan = { stdout: '', stderr: '' };
  try {
    for (const line of commands) {
      const argv = words(onPorts(line, ports));
      if (argv[0] === 'npx' && argv[1] === 'forgewarden') {
        const args = argv.slice(2);
        if (args[0] === 'sandbox') {
          const sandbox = startCli([...args, '--port', String(ports.forge)], env);
          background.push(sandbox);
          forgeUrl = `http://127.0.0.1:${ports.forge}`;
          await waitUntil('the sandbox answers', async () => (await statusOf(`${forgeUrl}/api/v4/user`)) === 401);
        } else if (args[0] === 'run') {
          const daemon = startCli(args, env);
          background.push(daemon);
          await waitUntil(
            'the daemon is ready',
            async () => (await statusOf(`http://127.0.0.1:${ports.daemon}/readyz`)) === 200,
            30_000,
          );
          // Its first passes: every interval policy passes at the start.
          await waitUntil(
            'the first retries went out',
            () => retriedJobs(forgeUrl).then((jobs) => jobs.length >= 2),
            30_000,
          );
        } else {
          const result = await runCli(args, env, 60_000);
          exits.push([args.slice(0, 2).join(' '), result.code]);
          if (args[0] === 'plan') plan = { stdout: result.stdout, stderr: result.stderr };
        }
      } else if (argv[0] === 'curl') {
        const request = curlRequest(argv.slice(1));
        const response = await fetch(request.url, {
          method: request.method,
          headers: request.headers,
          ...(request.body !== undefined ? { body: request.body } : {}),
        });
        lastAnswer = await response.text();
        if (request.url.endsWith('/readyz')) readyz = response.status;
        if (request.url.includes('/__sandbox/jobs/')) {
          // The README says the failed job is retried within a second: the answer after that is what it shows.
          await waitUntil(
            'the failed job is retried',
            async () => (await retriedJobs(forgeUrl)).some((job) => job.endsWith('/1003')),
            10_000,
          );
        }
      } else {
        throw new Error(`the README's walk has a command this test does not know: ${line}`);
      }
    }
    return { exits, retried: await retriedJobs(forgeUrl), lastAnswer, readyz, plan };
  } finally {
    // Ctrl-C in each terminal, the daemon first.
    for (const process of background.reverse()) {
      const stopped = await process.stop('SIGINT');
      exits.push([process === background[0] ? 'stopped daemon' : 'stopped sandbox', stopped.code]);
    }
  }
}

async function retriedJobs(forgeUrl: string): Promise<string[]> {
  const response = await fetch(`${forgeUrl}/__sandbox/requests?method=POST&path=retry$`);
  const entries = (await response.json()) as Array<{ path: string; status: number }>;
  return entries
    .filter((entry) => entry.status === 201 || entry.status === 200)
    .map((entry) => entry.path.replace(/^\/api\/v4\/projects\/(\d+)\/jobs\/(\d+)\/retry$/, '$1/$2'));
}

function curlRequest(args: readonly string[]): {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
} {
  let method = 'GET';
  const headers: Record<string, string> = {};
  let body: string | undefined;
  let url = '';
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '-s') continue;
    if (arg === '-X') method = args[++i];
    else if (arg === '-H') {
      const [name, ...value] = args[++i].split(':');
      headers[name.trim()] = value.join(':').trim();
    } else if (arg === '-d') body = args[++i];
    else if (arg === '|') break;
    else url = arg.startsWith('http') ? arg : `http://${arg}`;
  }
  return { url, method, headers, ...(body !== undefined ? { body } : {}) };
}

describe("the README's walk against the sandbox", () => {
  let throwaway: ThrowawayRedis;
  beforeAll(async () => {
    throwaway = await startRedisServer();
  });
  afterAll(async () => {
    await throwaway.stop();
  });

  it("can be done twice in a row exactly as written: the second walk decides, retries, installs and answers as the first, and every key is under the tour's prefix", async () => {
    const commands = walkCommands();
    expect(
      commands.filter((line) => line.startsWith('npx forgewarden ')).map((line) => words(line).slice(0, 3).join(' ')),
    ).toEqual([
      'npx forgewarden sandbox',
      'npx forgewarden plan',
      'npx forgewarden doctor',
      'npx forgewarden run',
      'npx forgewarden hooks',
    ]);
    const ports = { forge: await freePort(), daemon: await freePort() };
    // One user's machine: the same Redis, prefix and key folder for both walks, as config/demo.yml has them; a Redis of
    // its own, so that every key in it is the tour's.
    const keys = tempDir('walk-keys');
    const env = childEnv({
      GITLAB_URL: `http://127.0.0.1:${ports.forge}`,
      REDIS_URL: throwaway.url,
      FORGEWARDEN_HTTP_PORT: String(ports.daemon),
      FORGEWARDEN_DEMO_SECRETS: keys,
    });

    const first = await walk(commands, env, ports);
    const firstKeyFile = readFileSync(join(keys, 'ci-key-rotation', 'root-1'), 'utf8');
    const second = await walk(commands, env, ports);

    // The same decisions, as the sandbox serves the same world: nothing held back after the reset that the forge allows.
    // (The sandbox seeds its world's times relative to its start: those differ.)
    const decisions = (plan: string) => plan.replace(/\d{4}-\d\d-\d\d(T\d\d:\d\d:\d\d(\.\d+)?Z)?/g, '<time>');
    expect(decisions(second.plan.stdout)).toBe(decisions(first.plan.stdout));
    expect(first.plan.stdout).toMatch(/^bulk_delete +acme\/api \(repository 1\) +delete 9 of 20 tags$/m);
    // Said for what it is: the forge at that URL was reset, not another forge.
    expect(second.plan.stderr).toContain(`the forge at http://127.0.0.1:${ports.forge} was reset`);
    expect(first.plan.stderr + second.plan.stderr).not.toContain('another forge');
    // The first walk's key, written for the world before the reset, kept aside and not adopted: a new key in its place.
    expect(readFileSync(join(keys, 'ci-key-rotation', 'root-1'), 'utf8')).not.toBe(firstKeyFile);
    const aside = readdirSync(join(keys, 'ci-key-rotation')).filter((name) =>
      /^root-1\.closed-\d{8}T\d{6}Z$/.test(name),
    );
    expect(aside.map((name) => readFileSync(join(keys, 'ci-key-rotation', name), 'utf8'))).toEqual([firstKeyFile]);
    // Every key the tour left is under config/demo.yml's prefix.
    const redis = new Redis(throwaway.url);
    const left = await redis.keys('*');
    await redis.quit();
    expect(left.length).toBeGreaterThan(0);
    expect(left.filter((key) => !key.startsWith('forgewarden-demo:'))).toEqual([]);

    for (const done of [first, second]) {
      expect(done.exits).toEqual([
        ['plan -c', 0],
        ['doctor -c', 0],
        ['hooks install', 0],
        ['stopped daemon', 0],
        ['stopped sandbox', 0],
      ]);
      expect(done.readyz).toBe(200);
      // The demo world's two transient failures by the first pass, then job 1003 from the webhook delivery.
      expect([...done.retried].sort()).toEqual(['1/1002', '2/2002', '1/1003'].sort());
      expect(done.lastAnswer).toContain('/jobs/1003/retry');
    }
  }, 240_000);
});
