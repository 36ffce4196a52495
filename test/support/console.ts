import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { parse, parseDocument, stringify } from 'yaml';
import { childEnv, type CliProcess, startCli, startSandboxCommand, statusOf, waitUntil, writeTempFile } from './cli';
import { dropKeys, freePort } from './redis-server';

/**
 * What the console's end-to-end tests share: the demo world's sandbox, daemons started from a policy file written for
 * the test (`forgewarden run -c FILE`, as an operator starts it), their metrics, and browser pages that fail the test
 * when any dialog opens.
 */

export const ROOT = resolve(__dirname, '../..');
export const DEMO_CONFIG = join(ROOT, 'config/demo.yml');
export const DEMO_WORLD = join(ROOT, 'config/sandbox/demo-world.yml');
export const ADMIN_TOKEN = 'glpat-sandbox-admin-token';

/** A daemon the rig started: where its HTTP port answers, the file it runs and the environment it runs in. */
export interface Daemon {
  readonly url: string;
  readonly file: string;
  readonly env: NodeJS.ProcessEnv;
  readonly prefix: string;
  readonly process: CliProcess;
}

/** Where a daemon's file puts its state and its HTTP port; the rig picks both. */
export interface Slot {
  readonly port: number;
  readonly prefix: string;
}

/**
 * Sandboxes and daemons of one describe block, stopped together, with their Redis keys and temporary directories
 * removed, whatever the tests left running.
 */
export class ConsoleRig {
  private readonly processes: CliProcess[] = [];
  private readonly prefixes: string[] = [];
  private readonly dirs: string[] = [];

  constructor(private readonly name: string) {}

  /** `forgewarden sandbox` with the demo world, or the world file given; its base URL. */
  async sandbox(world?: string): Promise<string> {
    const { process, url } = await startSandboxCommand(world === undefined ? [] : ['--world', world]);
    this.processes.push(process);
    return url;
  }

  /** A directory removed when the rig closes; `label` names it (`forgewarden-<label>-XXXXXX`). */
  tempDir(label: string = this.name): string {
    const dir = mkdtempSync(join(tmpdir(), `forgewarden-${label}-`));
    this.dirs.push(dir);
    return dir;
  }

  /** `forgewarden run -c FILE` with the file `write` makes for a free port and a key prefix of its own, once ready. */
  async daemon(write: (slot: Slot) => string, extraEnv: NodeJS.ProcessEnv = {}): Promise<Daemon> {
    const port = await freePort();
    const prefix = `e2e-console-${this.name}-${this.prefixes.length}-${process.pid}`;
    this.prefixes.push(prefix);
    const file = writeTempFile('policies.yml', write({ port, prefix }));
    this.dirs.push(join(file, '..'));
    const env = childEnv({ REDIS_URL: process.env.REDIS_URL, ...extraEnv });
    const child = startCli(['run', '-c', file], env);
    this.processes.push(child);
    const url = `http://127.0.0.1:${port}`;
    await waitUntil(
      'the daemon is ready',
      async () => {
        if (!child.running) throw new Error(`the daemon exited: ${child.stderr.slice(-2_000)}`);
        return (await statusOf(`${url}/readyz`)) === 200;
      },
      40_000,
    );
    return { url, file, env, prefix, process: child };
  }

