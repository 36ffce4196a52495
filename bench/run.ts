/**
 * `npm run bench`: what the client and the policies cost on this machine, next to their peers, in about four and a
 * half minutes (two for the client and the policies, two and a half for the daemon at scale). Nothing here is a
 * pass/fail test. `--out FILE` also writes the summary table (Markdown) to FILE; `--only NAME,...` runs some sections
 * only (names in SECTIONS below; `--only scale` is the daemon at scale alone).
 *
 * Forge answers come from bench/fixture-server.ts in a process of its own: pages rendered once, served in well
 * under a millisecond, optionally 20 ms late. So the listing figures measure the clients, and the 20 ms ones show how
 * close each gets to the floor `requests × RTT / concurrency`.
 *
 * The job_retry poll and the registry preview run in child processes (`--worker`), for RSS figures of their own and
 * so that a run that cannot finish in time can be stopped. The poll (five thousand requests, `concurrency` at a time)
 * waits on the forge almost all the time, so it runs alongside the other figures against a fixture server of its
 * own; `--serial` runs it alone at the end instead.
 * python-gitlab is used when `python3` or /usr/bin/python3 (or $PYTHON) can import it; otherwise it is skipped.
 *
 * The daemon at scale (bench/scale.ts) runs last, alone: the real daemon over a 5,000-project sandbox world for ten
 * polls, measured from outside (RSS, requests per poll, requests per window against the budget). The console
 * (bench/console.ts, `--only console`) times the daemon's console pages over 50 policies and a million audit entries.
 * A backup set of 50 projects at the forge's default export limits (bench/backup-set.ts, `--only backup-set`) takes
 * about 8 minutes (the plan says 10) and runs with the rest: most of it waiting on the limit of 6 exports a minute.
 */
import { type ChildProcess, fork, spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Logger } from '@nestjs/common';
import { Gitlab } from '@gitbeaker/rest';
import { Pool } from 'undici';
import { parseConfig } from '../src/config/load';
import type { PolicyConfig } from '../src/config/policy-type';
import { handContext } from '../src/engine/hand-context';
import type { PolicyContext, PolicyState } from '../src/engine/policy';
import { GitlabClient } from '../src/gitlab';
import { POLICY_TYPES, policyType } from '../src/policies';
import {
  decideJobRetries,
  type JobRetryCandidate,
  type JobRetrySnapshot,
} from '../src/policies/job-retry/job-retry.decide';
import { observeJobRetries } from '../src/policies/job-retry/job-retry.observer';
import { type JobRetryConfig, jobRetryPolicy } from '../src/policies/job-retry/job-retry.schema';
import type { FixtureOptions, FixtureRequest, FixtureStats } from './fixture-server';
import { backupBench } from './backup';
import { backupSetBench } from './backup-set';
import { consoleBench } from './console';
import { scaleBench } from './scale';
import { ownHarmBench } from './own-harm';
import { tokensBench } from './tokens';
import { burstBench } from './burst';
import { webhookLatencyBench } from './webhook-latency';
import { benchRedisUrl, dropRunKeys } from './processes';

const ROOT = resolve(__dirname, '..', '..');
// Any token does for the fixture server; this one looks like no real token to a secret scanner.
const TOKEN = 'fixture-server-token';
const JOBS = 10_000;
const PAGES = JOBS / 100;
const LATENCY_MS = 20;
const POLL_PROJECTS = 5_000;
const POLL_CONCURRENCY = 4;
const TAGS = 10_000;
/** Listing rounds per latency (each round runs every client once, interleaved). */
const ROUNDS = { 0: 7, [LATENCY_MS]: 5 } as Record<number, number>;
/** A safety net: the registry preview is stopped here (its floor at 20 ms and concurrency 4 is about 50 s). */
const REGISTRY_DEADLINE_MS = 100_000;
/** A safety net: the job_retry poll is stopped here and its time projected from the projects it got through. */
const POLL_DEADLINE_MS = 100_000;

// ---------------------------------------------------------------------------------------------------------------
// small helpers

const ms = (value: number) =>
  value >= 120_000
    ? `${(value / 60_000).toFixed(0)} min`
    : value >= 10_000
      ? `${(value / 1000).toFixed(1)} s`
      : value >= 1000
        ? `${(value / 1000).toFixed(2)} s`
        : `${value.toFixed(value < 10 ? 2 : value < 100 ? 1 : 0)} ms`;
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const n = (value: number) => value.toLocaleString('en');
const ratio = (value: number, best: number) => `${(value / best).toFixed(2)}×`;

const gc = () => (global as { gc?: () => void }).gc?.();

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Times `runs` calls of `body`, each after a full garbage collection so that one run's garbage is not the next's. */
async function timeRuns(runs: number, body: () => unknown): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    gc();
    const started = performance.now();
    await body();
    times.push(performance.now() - started);
  }
  return times;
}

function log(line = ''): void {
  process.stdout.write(`${line}\n`);
}

/** One row of the summary table. */
interface Row {
  /** The issue's numbering: 1 listing, 2 poll, 3 decide, 4 registry preview, 5 CLI start, 6 the daemon at scale, 7 failure → retry with webhooks, 8 backups, 9 the console. */
  section: number;
  figure: string;
  forgewarden: string;
  peers: string;
  ratio: string;
  floor: string;
}

const rows: Row[] = [];
const notes: string[] = [];

// ---------------------------------------------------------------------------------------------------------------
// the fixture server, in its own process

