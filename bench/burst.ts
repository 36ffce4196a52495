/**
 * A burst of failures (`npm run bench -- --only burst`, also part of the whole bench): 1,000 distinct jobs (50 projects of
 * 20) fail on the sandbox forge at random moments within one minute, and a real daemon (`node dist/main.js run`) told by
 * the forge's webhook deliveries retries them. What it shows is the write spacing: writes go at the pace of the request
 * budget (see writeSpacingMs in src/gitlab/transport/rate-limit.ts), so every retry is sent within 30 s of the last
 * failure while the budget holds. Storm control is off here: one signature failing in 50 projects at once is exactly
 * what it would hold (docs/policies.md, "Retry storms"); this row is the burst without a storm.
 * About two minutes: the minute of failures, then up to 60 s for the last retries.
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

const TOKEN = 'glpat-sandbox-burst-admin';
const SECRET = 'bench-burst-secret-0123456789abc';
const PROJECTS = 50;
const JOBS_PER_PROJECT = 20;
const FAILURES = PROJECTS * JOBS_PER_PROJECT;
const FAILURE_WINDOW_MS = 60_000;
/** The target: every retry within this long of the last failure. */
const TARGET_MS = 30_000;
const CATCH_UP_MS = 60_000;
/**
 * The budget: each failure costs four requests (its pipeline's jobs, which hold it and its attempts, its log's end,
 * the pipeline read again before the retry, the retry), 4,000 for the burst, so a minute's budget of 10,000 holds it with room.
 */
export const BURST_BUDGET = 10_000;
const REQUESTS_PER_FAILURE = 4;

export interface BurstRow {
  figure: string;
  forgewarden: string;
  peers: string;
  ratio: string;
  floor: string;
}

const jobId = (project: number, job: number) => project * 100 + job;

function worldText(hookUrl: string): string {
  const projects = Array.from({ length: PROJECTS }, (_, index) => {
    const project = index + 1;
    return {
      id: project,
      path: `svc-${String(project).padStart(2, '0')}`,
      namespace: 'burst',
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
      hooks: [{ url: hookUrl, token: SECRET, push_events: false, job_events: true }],
    };
  });
  return JSON.stringify({
    users: [{ username: 'root', admin: true, tokens: [TOKEN] }],
    groups: [{ path: 'burst', members: [{ user: 'root', access_level: 'owner' }] }],
    projects,
  });
}

function policyText(forgeUrl: string, prefix: string, httpPort: number): string {
  return [
    'version: 1',
    `gitlab: { url: "${forgeUrl}", token: "\${GITLAB_TOKEN}", max_requests_per_minute: ${BURST_BUDGET} }`,
    `redis: { prefix: ${prefix} }`,
    'dry_run: false',
    `http: { host: 127.0.0.1, port: ${httpPort} }`,
    `webhooks: { enabled: true, secret_token: "${SECRET}" }`,
    'shutdown_timeout: 5s',
    'policies:',
    '  - name: burst',
    '    type: job_retry',
    '    projects: ["burst/*"]',
    '    interval: 15m',
    '    max_actions_per_run: 2000',
    '    match: { failure_log: ["(?i)connection reset"] }',
    '    storm: { enabled: false }',
    '',
  ].join('\n');
}