  async close(): Promise<void> {
    // Daemons first (they were started after their sandbox), so none acts on a forge that is gone.
    for (const child of [...this.processes].reverse()) await child.stop();
    for (const prefix of this.prefixes) await dropKeys(prefix);
    for (const dir of this.dirs) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * config/demo.yml as `npm run demo` runs it, against `forge`, on the slot's port and prefix, its keys written to
 * `secretsDir`; `retryInterval` shortens retry-transient-failures' poll (1m in the file) for tests that wait for passes.
 */
export function demoPolicyFile(
  forge: string,
  slot: Slot,
  options: { secretsDir: string; retryInterval?: string },
): string {
  const doc = parseDocument(readFileSync(DEMO_CONFIG, 'utf8'));
  doc.setIn(['gitlab', 'url'], forge);
  doc.setIn(['gitlab', 'token'], ADMIN_TOKEN);
  doc.setIn(['redis', 'url'], process.env.REDIS_URL);
  doc.setIn(['redis', 'prefix'], slot.prefix);
  doc.setIn(['http', 'port'], slot.port);
  const policies = demoPolicyNames();
  doc.setIn(['policies', policies.indexOf('ci-key-rotation'), 'secrets_dir'], options.secretsDir);
  if (options.retryInterval !== undefined)
    doc.setIn(['policies', policies.indexOf('retry-transient-failures'), 'interval'], options.retryInterval);
  return doc.toString();
}

/** The policies of config/demo.yml, in the file's order: their names, and their interval unless a cron triggers them. */
export function demoPolicies(): Array<{ readonly name: string; readonly interval?: string }> {
  const config = parse(readFileSync(DEMO_CONFIG, 'utf8')) as { policies: Array<{ name: string; interval?: string }> };
  return config.policies.map((policy) => ({
    name: policy.name,
    ...(policy.interval !== undefined ? { interval: policy.interval } : {}),
  }));
}

function demoPolicyNames(): string[] {
  return demoPolicies().map((policy) => policy.name);
}

/** The demo world with one more failed job on acme/api (pipeline 102, job 1020) named `jobName`, written into `dir`. */
export function demoWorldWithJob(dir: string, jobName: string, log: string): string {
  const world = parse(readFileSync(DEMO_WORLD, 'utf8')) as { projects: Array<{ path: string; pipelines: unknown[] }> };
  const api = world.projects.find((project) => project.path === 'api');
  if (!api) throw new Error('the demo world has no project api');
  api.pipelines.push({
    id: 102,
    ref: 'main',
    user: 'alice',
    created_at: 'now-20m',
    jobs: [{ id: 1020, name: jobName, stage: 'test', status: 'failed', log }],
  });
  const file = join(dir, 'world.yml');
  writeFileSync(file, stringify(world));
  return file;
}

/** Paths of the retries the forge received, oldest first. */
export async function retriesReceived(forge: string): Promise<string[]> {
  const log = (await (await fetch(`${forge}/__sandbox/requests?method=POST`)).json()) as Array<{ path: string }>;
  return log.map((entry) => entry.path).filter((path) => path.endsWith('/retry'));
}

/** A job moved on the forge as a runner moves it (`POST /__sandbox/jobs/:id`). */
export async function moveJob(forge: string, id: number, body: { status: string; log?: string }): Promise<void> {
  const answer = await fetch(`${forge}/__sandbox/jobs/${id}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!answer.ok) throw new Error(`the sandbox did not move job ${id}: ${answer.status} ${await answer.text()}`);
}

export async function metricsOf(daemon: Daemon): Promise<string> {
  return (await fetch(`${daemon.url}/metrics`)).text();
}

/** The value of one series (`name{label="value",...}` exactly as the daemon writes it), 0 when it is not there. */
export function seriesValue(metrics: string, series: string): number {
  const line = metrics.split('\n').find((text) => text.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

/** Passes of `policy` counted so far, whatever their result. */
export function passesOf(metrics: string, policy: string): number {
  return ['ok', 'partial', 'failed'].reduce(
    (sum, result) => sum + seriesValue(metrics, `forgewarden_passes_total{policy="${policy}",result="${result}"}`),
    0,
  );
}

/** Entries of `/audit.ndjson` with `query`, newest first, through the bearer token when one is given. */
export async function auditEntries(
  daemon: Daemon,
  query: string,
  token?: string,
): Promise<Array<Record<string, unknown>>> {
  const answer = await fetch(
    `${daemon.url}/audit.ndjson?${query}`,
    token ? { headers: { authorization: `Bearer ${token}` } } : {},
  );
  if (answer.status !== 200) throw new Error(`/audit.ndjson?${query} answered ${answer.status}`);
  return (await answer.text())
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/**
 * Runs `fn` on a page of a fresh browser context (viewport 1400x900 unless told), and fails when any dialog opened
 * meanwhile: the console has no script, so an `alert` can only be markup that escaped its escaping.
 */
export async function onPage<T>(
  browser: Browser,
  fn: (page: Page) => Promise<T>,
  viewport = { width: 1400, height: 900 },
): Promise<T> {
  const context = await browser.newContext({ viewport });
  const dialogs: string[] = [];
  try {
    const page = await context.newPage();
    // Fail with Playwright's own message (which names the step) before jest's timeout does.
    page.setDefaultTimeout(20_000);
    page.on('dialog', (dialog) => {
      dialogs.push(`${dialog.type()}: ${dialog.message()}`);
      void dialog.dismiss();
    });
    const result = await fn(page);
    if (dialogs.length > 0) throw new Error(`a dialog opened: ${dialogs.join('; ')}`);
    return result;
  } finally {
    await context.close();
  }
}

/** Where the screenshots go: $FORGEWARDEN_SCREENSHOTS (relative to the repository's root), else a temporary directory. */
export function screenshotDir(rig: ConsoleRig): string {
  const wanted = process.env.FORGEWARDEN_SCREENSHOTS;
  if (wanted === undefined || wanted === '') return rig.tempDir();
  const dir = isAbsolute(wanted) ? wanted : join(ROOT, wanted);
  mkdirSync(dir, { recursive: true });
  return dir;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export function isPng(file: string): boolean {
  return readFileSync(file).subarray(0, PNG_SIGNATURE.length).equals(PNG_SIGNATURE);
}
