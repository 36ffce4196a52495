/**
 * From a job's failure to its retry (`npm run bench -- --only webhooks`, also part of the whole bench): 200 jobs fail
 * on the sandbox forge at random moments over two minutes, and two real daemons (`node dist/main.js run`) retry them,
 * one told by the forge's webhook deliveries (its polling kept as a 15-minute safety net), the other polling every
 * minute. Each daemon has a sandbox of its own, with the same world and the same failures at the same moments; the
 * latency is the time from the control call that fails a job to the retry the sandbox logs for it.
 * About three and a half minutes: the two minutes of failures, then up to 80 s for the poll to catch the last ones.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  benchPrefix,
  dropKeys,
  freePort,
  percentile,
  requestLog,
  type Sandbox,
  sleep,
  startDaemonWithPasses,
  startSandbox,
  waitForExit,
} from './processes';

const TOKEN = 'glpat-sandbox-latency-admin';
const SECRET = 'bench-webhook-secret-0123456789';
const PROJECTS = 20;
const JOBS_PER_PROJECT = 10;
const FAILURES = PROJECTS * JOBS_PER_PROJECT;
const FAILURE_WINDOW_MS = 120_000;
/** After the last failure, how long the polling daemon has to find it: its interval plus its pass. */
const CATCH_UP_MS = 80_000;

export interface LatencyRow {
  figure: string;
  forgewarden: string;
  peers: string;
  ratio: string;
  floor: string;
}

export interface LatencyResult {
  rows: LatencyRow[];
  notes: string[];
}

const jobId = (project: number, job: number) => project * 100 + job;

/** 20 projects in `lat`, each with one passed pipeline of 10 test jobs; with webhooks, each project has the daemon's hook. */
function worldText(hookUrl: string | undefined): string {
  const projects = Array.from({ length: PROJECTS }, (_, index) => {
    const project = index + 1;
    return {
      id: project,
      path: `svc-${String(project).padStart(2, '0')}`,
      namespace: 'lat',
      pipelines: [
        {
          id: project * 1000,
          ref: 'main',
          jobs: Array.from({ length: JOBS_PER_PROJECT }, (_, job) => ({
            id: jobId(project, job + 1),
            name: `test-${job + 1}`,
            stage: 'test',
            status: 'success',
            log: 'ok\n',
          })),
        },
      ],
      ...(hookUrl ? { hooks: [{ url: hookUrl, token: SECRET, push_events: false, job_events: true }] } : {}),
    };
  });
  return JSON.stringify({
    users: [{ username: 'root', admin: true, tokens: [TOKEN] }],
    groups: [{ path: 'lat', members: [{ user: 'root', access_level: 'owner' }] }],
    projects,
  });
}

function policyText(forgeUrl: string, prefix: string, httpPort: number, webhooks: boolean): string {
  return [
    'version: 1',
    `gitlab: { url: "${forgeUrl}", token: "\${GITLAB_TOKEN}", max_requests_per_minute: 6000 }`,
    `redis: { prefix: ${prefix} }`,
    'dry_run: false',
    `http: { host: 127.0.0.1, port: ${httpPort} }`,
    ...(webhooks ? [`webhooks: { enabled: true, secret_token: "${SECRET}" }`] : []),
    'shutdown_timeout: 5s',
    'policies:',
    '  - name: latency',
    '    type: job_retry',
    '    projects: ["lat/*"]',
    // With webhooks the poll is the safety net only (the README's trade-off); without, the usual minute.
    `    interval: ${webhooks ? '15m' : '1m'}`,
    '    lookback: 1h',
    '    max_actions_per_run: 500',
    '    match: { failure_log: ["(?i)connection reset"] }',
    // 200 failures of one signature over 20 projects in two minutes is what storm control holds (docs/policies.md,
    // "Retry storms"), and a poll sees them first: off, so the two daemons compare delivery, not storm detection.
    '    storm: { enabled: false }',
    '',
  ].join('\n');
}

interface Daemon {
  readonly child: ChildProcess;
  readonly httpUrl: string;
  readonly prefix: string;
}

async function startDaemon(configFile: string, httpPort: number, prefix: string): Promise<Daemon> {
  const httpUrl = `http://127.0.0.1:${httpPort}`;
  // Ready, with its first pass (which finds nothing: no job has failed yet) behind it.
  const child = await startDaemonWithPasses(configFile, httpUrl, { GITLAB_TOKEN: TOKEN }, ['latency'], 30_000);
  return { child, httpUrl, prefix };
}