class FixtureProcess {
  private nextId = 1;
  private readonly pending = new Map<number, (stats: FixtureStats) => void>();

  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
  ) {
    child.on('message', (message: { id?: number; stats?: FixtureStats }) => {
      if (message.id !== undefined && message.stats) {
        this.pending.get(message.id)?.(message.stats);
        this.pending.delete(message.id);
      }
    });
  }

  static async start(options: Partial<FixtureOptions> = {}): Promise<FixtureProcess> {
    const child = fork(join(__dirname, 'fixture-server.js'), [], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, FIXTURE_OPTIONS: JSON.stringify(options) },
    });
    const url = await new Promise<string>((resolveUrl, reject) => {
      child.once('message', (message: { ready?: boolean; url?: string }) =>
        message.ready && message.url ? resolveUrl(message.url) : reject(new Error('fixture server did not start')),
      );
      child.once('exit', (code) => reject(new Error(`fixture server exited with ${code}`)));
    });
    return new FixtureProcess(child, url);
  }

  private ask(
    request: FixtureRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never,
  ): Promise<FixtureStats> {
    const id = this.nextId++;
    return new Promise((resolveStats) => {
      this.pending.set(id, resolveStats);
      const message: FixtureRequest = { ...request, id };
      this.child.send(message);
    });
  }

  latency(value: number) {
    return this.ask({ type: 'latency', ms: value });
  }

  stats() {
    return this.ask({ type: 'stats' });
  }

  reset() {
    return this.ask({ type: 'reset' });
  }

  stop(): void {
    this.child.disconnect();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// 1. listing 10,000 jobs: Forgewarden (concurrency 4 and 8), @gitbeaker/rest, python-gitlab

interface Contender {
  name: string;
  /** Concurrency the client may use for the floor; 1 for clients that read one page after another. */
  concurrency: number;
  /** Lists every job and returns the time, ms (python: measured inside the process; `wall` is the whole process). */
  run(url: string): Promise<{ ms: number; wall?: number; count: number }>;
}

async function listForgewarden(url: string, concurrency: number): Promise<{ ms: number; count: number }> {
  // The shared request budget is lifted (0 = unlimited): this measures paging, not the limiter.
  const client = new GitlabClient({ url, token: TOKEN, concurrency, maxRequestsPerMinute: 0 });
  try {
    let count = 0;
    const started = performance.now();
    for await (const _job of client.jobs.all(1)) count++;
    return { ms: performance.now() - started, count };
  } finally {
    await client.close();
  }
}

/**
 * The practical floor at a concurrency: undici itself, `concurrency` connections each asking for the next page
 * number as soon as its last answer is parsed, with nothing else (no shapes, no retries, no limiter).
 */
async function listRawUndici(url: string, concurrency: number): Promise<{ ms: number; count: number }> {
  const pool = new Pool(url, { connections: concurrency });
  try {
    let count = 0;
    let next = 1;
    const started = performance.now();
    const worker = async (): Promise<void> => {
      while (next <= PAGES) {
        const page = next++;
        const response = await pool.request({
          path: `/api/v4/projects/1/jobs?page=${page}&per_page=100`,
          method: 'GET',
          headers: { 'private-token': TOKEN },
        });
        // Read first, then added: `count += await …` would read `count` before the await and lose the other workers' pages.
        const jobs = JSON.parse(await response.body.text()) as unknown[];
        count += jobs.length;
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    return { ms: performance.now() - started, count };
  } finally {
    await pool.close();
  }
}

async function listGitbeaker(url: string): Promise<{ ms: number; count: number }> {
  const api = new Gitlab({ host: url, token: TOKEN });
  const started = performance.now();
  const jobs = await api.Jobs.all(1, { perPage: 100 });
  return { ms: performance.now() - started, count: jobs.length };
}

interface Python {
  command: string;
  version: string;
}

/**
 * The first python that can import python-gitlab: $PYTHON when set (and then only it), else python3 on PATH, then the
 * system's (Debian's python3-gitlab installs there, which a pyenv or venv python3 on PATH does not see).
 */
function findPython(): Python | undefined {
  const candidates = process.env.PYTHON ? [process.env.PYTHON] : ['python3', '/usr/bin/python3'];
  for (const command of [...new Set(candidates)]) {
    const probe = spawnSync(command, ['-c', 'import gitlab, sys; print(gitlab.__version__, sys.version.split()[0])'], {
      encoding: 'utf8',
    });
    if (probe.status !== 0) continue; // not there (stdout null), or no python-gitlab
    const [gitlab, version] = probe.stdout.trim().split(' ');
    return { command, version: `${gitlab} (Python ${version}, ${command})` };
  }
  return undefined;
}

function runProcess(
  command: string,
  args: readonly string[],
  env?: NodeJS.ProcessEnv,
): Promise<{ wall: number; stdout: string; stderr: string; code: number | null }> {
  return new Promise((resolveRun, reject) => {
    const started = performance.now();
    const child = spawn(command, args, { cwd: ROOT, env: env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolveRun({ wall: performance.now() - started, stdout, stderr, code }));
  });
}

/** The client loaded and used in a process of its own, as a script or a cron job would (default concurrency). */
async function listForgewardenProcess(url: string): Promise<{ ms: number; wall: number; count: number }> {
  const run = await runProcess(process.execPath, [join(__dirname, 'list-jobs.js'), url, TOKEN, '1']);
  if (run.code !== 0)
    throw new Error(`forgewarden listing failed: ${run.stderr.trim().split('\n').slice(-3).join(' / ')}`);
  const result = JSON.parse(run.stdout.trim().split('\n').pop() ?? '{}') as { list_ms: number; count: number };
  return { ms: result.list_ms, wall: run.wall, count: result.count };
}

async function listPython(python: Python, url: string): Promise<{ ms: number; wall: number; count: number }> {
  const run = await runProcess(python.command, [join(ROOT, 'bench', 'python_list_jobs.py'), url, TOKEN, '1']);
  if (run.code !== 0)
    throw new Error(`python-gitlab listing failed: ${run.stderr.trim().split('\n').slice(-3).join(' / ')}`);
  const result = JSON.parse(run.stdout.trim().split('\n').pop() ?? '{}') as { list_ms: number; count: number };
  return { ms: result.list_ms, wall: run.wall, count: result.count };
}

async function listing(fixture: FixtureProcess, python: Python | undefined): Promise<void> {
  const contenders: Contender[] = [
    { name: 'Forgewarden c=4', concurrency: 4, run: (url) => listForgewarden(url, 4) },
    { name: 'Forgewarden c=8', concurrency: 8, run: (url) => listForgewarden(url, 8) },
    { name: 'Forgewarden fresh process', concurrency: 4, run: listForgewardenProcess },
    { name: '@gitbeaker/rest', concurrency: 1, run: listGitbeaker },
    { name: 'raw undici c=4', concurrency: 4, run: (url) => listRawUndici(url, 4) },
  ];
  if (python) contenders.push({ name: 'python-gitlab', concurrency: 1, run: (url) => listPython(python, url) });

  // Warm-up, not counted: JIT, connection pools, the OS's page cache for python's modules.
  await fixture.latency(0);
  for (const contender of contenders) await contender.run(fixture.url);

  // Forgewarden streams: the heap it keeps while listing (live objects, sampled after a collection every 10 pages)
  // should not grow with the list. gitbeaker returns the whole list.
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  let heapPeak = heapBefore;
  const client = new GitlabClient({ url: fixture.url, token: TOKEN, concurrency: 4, maxRequestsPerMinute: 0 });
  let streamed = 0;
  for await (const _job of client.jobs.all(1)) {
    if (++streamed % 1000 !== 0) continue;
    gc();
    heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
  }
  await client.close();
  gc();
  const beforeList = process.memoryUsage().heapUsed;
  const held = await new Gitlab({ host: fixture.url, token: TOKEN }).Jobs.all(1, { perPage: 100 });
  gc();
  const gitbeakerHeld = process.memoryUsage().heapUsed - beforeList;
  void held.length;

  for (const latency of [0, LATENCY_MS]) {
    await fixture.latency(latency);
    await fixture.reset();
    const times = new Map<string, { ms: number[]; wall: number[] }>(
      contenders.map((c) => [c.name, { ms: [], wall: [] }]),
    );
    for (let round = 0; round < ROUNDS[latency]; round++) {
      for (const contender of contenders) {
        gc();
        const result = await contender.run(fixture.url);
        if (result.count !== JOBS) throw new Error(`${contender.name} listed ${result.count} jobs, expected ${JOBS}`);
        times.get(contender.name)?.ms.push(result.ms);
        if (result.wall !== undefined) times.get(contender.name)?.wall.push(result.wall);
      }
    }
    const stats = await fixture.stats();
    const medians = new Map([...times].map(([name, t]) => [name, median(t.ms)]));
    // The raw loop is a reference, not a peer: "the fastest" is among the clients.
    const fastest = Math.min(...[...medians].filter(([name]) => !name.startsWith('raw')).map(([, value]) => value));
    const raw = medians.get('raw undici c=4') ?? NaN;
    const floor = (concurrency: number) => (PAGES * latency) / concurrency;
    log(
      `\n### list ${n(JOBS)} jobs (${PAGES} pages of 100), fixture server ${latency} ms a request, ${ROUNDS[latency]} interleaved rounds`,
    );
    log(
      `fixture server: ${stats.requests} requests, ${(stats.cpuMicros / Math.max(1, stats.requests) / 1000).toFixed(3)} ms CPU a request (all clients)`,
    );
    for (const contender of contenders) {
      const t = times.get(contender.name) ?? { ms: [], wall: [] };
      const m = median(t.ms);
      const wall = t.wall.length
        ? `; whole fresh process ${ms(median(t.wall))} (runs ${t.wall.map((v) => v.toFixed(0)).join(', ')})`
        : '';
      const floorText = latency
        ? `; floor ${ms(floor(contender.concurrency))} at concurrency ${contender.concurrency}`
        : '';
      log(
        `- ${contender.name}: median ${ms(m)} (runs ${t.ms.map((v) => v.toFixed(0)).join(', ')} ms), ${ratio(m, fastest)} the fastest${wall}${floorText}`,
      );
    }
    const fw4 = medians.get('Forgewarden c=4') ?? NaN;
    const fw8 = medians.get('Forgewarden c=8') ?? NaN;
    const fwWall = median(times.get('Forgewarden fresh process')?.wall ?? []);
    const gb = medians.get('@gitbeaker/rest') ?? NaN;
    const py = medians.get('python-gitlab');
    const pyWall = python ? median(times.get('python-gitlab')?.wall ?? []) : undefined;
    rows.push({
      section: 1,
      figure: `list ${n(JOBS)} jobs, ${PAGES} pages, ${latency} ms/request`,
      forgewarden: `${ms(fw4)} (c=4) · ${ms(fw8)} (c=8) (fresh process ${ms(fwWall)})`,
      peers: `gitbeaker ${ms(gb)}${py !== undefined ? ` · python-gitlab ${ms(py)} (fresh process ${ms(pyWall ?? NaN)})` : ' · python-gitlab skipped'}`,
      ratio: [
        `c=4 ${ratio(fw4, fastest)}`,
        `c=8 ${ratio(fw8, fastest)}`,
        `gitbeaker ${ratio(gb, fastest)}`,
        ...(py !== undefined ? [`python ${ratio(py, fastest)}`] : []),
      ].join(' · '),
      floor: latency
        ? `${ms(floor(4))} (c=4) · ${ms(floor(8))} (c=8) · ${ms(floor(1))} (one page at a time); raw undici c=4 ${ms(raw)}`
        : `raw undici c=4 ${ms(raw)}`,
    });
  }
  await fixture.latency(0);
  rows.push({
    section: 1,
    figure: `heap while listing ${n(JOBS)} jobs`,
    forgewarden: `keeps at most ${mb(Math.max(0, heapPeak - heapBefore))} (streams)`,
    peers: `gitbeaker holds the list: ${mb(gitbeakerHeld)}`,
    ratio: '',
    floor: 'independent of the list length',
  });
}

/** Two more client figures worth keeping from the old bench: a quiet poll and a long log's tail, both at 0 ms. */
async function clientExtras(fixture: FixtureProcess): Promise<void> {
  await fixture.latency(0);
  const client = new GitlabClient({ url: fixture.url, token: TOKEN, concurrency: 4, maxRequestsPerMinute: 0 });
  try {
    await fixture.reset();
    const quietRuns = 20;
    const quiet = median(
      await timeRuns(quietRuns, async () => {
        for await (const job of client.jobs.all(1, { scope: ['failed'] }, { until: (j) => j.id <= JOBS })) void job;
      }),
    );
    // Pages read ahead and then dropped still reach the forge (and count against its budget).
    const quietRequests = (await fixture.stats()).requests / quietRuns;
    gc();
    const before = process.memoryUsage().heapUsed;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 5);
    const started = performance.now();
    const tail = await client.jobs.traceTail(1, JOBS, 64 * 1024);
    const tailMs = performance.now() - started;
    clearInterval(sampler);
    const total = tail.found ? tail.totalBytes : 0;
    log(`\n### client extras (0 ms)`);
    log(
      `- a poll with nothing new (stops at the first job of page 1): ${ms(quiet)}, ${quietRequests.toFixed(1)} requests reached the server per poll`,
    );
    log(
      `- last 64 KiB of a ${mb(total)} log, streamed: ${ms(tailMs)}, heap grew at most ${mb(Math.max(0, peak - before))}`,
    );
    rows.push({
      section: 1,
      figure: 'poll with nothing new (stops on page 1, `until`), 0 ms',
      forgewarden: `${ms(quiet)}, ${quietRequests.toFixed(1)} requests/poll at the server`,
      peers: '',
      ratio: '',
      floor: 'one request',
    });
    rows.push({
      section: 1,
      figure: `tail 64 KiB of a ${mb(total)} job log, 0 ms`,
      forgewarden: `${ms(tailMs)}, heap +${mb(Math.max(0, peak - before))}`,
      peers: '',
      ratio: '',
      floor: 'heap independent of the log size',
    });
  } finally {
    await client.close();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// 3. decide CPU

function jobRetryConfig(projects: readonly number[]): JobRetryConfig {
  return jobRetryPolicy.schema.parse({
    name: 'bench',
    type: 'job_retry',
    projects,
    interval: '1m',
    match: { job_names: ['^test'], failure_log: ['(?i)connection reset', 'ETIMEDOUT'] },
  });
}

function candidate(id: number, projectId: number, log: string): JobRetryCandidate {
  return {
    job: {
      id,
      name: id % 3 ? 'test-unit' : 'lint',
      stage: 'test',
      ref: 'main',
      tag: false,
      allow_failure: false,
      pipeline_id: id,
      project_id: projectId,
      finished_at: null,
      failure_reason: 'script_failure',
    },
    attempts: 1,
    newestAttemptId: id,
    log: { state: 'found', text: log },
  };
}

async function deciding(): Promise<void> {
  log('\n### decide (CPU, no I/O)');
  const bigLog = `${'x'.repeat(60_000)}\nError: read ECONNRESET: connection reset by peer\n`;
  const oneProject = jobRetryConfig([1]);
  const jobsSnapshot: JobRetrySnapshot = {
    projects: [
      {
        project: 1,
        projectId: 1,
        candidates: Array.from({ length: 10_000 }, (_, i) => candidate(i + 1, 1, bigLog)),
        watermark: undefined,
      },
    ],
  };
  // Seconds a run: one run is the figure (and its own warm-up). Shorter: that run was the warm-up, three more count.
  const first = await timeRuns(1, () => decideJobRetries(oneProject, jobsSnapshot, new Date()));
  const jobsTimes =
    first[0] > 2_000 ? first : await timeRuns(3, () => decideJobRetries(oneProject, jobsSnapshot, new Date()));
  const jobsMs = median(jobsTimes);
  const scanned = (10_000 * 2) / 3; // the `lint` third is skipped by name before its log is looked at
  log(
    `- 10,000 failed jobs, 60 KB logs, 2 RE2 patterns: ${ms(jobsMs)} (runs ${jobsTimes.map((t) => t.toFixed(0)).join(', ')} ms; ~${n(Math.round(scanned))} logs searched, ${((scanned * bigLog.length) / 1e6 / (jobsMs / 1000)).toFixed(0)} MB/s)`,
  );

  const shortLog = 'Step 3/9 : RUN make test\nError: read ECONNRESET: connection reset by peer\n';
  const byProjects = new Map<number, { median: number; min: number }>();
  for (const count of [10_000, 20_000]) {
    const ids = Array.from({ length: count }, (_, i) => i + 1);
    const config = jobRetryConfig(ids);
    const snapshot: JobRetrySnapshot = {
      projects: ids.map((id) => ({
        project: id,
        projectId: id,
        candidates: [candidate(id * 10 + 1, id, shortLog)],
        watermark: undefined,
      })),
    };
    decideJobRetries(config, snapshot, new Date());
    const times = await timeRuns(9, () => decideJobRetries(config, snapshot, new Date()));
    byProjects.set(count, { median: median(times), min: Math.min(...times) });
    log(
      `- ${n(count)} projects, one failed job each (short log): median ${ms(median(times))}, fastest ${ms(Math.min(...times))} (runs ${times.map((t) => t.toFixed(0)).join(', ')} ms)`,
    );
  }
  // The fastest run is the one least disturbed by the rest of the machine: the ratio of those says more about the
  // code's growth than a ratio of medians on a shared 2-core machine.
  const p10 = byProjects.get(10_000) ?? { median: NaN, min: NaN };
  const p20 = byProjects.get(20_000) ?? { median: NaN, min: NaN };
  log(
    `- 20,000 / 10,000 projects: ${(p20.min / p10.min).toFixed(2)}× fastest runs, ${(p20.median / p10.median).toFixed(2)}× medians (2.00× is linear)`,
  );
  rows.push({
    section: 3,
    figure: 'decide 10,000 failed jobs, 60 KB logs, 2 RE2 patterns',
    forgewarden: ms(jobsMs),
    peers: '',
    ratio: '',
    floor: '',
  });
  rows.push({
    section: 3,
    figure: 'decide 10,000 → 20,000 projects (1 job each)',
    forgewarden: `${ms(p10.median)} → ${ms(p20.median)} (fastest ${ms(p10.min)} → ${ms(p20.min)})`,
    peers: '',
    ratio: `${(p20.min / p10.min).toFixed(2)}× (fastest) · ${(p20.median / p10.median).toFixed(2)}× (medians) for 2× projects`,
    floor: 'linear: 2.00×',
  });
}

// ---------------------------------------------------------------------------------------------------------------
// 2 and 4: the job_retry poll and the registry preview, in child processes

class MemoryState implements PolicyState {
  private readonly values = new Map<string, string>();

  async get(key: string): Promise<string | undefined> {
    return this.values.get(key);
  }

  async getMany(keys: readonly string[]): Promise<Array<string | undefined>> {
    return keys.map((key) => this.values.get(key));
  }

  async set(key: string, value: string): Promise<void> {
    this.values.set(key, value);
  }

  async setGuard(key: string, value: string): Promise<void> {
    this.values.set(key, value);
  }

  async delete(key: string): Promise<void> {
    this.values.delete(key);
  }
}

const quietLogger = { log() {}, warn() {}, error() {}, debug() {}, verbose() {}, fatal() {} } as unknown as Logger;

/** A pass's context as the engine builds it: observers read `concurrency` targets at once, the client's cap. */
function context(
  client: GitlabClient,
  policy: PolicyConfig,
  concurrency: number,
  progress: (message: string) => void = () => {},
): PolicyContext {
  return handContext(client, policy, new MemoryState(), { logger: quietLogger, mode: 'plan', progress, concurrency });
}

type WorkerMessage =
  | { kind: 'started'; rss: number }
  | { kind: 'progress'; message: string; at: number }
  | {
      kind: 'done';
      ms: number;
      cpuMs: number;
      rssBefore: number;
      rssAfter: number;
      maxRss: number;
      heapAfter: number;
      summary: string;
    };

async function pollWorker(url: string): Promise<void> {
  const send = (message: WorkerMessage) => process.send?.(message);
  const projects = Array.from({ length: POLL_PROJECTS }, (_, i) => i + 2);
  const config = jobRetryConfig(projects);
  const client = new GitlabClient({ url, token: TOKEN, concurrency: POLL_CONCURRENCY, maxRequestsPerMinute: 0 });
  const ctx = context(client, config, POLL_CONCURRENCY);
  gc();
  const rssBefore = process.memoryUsage().rss;
  send({ kind: 'started', rss: rssBefore });
  const cpu = process.cpuUsage();
  const started = performance.now();
  const snapshot = await observeJobRetries(config, ctx);
  const elapsed = performance.now() - started;
  const cpuUsed = process.cpuUsage(cpu);
  const rssAfter = process.memoryUsage().rss;
  const heapAfter = process.memoryUsage().heapUsed;
  const decisions = decideJobRetries(config, snapshot, ctx.now);
  await client.close();
  const candidates = snapshot.projects.reduce((sum, p) => sum + p.candidates.length, 0);
  send({
    kind: 'done',
    ms: elapsed,
    cpuMs: (cpuUsed.user + cpuUsed.system) / 1000,
    rssBefore,
    rssAfter,
    heapAfter,
    maxRss: process.resourceUsage().maxRSS * 1024,
    summary: `${n(snapshot.projects.length)} projects, ${n(candidates)} new failed jobs, ${n(decisions.filter((d) => d.action !== 'skip').length)} retries decided`,
  });
}

async function registryWorker(url: string): Promise<void> {
  const send = (message: WorkerMessage) => process.send?.(message);
  // Default settings: nothing set in the gitlab section but url and token.
  const config = parseConfig(
    [
      'version: 1',
      `gitlab: { url: "${url}", token: "${TOKEN}" }`,
      'policies:',
      '  - { name: cleanup, type: registry_cleanup, schedule: "0 3 * * *", projects: [1], name_regex_delete: ".*", keep_n: 50, older_than: 14d }',
    ].join('\n'),
    'bench.yml',
    { policyTypes: POLICY_TYPES, env: {} },
  );
  const { gitlab } = config;
  const client = new GitlabClient({
    url: gitlab.url,
    token: TOKEN,
    timeoutMs: gitlab.timeout,
    connectTimeoutMs: gitlab.connect_timeout,
    concurrency: gitlab.concurrency,
    // Lifted, as for the listing: at the default 600 a minute the budget, not the client, sets the pace (see the floor).
    maxRequestsPerMinute: 0,
  });
  const policy: PolicyConfig = config.policies[0];
  const runner = policyType(policy.type);
  if (!runner) throw new Error('registry_cleanup is not a policy type of this build');
  const ctx = context(client, policy, gitlab.concurrency, (message) =>
    send({ kind: 'progress', message, at: performance.now() }),
  );
  gc();
  const rssBefore = process.memoryUsage().rss;
  send({ kind: 'started', rss: rssBefore });
  const cpu = process.cpuUsage();
  const started = performance.now();
  const snapshot = await runner.observe(policy, ctx);
  const decisions = runner.decide(policy, snapshot, ctx.now);
  const elapsed = performance.now() - started;
  const cpuUsed = process.cpuUsage(cpu);
  await client.close();
  send({
    kind: 'done',
    ms: elapsed,
    cpuMs: (cpuUsed.user + cpuUsed.system) / 1000,
    rssBefore,
    rssAfter: process.memoryUsage().rss,
    heapAfter: process.memoryUsage().heapUsed,
    maxRss: process.resourceUsage().maxRSS * 1024,
    summary: decisions.find((d) => d.action !== 'skip')?.reason ?? decisions[0]?.reason ?? 'no decision',
  });
}

/** Runs a worker until it reports `done` or the deadline passes (then it is stopped); returns what it said. */
async function runWorker(
  kind: string,
  url: string,
  deadlineMs: number,
): Promise<{ messages: WorkerMessage[]; elapsed: number; finished: boolean }> {
  const child = fork(__filename, ['--worker', kind, url], {
    execArgv: ['--expose-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const messages: WorkerMessage[] = [];
  let startedAt = performance.now();
  return new Promise((resolveRun, reject) => {
    let finished = false;
    const timer = setTimeout(() => child.kill('SIGKILL'), deadlineMs);
    child.on('message', (message: WorkerMessage) => {
      messages.push(message);
      if (message.kind === 'started') {
        startedAt = performance.now();
        timer.refresh();
      }
      if (message.kind === 'done') finished = true;
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (!finished && signal !== 'SIGKILL') reject(new Error(`${kind} worker exited with ${code ?? signal}`));
      else resolveRun({ messages, elapsed: performance.now() - startedAt, finished });
    });
  });
}

interface PollRun {
  run: Awaited<ReturnType<typeof runWorker>>;
  stats: FixtureStats;
  overlapped: boolean;
}

/** Starts the poll against its own fixture server; `reportPoll` prints it once the rest is done. */
async function startPoll(fixture: FixtureProcess, overlapped: boolean): Promise<PollRun> {
  await fixture.latency(LATENCY_MS);
  await fixture.reset();
  const run = await runWorker('poll', fixture.url, POLL_DEADLINE_MS);
  return { run, stats: await fixture.stats(), overlapped };
}

function reportPoll({ run, stats, overlapped }: PollRun): void {
  const floor = (POLL_PROJECTS * LATENCY_MS) / POLL_CONCURRENCY;
  const perProject = stats.pollProjects ? (stats.byRoute.poll_jobs ?? 0) / stats.pollProjects : NaN;
  const requestsText = `${n(stats.requests)} requests, ${perProject.toFixed(2)} per project (at most ${stats.maxRequestsPerPollProject})`;
  const started = run.messages.find((m) => m.kind === 'started');
  const done = run.messages.find((m): m is Extract<WorkerMessage, { kind: 'done' }> => m.kind === 'done');
  log(
    `\n### job_retry poll of ${n(POLL_PROJECTS)} projects (observe, first poll), ${LATENCY_MS} ms a request, client concurrency ${POLL_CONCURRENCY}`,
  );
  if (overlapped) {
    log(
      '- ran alongside the other figures (its own process and fixture server; it waits on the forge almost all the time, see its CPU); `--serial` runs it alone',
    );
  }
  let time: string;
  if (done) {
    time = ms(done.ms);
    log(`- ${time}: ${done.summary}; ${requestsText}`);
    log(
      `- CPU ${ms(done.cpuMs)} (${((100 * done.cpuMs) / done.ms).toFixed(1)}% of one core); fixture server ${(stats.cpuMicros / Math.max(1, stats.requests) / 1000).toFixed(3)} ms CPU a request`,
    );
    log(
      `- RSS ${mb(done.rssBefore)} before, ${mb(done.rssAfter)} after (peak ${mb(done.maxRss)}), heap after ${mb(done.heapAfter)}`,
    );
  } else {
    const projected = (run.elapsed / Math.max(1, stats.pollProjects)) * POLL_PROJECTS;
    time = `stopped at ${ms(run.elapsed)} after ${n(stats.pollProjects)} projects; projected ${ms(projected)}`;
    log(`- ${time}; ${requestsText}; RSS before ${mb(started?.kind === 'started' ? started.rss : NaN)}`);
  }
  log(
    `- floor ${n(POLL_PROJECTS)} × ${LATENCY_MS} ms / ${POLL_CONCURRENCY} = ${ms(floor)}${done ? `: ${(done.ms / floor).toFixed(1)}× the floor` : ''}`,
  );
  rows.push({
    section: 2,
    figure: `job_retry poll, ${n(POLL_PROJECTS)} projects, ${LATENCY_MS} ms, c=${POLL_CONCURRENCY}`,
    forgewarden: `${time}; ${perProject.toFixed(2)} req/project; RSS ${done ? `${mb(done.rssBefore)} → ${mb(done.rssAfter)}` : 'n/a'}`,
    peers: '',
    ratio: done ? `${(done.ms / floor).toFixed(1)}× the floor` : '',
    floor: ms(floor),
  });
}

async function registryPreview(fixture: FixtureProcess): Promise<void> {
  await fixture.latency(LATENCY_MS);
  await fixture.reset();
  const run = await runWorker('registry', fixture.url, REGISTRY_DEADLINE_MS);
  const stats = await fixture.stats();
  await fixture.latency(0);
  // Default settings as the policy file gives them (concurrency 4), with the request budget lifted: at the default
  // 600 requests a minute a cold preview of this size is bound by the budget, whatever the client does.
  const defaults = parseConfig(
    `version: 1\ngitlab: { url: "${fixture.url}", token: t }\npolicies: []`,
    'defaults.yml',
    { policyTypes: POLICY_TYPES, env: {} },
  ).gitlab;
  const requests = 1 + TAGS / 100 + TAGS; // repositories, tag pages, one detail per tag
  const concurrencyFloor = (requests * LATENCY_MS) / defaults.concurrency;
  const windows = Math.ceil(requests / defaults.max_requests_per_minute);
  const budgetFloor = (windows - 1) * 60_000;
  const done = run.messages.find((m): m is Extract<WorkerMessage, { kind: 'done' }> => m.kind === 'done');
  const progress = run.messages.filter((m): m is Extract<WorkerMessage, { kind: 'progress' }> => m.kind === 'progress');
  const started = run.messages.find((m) => m.kind === 'started');
  log(
    `\n### cold registry preview, ${n(TAGS)} tags, ${LATENCY_MS} ms a request, default settings (concurrency ${defaults.concurrency}), request budget lifted`,
  );
  const seen = `${n(stats.requests)} requests (${stats.byRoute.tags ?? 0} tag pages, ${n(stats.byRoute.tag ?? 0)} tag details)`;
  let time: string;
  if (done) {
    time = ms(done.ms);
    log(`- ${time}, ${seen}: ${done.summary}; RSS ${mb(done.rssBefore)} → ${mb(done.rssAfter)}`);
  } else {
    const last = progress.at(-1);
    time = `not done after ${ms(run.elapsed)}: ${seen}`;
    log(
      `- ${time}; last progress: ${last ? `"${last.message}"` : 'none'}; RSS before ${mb(started?.kind === 'started' ? started.rss : NaN)}`,
    );
  }
  log(
    `- floor ${n(requests)} × ${LATENCY_MS} ms / ${defaults.concurrency} = ${ms(concurrencyFloor)}; with the default budget of ${defaults.max_requests_per_minute} a minute the same preview needs ${windows} one-minute windows, ≈ ${ms(budgetFloor)}`,
  );
  rows.push({
    section: 4,
    figure: `cold registry preview, ${n(TAGS)} tags, ${LATENCY_MS} ms, default settings`,
    forgewarden: done
      ? `${time}; ${n(stats.requests)} requests`
      : `not done in ${ms(REGISTRY_DEADLINE_MS)}: ${n(stats.requests)} requests`,
    peers: '',
    ratio: done ? `${(done.ms / concurrencyFloor).toFixed(2)}× the floor` : '',
    floor: `${ms(concurrencyFloor)} (c=${defaults.concurrency}; ≈ ${ms(budgetFloor)} at the default ${defaults.max_requests_per_minute}/min budget)`,
  });
}

// ---------------------------------------------------------------------------------------------------------------
// 5. CLI start

/** Wall time and max RSS of a command, by /usr/bin/time -v when there is one, else by a --require probe (node only). */
async function measureCommand(
  command: string,
  args: readonly string[],
): Promise<{ wall: number; maxRss: number; stdout: string; code: number | null }> {
  if (existsSync('/usr/bin/time')) {
    const run = await runProcess('/usr/bin/time', ['-v', command, ...args]);
    const rss = /Maximum resident set size \(kbytes\): (\d+)/.exec(run.stderr);
    return { wall: run.wall, maxRss: rss ? Number(rss[1]) * 1024 : NaN, stdout: run.stdout, code: run.code };
  }
  if (command !== process.execPath) {
    const run = await runProcess(command, args);
    return { wall: run.wall, maxRss: NaN, stdout: run.stdout, code: run.code };
  }
  const run = await runProcess(command, ['--require', join(__dirname, 'rss-probe.js'), ...args]);
  const rss = /forgewarden-bench-max-rss=(\d+)/.exec(run.stderr);
  return { wall: run.wall, maxRss: rss ? Number(rss[1]) : NaN, stdout: run.stdout, code: run.code };
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestMtime(path));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

async function cliStart(python: Python | undefined): Promise<void> {
  log('\n### CLI start');
  const main = join(ROOT, 'dist', 'main.js');
  if (!existsSync(main)) {
    notes.push('CLI start skipped: dist/main.js is missing (run `npm run build`).');
    log('- skipped: dist/main.js is missing (run `npm run build`)');
    return;
  }
  if (newestMtime(join(ROOT, 'src')) > statSync(main).mtimeMs) {
    notes.push('dist/main.js is older than some file in src/: the CLI figures are those of the last `npm run build`.');
    log('- note: dist/main.js is older than src/ (figures are those of the last build)');
  }
  const runs = 5;
  const measure = async (args: string[]) => {
    const results = [];
    for (let i = 0; i < runs; i++) results.push(await measureCommand(process.execPath, [main, ...args]));
    if (results.some((r) => r.code !== 0))
      throw new Error(`node dist/main.js ${args.join(' ')} exited with ${results.map((r) => r.code).join(',')}`);
    return {
      wall: median(results.map((r) => r.wall)),
      maxRss: median(results.map((r) => r.maxRss)),
      walls: results.map((r) => r.wall),
    };
  };
  const validate = await measure(['validate', 'config/demo.yml']);
  const version = await measure(['--version']);
  const nodeBare = [];
  for (let i = 0; i < runs; i++) nodeBare.push(await measureCommand(process.execPath, ['-e', '0']));
  const nodeWall = median(nodeBare.map((r) => r.wall));
  log(
    `- node dist/main.js validate config/demo.yml: ${ms(validate.wall)} wall (runs ${validate.walls.map((v) => v.toFixed(0)).join(', ')} ms), max RSS ${mb(validate.maxRss)}`,
  );
  log(`- node dist/main.js --version: ${ms(version.wall)} wall, max RSS ${mb(version.maxRss)}`);
  log(`- node -e 0 (the floor): ${ms(nodeWall)} wall, max RSS ${mb(median(nodeBare.map((r) => r.maxRss)))}`);

  let peers = 'python-gitlab skipped';
  if (python) {
    const importTimes: number[] = [];
    const importWalls: number[] = [];
    const bareWalls: number[] = [];
    for (let i = 0; i < runs; i++) {
      const run = await runProcess(python.command, ['-X', 'importtime', '-c', 'import gitlab']);
      const line = run.stderr.split('\n').find((l) => /\|\s*gitlab\s*$/.test(l));
      const cumulative = line ? Number(line.split('|')[1]) : NaN;
      importTimes.push(cumulative / 1000);
      importWalls.push((await runProcess(python.command, ['-c', 'import gitlab'])).wall);
      bareWalls.push((await runProcess(python.command, ['-c', 'pass'])).wall);
    }
    const importMs = median(importTimes);
    log(
      `- ${python.command} -X importtime -c 'import gitlab': ${ms(importMs)} (cumulative); whole process ${ms(median(importWalls))}, \`${python.command} -c pass\` ${ms(median(bareWalls))}`,
    );
    peers = `python-gitlab: \`import gitlab\` ${ms(importMs)}, process ${ms(median(importWalls))}`;
  }
  rows.push({
    section: 5,
    figure: '`node dist/main.js validate config/demo.yml`',
    forgewarden: `${ms(validate.wall)}, max RSS ${mb(validate.maxRss)}`,
    peers,
    ratio: '',
    floor: `\`node -e 0\` ${ms(nodeWall)}`,
  });
  rows.push({
    section: 5,
    figure: '`node dist/main.js --version`',
    forgewarden: `${ms(version.wall)}, max RSS ${mb(version.maxRss)}`,
    peers: '',
    ratio: '',
    floor: `\`node -e 0\` ${ms(nodeWall)}`,
  });
}

// ---------------------------------------------------------------------------------------------------------------
// kept from the old bench: loading a policy file

async function configLoading(): Promise<void> {
  const policies = Array.from({ length: 50 }, (_, i) =>
    [
      `  - name: retry-${i}`,
      '    type: job_retry',
      `    projects: [acme/api-${i}, ${i + 1}]`,
      '    interval: 1m',
      '    match: { job_names: ["^test", "^e2e"], stages: [test], failure_log: ["(?i)connection reset", "ETIMEDOUT"] }',
    ].join('\n'),
  );
  const text = [
    'version: 1',
    'gitlab: { url: "https://gitlab.example.com", token: "t0k3n-bench" }',
    'policies:',
    ...policies,
  ].join('\n');
  parseConfig(text, 'bench.yml', { policyTypes: POLICY_TYPES, env: {} });
  const time = median(
    await timeRuns(20, () => void parseConfig(text, 'bench.yml', { policyTypes: POLICY_TYPES, env: {} })),
  );
  log(`\n### config\n- load and validate a policy file with 50 job_retry policies: ${ms(time)}`);
  rows.push({
    section: 3,
    figure: 'load and validate 50 job_retry policies',
    forgewarden: ms(time),
    peers: '',
    ratio: '',
    floor: '',
  });
}

// ---------------------------------------------------------------------------------------------------------------

function table(): string {
  const header = '| figure | Forgewarden | peers | ratio (to the fastest) | floor / target |';
  const escape = (cell: string) => cell.replace(/\|/g, '\\|');
  const lines = [
    header,
    '|---|---|---|---|---|',
    ...[...rows]
      .sort((a, b) => a.section - b.section)
      .map((r) => `| ${[r.figure, r.forgewarden, r.peers, r.ratio, r.floor].map(escape).join(' | ')} |`),
  ];
  return lines.join('\n');
}

function gitbeakerVersion(): string {
  // Its package.json is not exported, so it is read from where the package resolves.
  const entry = require.resolve('@gitbeaker/rest');
  const manifest = join(
    entry.slice(0, entry.lastIndexOf(`${'@gitbeaker'}/rest`)),
    '@gitbeaker',
    'rest',
    'package.json',
  );
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}

/** What `--only` takes. */
const SECTIONS = [
  'config',
  'listing',
  'extras',
  'decide',
  'registry',
  'cli',
  'poll',
  'scale',
  'webhooks',
  'burst',
  'backup',
  'backup-set',
  'console',
  'own-harm',
  'tokens',
] as const;
type SectionName = (typeof SECTIONS)[number];

function onlySections(): ReadonlySet<SectionName> {
  const at = process.argv.indexOf('--only');
  if (at === -1) return new Set(SECTIONS);
  const names = (process.argv[at + 1] ?? '').split(',').filter(Boolean);
  const unknown = names.filter((name) => !(SECTIONS as readonly string[]).includes(name));
  if (names.length === 0 || unknown.length)
    throw new Error(
      `--only takes some of ${SECTIONS.join(', ')} (comma-separated)${unknown.length ? `; unknown: ${unknown.join(', ')}` : ''}`,
    );
  return new Set(names as SectionName[]);
}

async function main(): Promise<void> {
  const outAt = process.argv.indexOf('--out');
  const out = outAt > -1 ? process.argv[outAt + 1] : undefined;
  if (outAt > -1 && !out) throw new Error('--out needs a file name');
  const only = onlySections();
  const wants = (name: SectionName) => only.has(name);
  const started = performance.now();
  const python = findPython();
  const env = `node ${process.version}, ${process.platform}/${process.arch}, @gitbeaker/rest ${gitbeakerVersion()}, ${python ? `python-gitlab ${python.version}` : 'python-gitlab not importable'}`;
  log(`# forgewarden benchmarks (${env})`);
  if (!python) {
    const why = process.env.PYTHON
      ? `$PYTHON (${process.env.PYTHON}) cannot`
      : 'neither python3 nor /usr/bin/python3 can';
    const note = `python-gitlab skipped: ${why} \`import gitlab\` (Debian: apt-get install python3-gitlab; or set PYTHON).`;
    notes.push(note);
    log(note);
  }

  // The poll is latency-bound (5,000 requests one project after another, a few % of one core): it runs alongside the
  // rest, against a fixture server of its own, unless --serial asks for it alone at the end.
  const serial = process.argv.includes('--serial');
  const needsFixture = wants('listing') || wants('extras') || wants('registry');
  const [fixture, pollFixture] = await Promise.all([
    needsFixture ? FixtureProcess.start() : undefined,
    wants('poll') ? FixtureProcess.start({ jobs: 0, tags: 0, traceBytes: 0 }) : undefined,
  ]);
  try {
    const poll = serial || !pollFixture ? undefined : startPoll(pollFixture, true);
    poll?.catch(() => undefined); // awaited below; a failure must not go unhandled meanwhile
    if (wants('config')) await configLoading();
    if (fixture && wants('listing')) await listing(fixture, python);
    if (fixture && wants('extras')) await clientExtras(fixture);
    if (wants('decide')) await deciding();
    if (fixture && wants('registry')) await registryPreview(fixture);
    if (wants('cli')) await cliStart(python);
    if (pollFixture) reportPoll(await (poll ?? startPoll(pollFixture, false)));
  } finally {
    fixture?.stop();
    pollFixture?.stop();
  }
  // Alone at the end: its pace and its requests per second are the daemon's only while nothing else needs the CPU.
  if (wants('scale')) {
    const scale = await scaleBench(log);
    rows.push(...scale.rows.map((row) => ({ section: 6, ...row })));
    notes.push(...scale.notes);
  }
  // A backup streams 200 MB through the CLI: alone, after the daemon at scale, so neither shares the CPU.
  if (wants('backup')) {
    const backup = await backupBench(log);
    rows.push(...backup.rows.map((row) => ({ section: 8, ...row })));
    notes.push(...backup.notes);
  }
  // A set of 50 projects at the forge's limit of 6 exports a minute: about 8 minutes, mostly waiting on the limit.
  if (wants('backup-set')) {
    const set = await backupSetBench(log);
    rows.push(...set.rows.map((row) => ({ section: 8, ...row })));
    notes.push(...set.notes);
  }
  // The console over a full Redis: alone too, its figures are response times.
  if (wants('console')) {
    const console = await consoleBench(log);
    rows.push(...console.rows.map((row) => ({ section: 9, ...row })));
    notes.push(...console.notes);
  }
  // A daemon that mostly waits on the person and its follow-up passes: its figure is a time of the schedule's making.
  if (wants('own-harm')) {
    const harm = await ownHarmBench(log);
    rows.push(...harm.rows.map((row) => ({ section: 7, ...row })));
    notes.push(...harm.notes);
  }
  // A pass that mostly waits on the request budget: its figure is the budget's, alone.
  if (wants('tokens')) {
    const tokens = await tokensBench(log);
    rows.push(...tokens.rows.map((row) => ({ section: 7, ...row })));
    notes.push(...tokens.notes);
  }
  // Two daemons and two sandboxes that mostly wait: last, so that the figures above are not shared with them.
  if (wants('webhooks')) {
    const latency = await webhookLatencyBench(log);
    rows.push(...latency.rows.map((row) => ({ section: 7, ...row })));
    notes.push(...latency.notes);
  }
  // One daemon and its sandbox, a minute of failures and their retries.
  if (wants('burst')) {
    const burst = await burstBench(log);
    rows.push(...burst.rows.map((row) => ({ section: 7, ...row })));
    notes.push(...burst.notes);
  }

  const text = [
    [
      `Measured ${new Date().toISOString().slice(0, 10)} (${env}), ${cpus().length} cores.`,
      ...(wants('listing')
        ? [`Listing: medians of interleaved rounds (${ROUNDS[0]} at 0 ms, ${ROUNDS[LATENCY_MS]} at ${LATENCY_MS} ms).`]
        : []),
      ...(wants('listing') || wants('poll')
        ? [
            `The request budget lifted for the listing and the poll${wants('poll') && !serial ? '; the poll ran alongside the other figures' : ''}.`,
          ]
        : []),
      ...(wants('scale')
        ? [
            `The daemon at scale: \`node dist/main.js run\` against the sandbox forge (\`node dist/main.js sandbox\`, no added latency), alone at the end.`,
          ]
        : []),
      ...(wants('console')
        ? [
            `The console: \`node dist/main.js run\` with 50 dry-run policies against the sandbox forge, Redis filled by the bench (1,000,000 audit entries appended with the trail's own trim), alone.`,
          ]
        : []),
      ...(wants('backup-set')
        ? [
            "The backup set: `node dist/main.js once` with a group_backup policy at its defaults against the sandbox forge at the forge's default export limits (60 s window), alone.",
          ]
        : []),
      ...(wants('webhooks')
        ? [
            'Failure → retry: two daemons, one with webhooks and one polling every minute, each on a sandbox forge of its own.',
          ]
        : []),
      ...(wants('tokens')
        ? ['Tokens: key_rotation in this process against the sandbox forge, at the default request budget, alone.']
        : []),
      ...(wants('burst')
        ? ['The burst: one daemon with webhooks on, 1,000 failures within a minute on a sandbox forge of its own.']
        : []),
      ...(wants('own-harm')
        ? [
            "Own harm: `node dist/main.js run` with a project_settings policy, its reprotect cut by the token's rights taken away (the protect held at the sandbox's door), five runs.",
          ]
        : []),
    ].join(' '),
    '',
    table(),
    ...(notes.length ? ['', ...notes.map((note) => `- ${note}`)] : []),
  ].join('\n');
  log(`\n## summary (${ms(performance.now() - started)})\n`);
  log(text);
  if (out) writeFileSync(out, `${text}\n`);
}

/**
 * Every key this run wrote goes with it: each section removes its own, and this sweeps what one left (interrupted,
 * or a bug), saying how many that was. On Ctrl-C too.
 */
async function leaveNoKeys(): Promise<void> {
  const left = await dropRunKeys();
  log(
    `\nRedis: ${left === 0 ? 'no key of this run was left' : `${left} keys of this run were left by a section, removed now`} (${benchRedisUrl()}, fwbench-*-${process.pid}-*)`,
  );
  if (left > 0) process.exitCode = 1;
}

if (process.argv[2] === '--worker') {
  const [, , , kind, url] = process.argv;
  const work =
    kind === 'poll'
      ? pollWorker(url)
      : kind === 'registry'
        ? registryWorker(url)
        : Promise.reject(new Error(`unknown worker ${kind}`));
  work.then(
    () => process.disconnect?.(),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
} else {
  process.once('SIGINT', () => void leaveNoKeys().finally(() => process.exit(130)));
  main()
    .finally(leaveNoKeys)
    .catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
}
