/**
 * The daemon at scale (`npm run bench -- --only scale`, also part of the whole bench): the real daemon
 * (`node dist/main.js run`) with one job_retry policy over `big/**`, against the sandbox forge (`node dist/main.js
 * sandbox`) serving a generated world of 5,000 projects under one group. Everything is measured from outside:
 * - RSS of the daemon's process (/proc/PID/status) once it has started and after each of ten polls, with the V8 heap it
 *   reports on /metrics, against the target of 150 MB and no growth per poll;
 * - the requests of each poll as the sandbox logged them, by path: discovery (the group listing, cached for
 *   `discovery_interval`), the per-project listing of failed jobs, and the reads of the failures found;
 * - requests per 10 s and per minute (the budget's own fixed windows) against `gitlab.max_requests_per_minute`, and
 *   the peak per second, paced (the daemon's scheduled passes) and unpaced (`once`, the same pass as fast as
 *   `gitlab.concurrency` allows).
 * About 2¾ minutes: the ten polls at a 15 s interval (the first at the start, the others at the interval's ticks), and
 * a few seconds for the starts and the unpaced pass.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { benchPrefix, clearRequestLog, type CommandRun, DAEMON_NODE_FLAGS, dropKeys, freePort, get, lines, type LoggedRequest, MAIN, memoryOf, metric, requestLog, ROOT, runCommand, type Sandbox, sleep, startSandbox, waitForExit } from './processes';
// The world's administrator; the sandbox accepts it and no real forge does.
const TOKEN = 'glpat-sandbox-scale-admin';

/** 50 generated groups of 99 projects under `big`, plus 50 projects in `big` itself with a transient failure each. */
const GROUPS = 50;
const PROJECTS_PER_GROUP = 99;
const FLAKY = 50;
const SCALE_PROJECTS = GROUPS * PROJECTS_PER_GROUP + FLAKY;
const INTERVAL_S = 15;
/**
 * A budget the policy needs most of (5,000 requests each 15 s is 20,000 a minute): the pace is then the budget's
 * (60 s / 24,000 = 2.5 ms between projects, reads spread over 12.5 s of the 15 s), not the spread window's 1.5 ms.
 */
const SCALE_BUDGET = 24_000;
const CONCURRENCY = 8;
const DISCOVERY_INTERVAL = '1m';
const POLLS = 10;
/** Safety net: the daemon is stopped here whatever number of polls it made. */
const POLLS_DEADLINE_MS = (POLLS + 3) * INTERVAL_S * 1000;
const RSS_TARGET_MB = 150;

// ---------------------------------------------------------------------------------------------------------------

/** One row of run.ts's summary table (its section number is added there). */
export interface ScaleRow {
  figure: string;
  forgewarden: string;
  peers: string;
  ratio: string;
  floor: string;
}