/** Fails every job once, at random moments over the window, on both sandboxes at once; the moments, by job id. */
async function failJobs(sandboxes: readonly Sandbox[]): Promise<Map<number, number>> {
  const started = Date.now();
  const plan = Array.from({ length: FAILURES }, (_, index) => ({
    job: jobId(Math.floor(index / JOBS_PER_PROJECT) + 1, (index % JOBS_PER_PROJECT) + 1),
    at: Math.random() * FAILURE_WINDOW_MS,
  })).sort((a, b) => a.at - b.at);
  const failedAt = new Map<number, number>();
  for (const { job, at } of plan) {
    const wait = started + at - Date.now();
    if (wait > 0) await sleep(wait);
    failedAt.set(job, Date.now());
    await Promise.all(
      sandboxes.map((sandbox) =>
        fetch(`${sandbox.url}/__sandbox/jobs/${job}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ status: 'failed', log: 'npm ERR! read ECONNRESET: connection reset by peer\n' }),
        }).then((response) => response.arrayBuffer()),
      ),
    );
  }
  return failedAt;
}

/** Failure → retry, ms, for each job the sandbox saw retried. */
async function latencies(sandbox: Sandbox, failedAt: ReadonlyMap<number, number>): Promise<number[]> {
  const retries = await requestLog(sandbox, '?method=POST&path=/retry$');
  const first = new Map<number, number>();
  for (const entry of retries) {
    const job = Number(/\/jobs\/(\d+)\/retry$/.exec(entry.path)?.[1]);
    if (!first.has(job)) first.set(job, Date.parse(entry.time));
  }
  return [...first].flatMap(([job, at]) => {
    const failed = failedAt.get(job);
    return failed === undefined ? [] : [Math.max(0, at - failed)];
  });
}

const seconds = (ms: number) =>
  ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`;

export async function webhookLatencyBench(log: (line?: string) => void): Promise<LatencyResult> {
  const dir = mkdtempSync(join(tmpdir(), 'forgewarden-latency-'));
  const [hookPort, pollPort] = [await freePort(), await freePort()];
  const hookUrl = `http://127.0.0.1:${hookPort}/webhooks/gitlab`;
  writeFileSync(join(dir, 'hooked.json'), worldText(hookUrl));
  writeFileSync(join(dir, 'plain.json'), worldText(undefined));
  const hookedForge = await startSandbox(join(dir, 'hooked.json'));
  const plainForge = await startSandbox(join(dir, 'plain.json'));
  const [hookPrefix, pollPrefix] = [benchPrefix('latency-hook'), benchPrefix('latency-poll')];
  writeFileSync(join(dir, 'webhooks.yml'), policyText(hookedForge.url, hookPrefix, hookPort, true));
  writeFileSync(join(dir, 'polling.yml'), policyText(plainForge.url, pollPrefix, pollPort, false));
  const daemons: Daemon[] = [];
  try {
    daemons.push(await startDaemon(join(dir, 'webhooks.yml'), hookPort, hookPrefix));
    daemons.push(await startDaemon(join(dir, 'polling.yml'), pollPort, pollPrefix));
    log(`${FAILURES} failures over ${FAILURE_WINDOW_MS / 1000} s, on both forges at once...`);
    const failedAt = await failJobs([hookedForge, plainForge]);
    for (const deadline = Date.now() + CATCH_UP_MS; Date.now() < deadline; await sleep(1000)) {
      const [hooked, polled] = await Promise.all([latencies(hookedForge, failedAt), latencies(plainForge, failedAt)]);
      if (hooked.length === FAILURES && polled.length === FAILURES) break;
    }
    const [hooked, polled] = await Promise.all([latencies(hookedForge, failedAt), latencies(plainForge, failedAt)]);
    const figures = (values: number[]) => ({
      p50: percentile(values, 0.5),
      p99: percentile(values, 0.99),
      max: percentile(values, 1),
      count: values.length,
    });
    const withHooks = figures(hooked);
    const withPolls = figures(polled);
    log(
      `webhooks: ${withHooks.count}/${FAILURES} retried; p50 ${seconds(withHooks.p50)}, p99 ${seconds(withHooks.p99)}, max ${seconds(withHooks.max)}`,
    );
    log(
      `polling every minute: ${withPolls.count}/${FAILURES} retried; p50 ${seconds(withPolls.p50)}, p99 ${seconds(withPolls.p99)}, max ${seconds(withPolls.max)}`,
    );
    const row = (figure: string, hook: number, poll: number): LatencyRow => ({
      figure,
      forgewarden: seconds(hook),
      peers: `${seconds(poll)} (1-minute polling)`,
      ratio: `${(poll / Math.max(hook, 1)).toFixed(0)}× sooner`,
      floor: figure.includes('p50') ? 'polling: half the interval' : 'polling: the interval',
    });
    return {
      rows: [
        row(`failure → retry p50, webhooks (${FAILURES} failures over 2 min)`, withHooks.p50, withPolls.p50),
        row('failure → retry p99, webhooks', withHooks.p99, withPolls.p99),
      ],
      notes: [
        `Failure → retry: ${withHooks.count} of ${FAILURES} retried from webhooks, ${withPolls.count} of ${FAILURES} by 1-minute polling within ${CATCH_UP_MS / 1000} s of the last failure. ` +
          'Retries are writes, spaced 250 ms apart per replica, so a poll that finds many failures at once retries them over several seconds.',
      ],
    };
  } finally {
    for (const daemon of daemons) {
      daemon.child.kill('SIGTERM');
      await waitForExit(daemon.child, 10_000);
    }
    for (const forge of [hookedForge, plainForge]) {
      forge.child.kill('SIGTERM');
      await waitForExit(forge.child, 5_000);
    }
    for (const daemon of daemons) await dropKeys(daemon.prefix);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Alone: `node dist-bench/bench/webhook-latency.js`. */
if (require.main === module) {
  webhookLatencyBench((line = '') => process.stdout.write(`${line}\n`)).then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
      process.exit(1);
    },
  );
}