/** Fails every job once, at random moments within the window; the moments, by job id. */
async function failJobs(sandbox: Sandbox): Promise<Map<number, number>> {
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
    await fetch(`${sandbox.url}/__sandbox/jobs/${job}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'failed', log: 'npm ERR! read ECONNRESET: connection reset by peer\n' }),
    }).then((response) => response.arrayBuffer());
  }
  return failedAt;
}

/** The first retry the sandbox logged for each job, epoch ms. */
async function retries(sandbox: Sandbox): Promise<Map<number, number>> {
  const first = new Map<number, number>();
  for (const entry of await requestLog(sandbox, '?method=POST&path=/retry$')) {
    const job = Number(/\/jobs\/(\d+)\/retry$/.exec(entry.path)?.[1]);
    if (!first.has(job)) first.set(job, Date.parse(entry.time));
  }
  return first;
}

const seconds = (ms: number) =>
  ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`;

export async function burstBench(log: (line?: string) => void): Promise<{ rows: BurstRow[]; notes: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'forgewarden-burst-'));
  const port = await freePort();
  writeFileSync(join(dir, 'world.json'), worldText(`http://127.0.0.1:${port}/webhooks/gitlab`));
  const forge = await startSandbox(join(dir, 'world.json'));
  const prefix = benchPrefix('burst');
  writeFileSync(join(dir, 'policies.yml'), policyText(forge.url, prefix, port));
  let daemon: ChildProcess | undefined;
  try {
    daemon = await startDaemonWithPasses(
      join(dir, 'policies.yml'),
      `http://127.0.0.1:${port}`,
      { GITLAB_TOKEN: TOKEN },
      ['burst'],
      30_000,
    );
    log(
      `\n### a burst: ${FAILURES} distinct failures within ${FAILURE_WINDOW_MS / 1000} s over ${PROJECTS} projects, webhooks, budget ${BURST_BUDGET.toLocaleString('en')}/min`,
    );
    const failedAt = await failJobs(forge);
    const lastFailure = Math.max(...failedAt.values());
    for (const deadline = Date.now() + CATCH_UP_MS; Date.now() < deadline; await sleep(1000)) {
      if ((await retries(forge)).size >= FAILURES) break;
    }
    const retried = await retries(forge);
    const all = await requestLog(forge);
    const latencies = [...retried].flatMap(([job, at]) =>
      failedAt.has(job) ? [Math.max(0, at - (failedAt.get(job) ?? at))] : [],
    );
    const lastRetry = Math.max(...retried.values());
    const afterLast = lastRetry - lastFailure;
    const byMinute = new Map<number, number>();
    for (const entry of all) {
      const minute = Math.floor(Date.parse(entry.time) / 60_000);
      byMinute.set(minute, (byMinute.get(minute) ?? 0) + 1);
    }
    const busiest = Math.max(...byMinute.values());
    const p50 = percentile(latencies, 0.5);
    const p99 = percentile(latencies, 0.99);
    log(
      `- ${retried.size}/${FAILURES} retried; failure → retry p50 ${seconds(p50)}, p99 ${seconds(p99)}, max ${seconds(percentile(latencies, 1))}`,
    );
    log(
      `- the last retry ${seconds(afterLast)} after the last failure (target ≤ ${TARGET_MS / 1000} s); ${all.length.toLocaleString('en')} requests in all, busiest budget minute ${busiest.toLocaleString('en')} of ${BURST_BUDGET.toLocaleString('en')}`,
    );
    const defaultMinutes = Math.ceil((FAILURES * REQUESTS_PER_FAILURE) / 600);
    return {
      rows: [
        {
          figure: `burst: ${FAILURES} distinct failures within a minute, webhooks, budget ${BURST_BUDGET.toLocaleString('en')}/min, no storm`,
          forgewarden: `${retried.size}/${FAILURES} retried; failure → retry p50 ${seconds(p50)}, p99 ${seconds(p99)}; last retry ${seconds(afterLast)} after the last failure`,
          peers: '',
          ratio: `busiest minute ${busiest.toLocaleString('en')} requests (${((100 * busiest) / BURST_BUDGET).toFixed(0)}% of the budget)`,
          floor: `≤ ${TARGET_MS / 1000} s after the last failure; ${REQUESTS_PER_FAILURE} requests a failure (${defaultMinutes} min of the default 600/min budget)`,
        },
      ],
      notes: [
        `The burst: ${FAILURES} failures at random moments within ${FAILURE_WINDOW_MS / 1000} s, one daemon told by webhooks, storm control off, writes spaced at the budget's pace (${(60_000 / BURST_BUDGET).toFixed(0)} ms at ${BURST_BUDGET.toLocaleString('en')}/min).`,
      ],
    };
  } finally {
    if (daemon) {
      daemon.kill('SIGTERM');
      await waitForExit(daemon, 10_000);
    }
    forge.child.kill('SIGTERM');
    await waitForExit(forge.child, 5_000);
    await dropKeys(prefix);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Alone: `node dist-bench/bench/burst.js`. */
if (require.main === module) {
  burstBench((line = '') => process.stdout.write(`${line}\n`)).then(
    ({ rows }) => {
      for (const row of rows)
        process.stdout.write(`| ${[row.figure, row.forgewarden, row.peers, row.ratio, row.floor].join(' | ')} |\n`);
      process.exit(0);
    },
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
      process.exit(1);
    },
  );
}