export interface ScaleResult {
  rows: ScaleRow[];
  notes: string[];
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const n = (value: number) => value.toLocaleString('en');
const s = (msValue: number) => `${(msValue / 1000).toFixed(1)} s`;

function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** CPU time (user + system) of a process so far, ms; clock ticks of 10 ms, as Linux counts them. */
function cpuOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// the world and the policy file

function worldText(): string {
  const flaky = Array.from({ length: FLAKY }, (_, i) => ({
    path: `flaky-${String(i + 1).padStart(2, '0')}`,
    namespace: 'big',
    pipelines: [{ created_at: 'now-10m', jobs: [{ name: 'test-1', stage: 'test', status: 'failed', failure_reason: 'script_failure', log: 'Running tests\nERROR: connection reset by peer\n' }] }],
  }));
  // JSON is YAML.
  return JSON.stringify({
    users: [{ username: 'root', admin: true, tokens: [TOKEN] }],
    groups: [{ path: 'big', members: [{ user: 'root', access_level: 'owner' }] }],
    projects: flaky,
    generate: { parent: 'big', groups: GROUPS, projects_per_group: PROJECTS_PER_GROUP, path_prefix: 'team' },
  });
}

function policyText(url: string, prefix: string, httpPort: number): string {
  return [
    'version: 1',
    `gitlab: { url: "${url}", token: "\${GITLAB_TOKEN}", concurrency: ${CONCURRENCY}, max_requests_per_minute: ${SCALE_BUDGET} }`,
    `redis: { prefix: ${prefix} }`,
    'dry_run: true',
    `http: { port: ${httpPort} }`,
    `discovery_interval: ${DISCOVERY_INTERVAL}`,
    'shutdown_timeout: 10s',
    'policies:',
    '  - name: scale',
    '    type: job_retry',
    '    projects: ["big/**"]',
    `    interval: ${INTERVAL_S}s`,
    '    match: { job_names: ["^test"], failure_log: ["(?i)connection reset"] }',
    '',
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------------------------
// the sandbox, in its own process

type Kind = 'discovery' | 'listing' | 'failures' | 'other';

function kindOf(request: LoggedRequest): Kind {
  if (request.path.startsWith('/api/v4/groups/')) return 'discovery';
  if (/^\/api\/v4\/projects\/[^/]+\/jobs$/.test(request.path)) return 'listing';
  if (/^\/api\/v4\/projects\/[^/]+\/(pipelines\/\d+\/jobs|jobs\/\d+\/trace)$/.test(request.path)) return 'failures';
  return 'other'; // GET /user (the forge check), GET /version
}

function countKinds(requests: readonly LoggedRequest[]): Record<Kind, number> {
  const counts: Record<Kind, number> = { discovery: 0, listing: 0, failures: 0, other: 0 };
  for (const request of requests) counts[kindOf(request)]++;
  return counts;
}

/** Requests per window of `windowMs` aligned to the epoch (as the budget's windows are), from `from` to `to`. */
function perWindow(times: readonly number[], windowMs: number, from: number, to: number): number[] {
  const first = Math.floor(from / windowMs);
  const last = Math.floor(to / windowMs);
  const counts = new Array<number>(last - first + 1).fill(0);
  for (const time of times) {
    const index = Math.floor(time / windowMs) - first;
    if (index >= 0 && index < counts.length) counts[index]++;
  }
  return counts;
}

// ---------------------------------------------------------------------------------------------------------------
// the daemon

interface Poll {
  endedAt: number;
  /** CPU time the daemon used since the poll before (since it started, for the first). */
  cpuMs: number;
  rss: number;
  heapUsed: number;
  apiRequests: number;
  /** After a full collection (gc-probe), for the polls where one is asked for. */
  collected?: { rss: number; heapUsed: number };
}

/** The daemon's memory after a full collection, as bench/gc-probe.ts says it on stderr. */
interface Collected {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
}

/**
 * The polls after which the daemon is made to collect its garbage, to see its live heap: the last one only. A
 * collection earlier changes the figures after it: V8's first full collection sets how far the heap may grow before
 * the next, and until then it lets the old generation grow to some 100 MB. FORGEWARDEN_SCALE_GC=all asks for one
 * after every poll, to see the live heap poll by poll (the RSS figures are then not the daemon's own).
 */
function collectAfter(poll: number): boolean {
  return process.env.FORGEWARDEN_SCALE_GC === 'all' || poll === POLLS;
}

/**
 * Node flags for the daemon: those it is deployed with (DAEMON_NODE_FLAGS), or FORGEWARDEN_SCALE_NODE_FLAGS to try
 * others (an empty value: Node's defaults).
 */
function daemonFlags(): string[] {
  const flags = process.env.FORGEWARDEN_SCALE_NODE_FLAGS;
  return flags === undefined ? [...DAEMON_NODE_FLAGS] : flags.split(/\s+/).filter(Boolean);
}

interface DaemonRun {
  readyMs: number;
  ready: { rss: number };
  polls: Poll[];
  peakRss: number;
  warnings: string[];
  failures: string[];
  code: number | null;
}

async function runDaemon(configFile: string, httpPort: number, log: (line?: string) => void): Promise<DaemonRun> {
  const started = performance.now();
  const probe = join(__dirname, 'gc-probe.js');
  const child = spawn(process.execPath, [...daemonFlags(), '--expose-gc', '--require', probe, MAIN, 'run', '-c', configFile], {
    cwd: ROOT,
    env: { ...process.env, GITLAB_TOKEN: TOKEN, LOG_FORMAT: 'json', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pid = child.pid ?? -1;
  const metricsUrl = `http://127.0.0.1:${httpPort}/metrics`;
  const polls: Poll[] = [];
  const warnings: string[] = [];
  const failures: string[] = [];
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const waitingForGc: Array<(value: Collected) => void> = [];
  lines(child.stderr as NodeJS.ReadableStream, (line) => {
    const found = /^forgewarden-bench-gc=(.*)$/.exec(line);
    if (found) waitingForGc.shift()?.(JSON.parse(found[1]) as Collected);
  });
  const collect = (): Promise<Collected | undefined> =>
    new Promise((resolveCollected) => {
      const timer = setTimeout(() => resolveCollected(undefined), 60_000);
      waitingForGc.push((value) => {
        clearTimeout(timer);
        resolveCollected(value);
      });
      child.kill('SIGUSR2');
    });
  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, memoryOf(pid).peak || 0)), 1000);
  const pending: Array<Promise<void>> = [];
  let lastCpu = NaN;
  let startedAt: { ms: number; rss: number } | undefined;
  let allDone: () => void = () => undefined;
  const done = new Promise<void>((resolveDone) => (allDone = resolveDone));
  lines(child.stdout as NodeJS.ReadableStream, (line) => {
    let entry: { level?: string; message?: string };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      return;
    }
    const message = entry.message ?? '';
    if (entry.level === 'warn' || entry.level === 'error') warnings.push(message);
    if (message.startsWith('started with') && startedAt === undefined) {
      startedAt = { ms: performance.now() - started, rss: memoryOf(pid).rss };
      lastCpu = cpuOf(pid);
    }
    if (message.startsWith('scale: pass failed')) failures.push(message);
    if (!message.startsWith('scale: pass done')) return;
    // RSS at once, before the daemon does anything else; the heap from its own /metrics right after.
    const endedAt = Date.now();
    const { rss } = memoryOf(pid);
    const cpu = cpuOf(pid);
    const poll: Poll = { endedAt, cpuMs: cpu - lastCpu, rss, heapUsed: NaN, apiRequests: NaN };
    lastCpu = cpu;
    polls.push(poll);
    log(`  poll ${polls.length} done at ${s(performance.now() - started)}: RSS ${mb(rss)}, CPU ${s(poll.cpuMs)} since the last`);
    const index = polls.length;
    const measured = get(metricsUrl).then(async (text) => {
      if (text !== undefined) {
        poll.heapUsed = metric(text, 'nodejs_heap_size_used_bytes');
        poll.apiRequests = metric(text, 'forgewarden_api_requests_total');
      }
      if (!collectAfter(index)) return;
      const collected = await collect();
      if (!collected) return;
      poll.collected = { rss: collected.rss, heapUsed: collected.heapUsed };
      log(`    after a full collection: RSS ${mb(collected.rss)}, heap used ${mb(collected.heapUsed)} of ${mb(collected.heapTotal)}, external ${mb(collected.external)}`);
    });
    pending.push(measured);
    if (polls.length >= POLLS) void measured.then(allDone);
  });
  child.once('exit', () => allDone());

  let deadline: NodeJS.Timeout | undefined;
  try {
    // Started: the line the daemon logs once its schedules are in place and its workers take jobs, just before the
    // first pass (queued at that moment) makes its first request. Its RSS is read as the line arrives.
    const startBy = performance.now() + 30_000;
    while (startedAt === undefined) {
      if (child.exitCode !== null) throw new Error(`the daemon exited with ${child.exitCode}: ${stderr.trim()}`);
      if (performance.now() > startBy) throw new Error(`the daemon had not started after 30 s: ${stderr.trim()}`);
      await sleep(20);
    }
    const readyMs = startedAt.ms;
    const ready = { rss: startedAt.rss };
    log(`  daemon started after ${s(readyMs)}: RSS ${mb(ready.rss)}`);

    await Promise.race([done, new Promise<void>((resolveLate) => (deadline = setTimeout(resolveLate, POLLS_DEADLINE_MS)))]);
    await Promise.all(pending);
    peakRss = Math.max(peakRss, memoryOf(pid).peak || 0);
    const stopping = performance.now();
    child.kill('SIGTERM');
    const code = await waitForExit(child, 15_000);
    log(`  daemon stopped in ${s(performance.now() - stopping)} (exit code ${code})`);
    return { readyMs, ready, polls, peakRss, warnings, failures, code };
  } finally {
    clearTimeout(deadline);
    clearInterval(sampler);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

/** `once`: the same pass without the pace (as `plan`, `once` and cron passes run), its requests as the sandbox saw them. */
function runOnce(configFile: string): Promise<CommandRun> {
  return runCommand(['once', '-c', configFile, '--policy', 'scale'], { GITLAB_TOKEN: TOKEN }, { timeoutMs: 120_000 });
}

// ---------------------------------------------------------------------------------------------------------------

export async function scaleBench(log: (line?: string) => void): Promise<ScaleResult> {
  const rows: ScaleRow[] = [];
  const notes: string[] = [];
  log(`\n### the daemon over ${n(SCALE_PROJECTS)} projects (job_retry, big/**), interval ${INTERVAL_S} s, budget ${n(SCALE_BUDGET)}/min, concurrency ${CONCURRENCY}, discovery_interval ${DISCOVERY_INTERVAL}`);
  if (!existsSync(MAIN)) {
    notes.push('The scale section was skipped: dist/main.js is missing (run `npm run build`).');
    log('- skipped: dist/main.js is missing (run `npm run build`)');
    return { rows, notes };
  }
  const dir = mkdtempSync(join(tmpdir(), 'forgewarden-scale-'));
  const worldFile = join(dir, 'world.yml');
  writeFileSync(worldFile, worldText());
  const run = benchPrefix('scale');
  const prefixes = [`${run}-daemon`, `${run}-once`];
  let sandbox: Sandbox | undefined;
  try {
    sandbox = await startSandbox(worldFile);
    log(`- sandbox: ${n(SCALE_PROJECTS)} projects (${GROUPS} groups of ${PROJECTS_PER_GROUP} under big, ${FLAKY} in big itself with a failed job each), up in ${s(sandbox.startMs)}`);
    // The paced daemon.
    const httpPort = await freePort();
    const daemonConfig = join(dir, 'daemon.yml');
    writeFileSync(daemonConfig, policyText(sandbox.url, prefixes[0], httpPort));
    await clearRequestLog(sandbox);
    const daemon = await runDaemon(daemonConfig, httpPort, log);
    const paced = await requestLog(sandbox);

    // The same pass unpaced, on a Redis prefix of its own (so it discovers again and has the budget to itself).
    await clearRequestLog(sandbox);
    const onceConfig = join(dir, 'once.yml');
    writeFileSync(onceConfig, policyText(sandbox.url, prefixes[1], 0));
    const once = await runOnce(onceConfig);
    const unpaced = await requestLog(sandbox);
    if (once.code !== 0) notes.push(`\`once\` over ${n(SCALE_PROJECTS)} projects exited with ${once.code}: ${once.stderr.trim().split('\n').slice(-2).join(' / ')}`);

    report(daemon, paced, once, unpaced, log, rows, notes);
  } finally {
    if (sandbox) {
      sandbox.child.kill('SIGTERM');
      await waitForExit(sandbox.child, 10_000);
    }
    await Promise.all(prefixes.map((prefix) => dropKeys(prefix)));
    rmSync(dir, { recursive: true, force: true });
  }
  return { rows, notes };
}

function report(
  daemon: DaemonRun,
  paced: readonly LoggedRequest[],
  once: { wallMs: number; peakRss: number },
  unpaced: readonly LoggedRequest[],
  log: (line?: string) => void,
  rows: ScaleRow[],
  notes: string[],
): void {
  const { polls } = daemon;
  if (polls.length < POLLS) notes.push(`The scale section saw ${polls.length} of ${POLLS} polls within ${s(POLLS_DEADLINE_MS)}.`);
  for (const failure of daemon.failures) notes.push(`scale: ${failure}`);

  // Each request belongs to the first poll that ended after it (the next pass starts at the next tick, later).
  const timed = paced.map((request) => ({ request, at: Date.parse(request.time) })).sort((a, b) => a.at - b.at);
  const byPoll = polls.map(() => [] as Array<{ request: LoggedRequest; at: number }>);
  let poll = 0;
  for (const entry of timed) {
    while (poll < polls.length && entry.at > polls[poll].endedAt) poll++;
    if (poll < polls.length) byPoll[poll].push(entry);
  }

  log('');
  log('| poll | reads from → to (s after the first) | discovery | listing | failure reads | other (GET /user) | daemon CPU | RSS after | heap used after | after a full collection: RSS, heap used |');
  log('|---|---|---|---|---|---|---|---|---|---|');
  const origin = timed[0]?.at ?? 0;
  const perPoll = byPoll.map((entries, i) => {
    const counts = countKinds(entries.map((e) => e.request));
    const reads = entries.filter((e) => kindOf(e.request) === 'listing');
    const from = reads[0]?.at ?? NaN;
    const to = reads.at(-1)?.at ?? NaN;
    log(`| ${i + 1} | ${((from - origin) / 1000).toFixed(1)} → ${((to - origin) / 1000).toFixed(1)} (${s(to - from)}) | ${counts.discovery} | ${n(counts.listing)} | ${counts.failures} | ${counts.other} | ${s(polls[i].cpuMs)} | ${mb(polls[i].rss)} | ${mb(polls[i].heapUsed)} | ${polls[i].collected ? `${mb(polls[i].collected.rss)}, ${mb(polls[i].collected.heapUsed)}` : ''} |`);
    return { counts, spreadMs: to - from };
  });

  // Memory.
  const toMb = (v: number) => (v / 1024 / 1024).toFixed(0);
  const rssAfter = polls.map((p) => p.rss);
  const heapAfter = polls.map((p) => p.heapUsed);
  const target = RSS_TARGET_MB * 1024 * 1024;
  const above = rssAfter.filter((v) => v > target).length;
  const lastPoll = polls.at(-1);
  const live = lastPoll?.collected;
  const cpu = median(polls.slice(1).map((p) => p.cpuMs));
  log('');
  log(`- RSS: ${mb(daemon.ready.rss)} when started (${s(daemon.readyMs)} after the spawn, before the first request); after the polls ${rssAfter.map(toMb).join(', ')} MB; peak (VmHWM) ${mb(daemon.peakRss)}; target ≤ ${RSS_TARGET_MB} MB: ${daemon.ready.rss > target ? 'above it when started, ' : ''}${above} of ${polls.length} polls above it`);
  log(`- V8 heap used after the polls (not collected: garbage included) ${heapAfter.map(toMb).join(', ')} MB; live heap after poll ${polls.length} (full collection): ${live ? `${mb(live.heapUsed)}, RSS then ${mb(live.rss)}` : 'n/a'}`);
  log(`- daemon CPU per poll: ${s(cpu)} (median of polls 2–${polls.length}), ${((100 * cpu) / (INTERVAL_S * 1000)).toFixed(0)}% of one core over the ${INTERVAL_S} s interval`);
  const flags = daemonFlags();
  notes.push(
    flags.length ? `The scale daemon ran with \`${flags.join(' ')}\`${process.env.FORGEWARDEN_SCALE_NODE_FLAGS === undefined ? ', as deploy/forgewarden.service and `npm start` run it' : ' (FORGEWARDEN_SCALE_NODE_FLAGS)'}.` : "The scale daemon ran with Node's default flags (FORGEWARDEN_SCALE_NODE_FLAGS empty).",
  );
  if (process.env.FORGEWARDEN_SCALE_GC === 'all') notes.push('The scale daemon was made to collect its garbage after every poll (FORGEWARDEN_SCALE_GC=all): its RSS figures are not those of a daemon left alone.');

  // Requests per poll.
  const steady = perPoll.slice(1);
  const listing = median(steady.map((p) => p.counts.listing));
  const failures = median(steady.map((p) => p.counts.failures));
  const discoveryTotal = perPoll.reduce((a, p) => a + p.counts.discovery, 0);
  const discoveryPolls = perPoll.filter((p) => p.counts.discovery > 0).length;
  const runMs = polls.length ? polls[polls.length - 1].endedAt - origin : NaN;
  const discoveryPerPoll = discoveryTotal / Math.max(1, perPoll.length);
  const firstPoll = perPoll[0]?.counts;
  log(`- requests per poll: ${n(listing)} listings (${(listing / SCALE_PROJECTS).toFixed(2)} per project) + ${failures} reads for the ${FLAKY} failed jobs (pipeline jobs and log tail) ; discovery ${discoveryTotal} requests in ${discoveryPolls} of ${perPoll.length} polls (every ${DISCOVERY_INTERVAL}: ≈ ${discoveryPerPoll.toFixed(1)} a poll); first poll ${firstPoll ? n(firstPoll.discovery + firstPoll.listing + firstPoll.failures + firstPoll.other) : 'n/a'} in all`);
  log(`- reads spread over ${s(median(steady.map((p) => p.spreadMs)))} of each ${INTERVAL_S} s interval (median; the pace: ${n(SCALE_PROJECTS)} projects at 60 s / ${n(SCALE_BUDGET)} = ${(60_000 / SCALE_BUDGET).toFixed(1)} ms apart = ${s(((SCALE_PROJECTS - 1) * 60_000) / SCALE_BUDGET)})`);

  // Spread against the budget: 10 s windows and the budget's own minute windows, between the first and last request.
  const times = timed.map((e) => e.at);
  const last = polls.length ? polls[polls.length - 1].endedAt : (times.at(-1) ?? 0);
  const tens = perWindow(times, 10_000, origin, last).slice(1, -1); // whole windows only
  const minutes = perWindow(times, 60_000, origin, last);
  const wholeMinutes = minutes.slice(1, -1);
  const seconds = perWindow(times, 1000, origin, last);
  const perTen = SCALE_BUDGET / 6;
  log(`- per 10 s window: max ${n(Math.max(...tens))}, median ${n(Math.round(median(tens)))} (the budget's rate: ${n(perTen)} per 10 s)`);
  log(`- per budget minute (epoch-aligned, as the limiter counts): ${minutes.map(n).join(', ')} (first and last partial); budget ${n(SCALE_BUDGET)}`);
  log(`- peak per second, paced: ${n(Math.max(...seconds))} (budget's rate ${n(SCALE_BUDGET / 60)}/s)`);

  // Unpaced: once.
  const onceTimes = unpaced.map((r) => Date.parse(r.time)).sort((a, b) => a - b);
  const onceSeconds = onceTimes.length ? perWindow(onceTimes, 1000, onceTimes[0], onceTimes[onceTimes.length - 1]) : [];
  const onceCounts = countKinds(unpaced);
  const onceSpan = onceTimes.length ? onceTimes[onceTimes.length - 1] - onceTimes[0] : NaN;
  log(`- unpaced (\`once\`, same pass, fresh Redis prefix): ${n(unpaced.length)} requests (${onceCounts.discovery} discovery, ${n(onceCounts.listing)} listings, ${onceCounts.failures} failure reads) in ${s(onceSpan)}; peak ${n(Math.max(0, ...onceSeconds))}/s; whole process ${s(once.wallMs)}, max RSS ${mb(once.peakRss)}`);
  void runMs;

  rows.push({
    figure: `daemon RSS, job_retry over ${n(SCALE_PROJECTS)} projects (\`big/**\`), ${polls.length} polls`,
    forgewarden: `${mb(daemon.ready.rss)} when started; after each poll ${rssAfter.map(toMb).join(' · ')} MB (peak ${mb(daemon.peakRss)}); live heap after poll ${polls.length} ${live ? mb(live.heapUsed) : 'n/a'}`,
    peers: '',
    ratio: `${above} of ${polls.length} polls above ${RSS_TARGET_MB} MB`,
    floor: `≤ ${RSS_TARGET_MB} MB, flat`,
  });
  rows.push({
    figure: `daemon CPU per poll, ${n(SCALE_PROJECTS)} projects`,
    forgewarden: `${s(cpu)} (${((100 * cpu) / (INTERVAL_S * 1000)).toFixed(0)}% of one core over the ${INTERVAL_S} s interval)`,
    peers: '',
    ratio: '',
    floor: '',
  });
  rows.push({
    figure: `requests per poll, ${n(SCALE_PROJECTS)} projects (${FLAKY} with a failed job), dry run`,
    forgewarden: `${n(listing)} listings (${(listing / SCALE_PROJECTS).toFixed(2)}/project) + ${failures} failure reads; discovery ${discoveryTotal} requests over ${perPoll.length} polls (${DISCOVERY_INTERVAL}: ≈ ${discoveryPerPoll.toFixed(1)}/poll)`,
    peers: '',
    ratio: '',
    floor: `≤ ${n(SCALE_PROJECTS)} + discovery (+ 2 reads a failed job)`,
  });
  rows.push({
    figure: `requests per 10 s / per minute, interval ${INTERVAL_S} s, budget ${n(SCALE_BUDGET)}/min, c=${CONCURRENCY}`,
    forgewarden: `10 s: max ${n(Math.max(...tens))}, median ${n(Math.round(median(tens)))}; whole minutes ${wholeMinutes.map(n).join(', ') || 'none'}; reads spread over ${s(median(steady.map((p) => p.spreadMs)))} of ${INTERVAL_S} s`,
    peers: '',
    ratio: `${((100 * Math.max(...wholeMinutes, 0)) / SCALE_BUDGET).toFixed(0)}% of the budget (busiest minute)`,
    floor: `${n(perTen)} / 10 s, ${n(SCALE_BUDGET)} / min`,
  });
  rows.push({
    figure: `peak requests per second, the same ${n(SCALE_PROJECTS)}-project pass`,
    forgewarden: `paced (daemon) ${n(Math.max(...seconds))}/s`,
    peers: `unpaced (\`once\`) ${n(Math.max(0, ...onceSeconds))}/s, whole pass in ${s(onceSpan)}`,
    ratio: `${(Math.max(0, ...onceSeconds) / Math.max(1, Math.max(...seconds))).toFixed(1)}× burst unpaced`,
    floor: `budget's rate ${n(SCALE_BUDGET / 60)}/s`,
  });
  if (daemon.warnings.length) notes.push(`The scale daemon warned: ${[...new Set(daemon.warnings)].slice(0, 3).join(' / ')}`);
  if (daemon.code !== 0) notes.push(`The scale daemon exited with ${daemon.code} on SIGTERM.`);
}

// Alone: `node dist-bench/bench/scale.js` (npm run bench -- --only scale does the same inside run.ts).
if (require.main === module) {
  scaleBench((line = '') => process.stdout.write(`${line}\n`)).then(
    ({ rows, notes }) => {
      for (const row of rows) process.stdout.write(`| ${[row.figure, row.forgewarden, row.peers, row.ratio, row.floor].join(' | ')} |\n`);
      for (const note of notes) process.stdout.write(`- ${note}\n`);
    },
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
