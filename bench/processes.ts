/**
 * The processes the daemon-level benchmarks start and watch from outside: the sandbox forge and the daemon, as the
 * built CLI (`node dist/main.js`), never in the bench's own process, so what they cost is their own.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import Redis from 'ioredis';

export const ROOT = resolve(__dirname, '..', '..');
export const MAIN = join(ROOT, 'dist', 'main.js');

/**
 * The Node flags the daemon is started with where this project starts it (deploy/forgewarden.service, `npm start`):
 * a young generation of 2 MB semi-spaces instead of 16 MB, and an old generation capped at 512 MB, under which V8
 * grows the heap by about 1.4× its live size between full collections instead of up to 4×: together they keep the
 * RSS of a daemon over 5,000 or 20,000 projects flat at 120-140 MB instead of a saw-tooth up to 200 MB, at no CPU cost
 * measured (docs/benchmarks.md). The benches start it the same way.
 */
export const DAEMON_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2', '--max-old-space-size=512'];

export const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/** The body of a 2xx answer, or undefined (refused, not ready, an error status). */
export async function get(url: string): Promise<string | undefined> {
  try {
    const response = await fetch(url);
    return response.ok ? await response.text() : undefined;
  } catch {
    return undefined;
  }
}

/** The exit code once the process ends; killed after `timeoutMs`. */
export function waitForExit(child: ChildProcess, timeoutMs: number): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((done) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      done(code);
    });
  });
}

/** Calls `onLine` for each line the stream writes. */
export function lines(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  let rest = '';
  stream.on('data', (chunk: Buffer) => {
    rest += chunk.toString();
    let at: number;
    while ((at = rest.indexOf('\n')) >= 0) {
      onLine(rest.slice(0, at));
      rest = rest.slice(at + 1);
    }
  });
}

/** The sum of a Prometheus metric's samples whose labels contain every `labels` entry; NaN when there is none. */
export function metric(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  let found = false;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || (line[name.length] !== ' ' && line[name.length] !== '{')) continue;
    if (!Object.entries(labels).every(([key, value]) => line.includes(`${key}="${value}"`))) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
    found = true;
  }
  return found ? sum : NaN;
}

/** The value below which `fraction` of `values` lie (nearest rank); NaN for none. */
export function percentile(values: readonly number[], fraction: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))];
}

export interface Sandbox {
  readonly url: string;
  readonly child: ChildProcess;
  /** From the spawn to its first answer, ms. */
  readonly startMs: number;
}

/** `forgewarden sandbox --world FILE` on a free port, once it says where it listens. */
export async function startSandbox(worldFile: string): Promise<Sandbox> {
  const started = performance.now();
  const child = spawn(process.execPath, [MAIN, 'sandbox', '--world', worldFile, '--port', '0'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const url = await new Promise<string>((resolveUrl, reject) => {
    lines(child.stdout as NodeJS.ReadableStream, (line) => {
      const found = /sandbox forge on (http:\/\/\S+)\/api\/v4/.exec(line);
      if (found) resolveUrl(found[1]);
    });
    child.once('exit', (code) => reject(new Error(`the sandbox exited with ${code}: ${stderr.trim()}`)));
  });
  return { url, child, startMs: performance.now() - started };
}

/** What the sandbox logged of each request it answered: enough to count and time them. */
export interface LoggedRequest {
  readonly time: string;
  readonly method: string;
  readonly path: string;
}

export async function clearRequestLog(sandbox: Sandbox): Promise<void> {
  await fetch(`${sandbox.url}/__sandbox/requests`, { method: 'DELETE' });
}

/** The request log so far, emptied in the same step on the sandbox (POST /__sandbox/requests/drain). */
export async function drainRequestLog(sandbox: Sandbox): Promise<LoggedRequest[]> {
  const response = await fetch(`${sandbox.url}/__sandbox/requests/drain`, { method: 'POST' });
  if (!response.ok) throw new Error(`the sandbox did not give its request log: ${response.status}`);
  return ((await response.json()) as LoggedRequest[]).map(({ time, method, path }) => ({ time, method, path }));
}

export async function requestLog(sandbox: Sandbox, query = ''): Promise<LoggedRequest[]> {
  const text = await get(`${sandbox.url}/__sandbox/requests${query}`);
  if (text === undefined) throw new Error('the sandbox did not give its request log');
  // Only what is counted: the log also holds headers, query and body of every request.
  return (JSON.parse(text) as LoggedRequest[]).map(({ time, method, path }) => ({ time, method, path }));
}

/** VmRSS and VmHWM (peak) of a process, bytes. */
export function memoryOf(pid: number): { rss: number; peak: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
    return { rss: kb('VmRSS'), peak: kb('VmHWM') };
  } catch {
    return { rss: NaN, peak: NaN };
  }
}

/** The Redis the bench's daemons use: the one at REDIS_URL, as theirs. */
export function benchRedisUrl(): string {
  return process.env.REDIS_URL || 'redis://127.0.0.1:6379';
}

/** A Redis key prefix for one section of this run: every key the run writes matches RUN_KEYS, whatever else uses that Redis. */
export function benchPrefix(section: string): string {
  return `fwbench-${section}-${process.pid}-${Date.now().toString(36)}`;
}

const RUN_KEYS = `fwbench-*-${process.pid}-*`;

/** Deletes every key under `prefix` (or matching `pattern`) from the bench's Redis; answers how many went. */
export async function dropKeys(prefix: string, pattern = `${prefix}:*`): Promise<number> {
  const redis = new Redis(benchRedisUrl(), { lazyConnect: true, maxRetriesPerRequest: 1 });
  let removed = 0;
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      if (keys.length) removed += await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } catch {
    // Redis away: the keys expire or stay under a prefix no one uses.
  } finally {
    redis.disconnect();
  }
  return removed;
}

/** Deletes whatever key of this run a section left (interrupted, or a bug): answers how many there were. */
export function dropRunKeys(): Promise<number> {
  return dropKeys('', RUN_KEYS);
}

export interface CommandRun {
  readonly wallMs: number;
  /** The process's VmHWM, sampled while it ran. */
  readonly peakRss: number;
  readonly code: number | null;
  readonly stderr: string;
  /** Date.now() when it exited, to line up with the sandbox's request log. */
  readonly endedAt: number;
}

/**
 * `node [nodeFlags] dist/main.js ARGS` as a user runs it (JSON logs, warnings only), timed and watched from outside;
 * `onSample` is handed each memory sample (every 100 ms) with the ms since the start, to follow the RSS over a long run.
 */
export async function runCommand(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  options: {
    nodeFlags?: readonly string[];
    timeoutMs: number;
    onSample?: (memory: { rss: number; peak: number }, elapsedMs: number) => void;
  },
): Promise<CommandRun> {
  const started = performance.now();
  const child = spawn(process.execPath, [...(options.nodeFlags ?? []), MAIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, LOG_FORMAT: 'json', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let peakRss = 0;
  const sampler = setInterval(() => {
    const memory = memoryOf(child.pid ?? -1);
    peakRss = Math.max(peakRss, memory.peak || 0);
    if (!Number.isNaN(memory.rss)) options.onSample?.(memory, performance.now() - started);
  }, 100);
  const code = await waitForExit(child, options.timeoutMs);
  const endedAt = Date.now();
  clearInterval(sampler);
  return { wallMs: performance.now() - started, peakRss, code, stderr, endedAt };
}

/**
 * `node dist/main.js run -c FILE` as deployed (DAEMON_NODE_FLAGS, logs at warn), resolved once every policy named has
 * made its first successful pass (its metric says so); the daemon's stderr is in the error when it exits or is late.
 */
export async function startDaemonWithPasses(
  configFile: string,
  httpUrl: string,
  env: NodeJS.ProcessEnv,
  policies: readonly string[],
  timeoutMs: number,
): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...DAEMON_NODE_FLAGS, MAIN, 'run', '-c', configFile], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  for (const deadline = Date.now() + timeoutMs; ; await sleep(100)) {
    if (child.exitCode !== null) throw new Error(`the daemon exited with ${child.exitCode}: ${stderr.trim()}`);
    if (Date.now() > deadline)
      throw new Error(`the daemon's first passes were not done in ${timeoutMs / 1000} s: ${stderr.trim()}`);
    const metrics = await get(`${httpUrl}/metrics`);
    if (
      metrics &&
      policies.every(
        (policy) => !Number.isNaN(metric(metrics, 'forgewarden_last_successful_pass_timestamp_seconds', { policy })),
      )
    )
      return child;
  }
}
