/**
 * The daemon at scale (`npm run bench -- --only scale`, also part of the whole bench): the real daemon
 * (`node dist/main.js run`) against the sandbox forge (`node dist/main.js sandbox`) serving a generated world under one
 * group, first of 5,000 projects, then of 20,000, in the same run. The daemon runs three dry-run policies over
 * `big/**`: job_retry (whose passes are the polls counted), registry_cleanup every 5 minutes (a preview: every project's
 * repositories listed, nothing deleted) and access_requests over the groups. Each world gets ten polls on an otherwise
 * idle machine, then ten with a CPU burner of the bench's own running beside the daemon (one process spinning, so the
 * daemon shares the cores with it as on a busy host). Everything is measured from outside:
 * - RSS of the daemon's process (/proc/PID/status) once it has started and after each poll, idle and loaded, with the
 *   V8 heap it reports on /metrics and its live heap after the last poll, against 150 MB idle and 200 MB loaded;
 * - the daemon's CPU per poll (/proc/PID/stat), idle and loaded;
 * - the requests of each poll as the sandbox logged them (drained poll by poll), by kind: discovery, job_retry's
 *   listing per project, the failures' reads, registry_cleanup's and access_requests' reads;
 * - for the first world, requests per 10 s and per minute against `gitlab.max_requests_per_minute`, and the peak per
 *   second, paced (the daemon's scheduled passes) and unpaced (`once`).
 * About 10 minutes for 5,000 projects (polls every 15 s) and 21 for 20,000 (every 60 s); FORGEWARDEN_SCALE_POLLS=N
 * takes N polls a phase instead of ten, FORGEWARDEN_SCALE_WORLDS=5000 (or 20000) one world only.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  benchPrefix,
  type CommandRun,
  DAEMON_NODE_FLAGS,
  drainRequestLog,
  dropKeys,
  freePort,
  get,
  lines,
  type LoggedRequest,
  MAIN,
  memoryOf,
  metric,
  requestLog,
  ROOT,
  runCommand,
  type Sandbox,
  sleep,
  startSandbox,
  waitForExit,
  clearRequestLog,
} from './processes';
// The world's administrator; the sandbox accepts it and no real forge does.
const TOKEN = 'glpat-sandbox-scale-admin';

/** A generated world: `groups` groups of 99 projects under `big`, plus `flaky` projects in `big` with a failed job each. */
interface ScaleWorld {
  readonly groups: number;
  readonly flaky: number;
  /** job_retry's and access_requests' interval, s. */
  readonly intervalS: number;
  /**
   * A budget the policies need most of: job_retry's listing each interval and registry_cleanup's each minute. The pace
   * of a scheduled pass is then the budget's, not the spread window's.
   */
  readonly budget: number;
}

const PROJECTS_PER_GROUP = 99;
const WORLDS: readonly ScaleWorld[] = [
  { groups: 50, flaky: 50, intervalS: 15, budget: 30_000 },
  { groups: 200, flaky: 200, intervalS: 60, budget: 48_000 },
];
const projectsOf = (world: ScaleWorld) => world.groups * PROJECTS_PER_GROUP + world.flaky;
const CONCURRENCY = 8;
const DISCOVERY_INTERVAL = '1m';
/** Polls a phase (idle, then loaded). */
const POLLS = Number(process.env.FORGEWARDEN_SCALE_POLLS ?? 10) || 10;
const RSS_TARGET_MB = 150;
const RSS_LOADED_TARGET_MB = 200;

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
const toMb = (v: number) => (v / 1024 / 1024).toFixed(0);

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

/** The load averages as `uptime` shows them. */
const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(', ');

// ---------------------------------------------------------------------------------------------------------------
// the world and the policy file

function worldText(world: ScaleWorld): string {
  const flaky = Array.from({ length: world.flaky }, (_, i) => ({
    path: `flaky-${String(i + 1).padStart(3, '0')}`,
    namespace: 'big',
    pipelines: [
      {
        created_at: 'now-10m',
        jobs: [
          {
            name: 'test-1',
            stage: 'test',
            status: 'failed',
            failure_reason: 'script_failure',
            log: 'Running tests\nERROR: connection reset by peer\n',
          },
        ],
      },
    ],
  }));
  // JSON is YAML.
  return JSON.stringify({
    users: [{ username: 'root', admin: true, tokens: [TOKEN] }],
    groups: [{ path: 'big', members: [{ user: 'root', access_level: 'owner' }] }],
    projects: flaky,
    generate: { parent: 'big', groups: world.groups, projects_per_group: PROJECTS_PER_GROUP, path_prefix: 'team' },
  });
}

function policyText(url: string, prefix: string, httpPort: number, world: ScaleWorld, only?: 'scale'): string {
  const jobRetry = [
    '  - name: scale',
    '    type: job_retry',
    '    projects: ["big/**"]',
    `    interval: ${world.intervalS}s`,
    '    match: { job_names: ["^test"], failure_log: ["(?i)connection reset"] }',
  ];
  const others = [
    '  - name: cleanup',
    '    type: registry_cleanup',
    '    projects: ["big/**"]',
    '    schedule: "*/5 * * * *"',
    '    name_regex_delete: ".*"',
    '    keep_n: 5',
    '    older_than: 30d',
    '  - name: access',
    '    type: access_requests',
    '    groups: ["big/**"]',
    `    interval: ${world.intervalS}s`,
    '    rules: [{ approve: developer, when: { email_domains: [example.com] } }]',
  ];
  return [
    'version: 1',
    `gitlab: { url: "${url}", token: "\${GITLAB_TOKEN}", concurrency: ${CONCURRENCY}, max_requests_per_minute: ${world.budget} }`,
    `redis: { prefix: ${prefix} }`,
    'dry_run: true',
    `http: { port: ${httpPort} }`,
    `discovery_interval: ${DISCOVERY_INTERVAL}`,
    'shutdown_timeout: 10s',
    'policies:',
    ...jobRetry,
    ...(only ? [] : others),
    '',
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------------------------
// the sandbox, in its own process

type Kind = 'discovery' | 'listing' | 'failures' | 'registry' | 'access' | 'other';
const KINDS: readonly Kind[] = ['discovery', 'listing', 'failures', 'registry', 'access', 'other'];

function kindOf(request: LoggedRequest): Kind {
  if (request.path.endsWith('/access_requests')) return 'access';
  if (request.path.startsWith('/api/v4/groups/')) return 'discovery';
  if (/^\/api\/v4\/projects\/[^/]+\/jobs$/.test(request.path)) return 'listing';
  if (/^\/api\/v4\/projects\/[^/]+\/(pipelines\/\d+\/jobs|jobs\/\d+\/trace)$/.test(request.path)) return 'failures';
  if (/\/registry\/repositories/.test(request.path)) return 'registry';
  return 'other'; // GET /user (the forge check), GET /version, a project's own read
}

function countKinds(requests: readonly LoggedRequest[]): Record<Kind, number> {
  const counts = Object.fromEntries(KINDS.map((kind) => [kind, 0])) as Record<Kind, number>;
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
  /** Whether the CPU burner ran through this poll. */
  loaded: boolean;
  /** CPU time the daemon used since the poll before (since it started, for the first). */
  cpuMs: number;
  rss: number;
  heapUsed: number;
  /** The requests the sandbox logged since the poll before, by kind. */
  counts: Record<Kind, number>;
  /** Times of the requests (epoch ms), kept for the first world's windows. */
  times: number[];
  /** Registry requests by project path: how many registry_cleanup passes reached each. */
  registryHits: Map<string, number>;
  /** Each listing's time, for the spread of the poll's reads. */
  listingFrom: number;
  listingTo: number;
  /** Passes of registry_cleanup and access_requests that ended since the poll before. */
  otherPasses: { cleanup: number; access: number };
  /** After a full collection (gc-probe), for the last poll. */
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
  /** VmHWM when the burner started (the idle phase's peak) and at the end. */
  peakIdle: number;
  peakAll: number;
  warnings: string[];
  failures: string[];
  code: number | null;
  loadAtStart: string;
  loadWhenLoaded: string;
}

/** A process of the bench's own that spins on a core for as long as it runs: the "busy host" beside the daemon. */
function startBurner() {
  return spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
}

async function runDaemon(
  configFile: string,
  httpPort: number,
  sandbox: Sandbox,
  world: ScaleWorld,
  log: (line?: string) => void,
): Promise<DaemonRun> {
  const started = performance.now();
  const probe = join(__dirname, 'gc-probe.js');
  const loadAtStart = load();
  const child = spawn(
    process.execPath,
    [...daemonFlags(), '--expose-gc', '--require', probe, MAIN, 'run', '-c', configFile],
    {
      cwd: ROOT,
      env: { ...process.env, GITLAB_TOKEN: TOKEN, LOG_FORMAT: 'json', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
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
  let burner: ReturnType<typeof startBurner> | undefined;
  let peakIdle = 0;
  let loadWhenLoaded = '';
  const pending: Array<Promise<void>> = [];
  let lastCpu = NaN;
  let startedAt: { ms: number; rss: number } | undefined;
  let allDone: () => void = () => undefined;
  const done = new Promise<void>((resolveDone) => (allDone = resolveDone));
  const passes = { cleanup: 0, access: 0 };
  // Drained one poll at a time, in order: a poll's requests are those logged since the drain after the poll before.
  let drained = Promise.resolve();
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
    if (message.startsWith('cleanup: pass done')) passes.cleanup++;
    if (message.startsWith('access: pass done')) passes.access++;
    if (/^(scale|cleanup|access): pass failed/.test(message)) failures.push(message);
    if (!message.startsWith('scale: pass done') || polls.length >= 2 * POLLS) return;
    // RSS at once, before the daemon does anything else; the heap from its own /metrics right after.
    const endedAt = Date.now();
    const { rss } = memoryOf(pid);
    const cpu = cpuOf(pid);
    const poll: Poll = {
      endedAt,
      loaded: burner !== undefined,
      cpuMs: cpu - lastCpu,
      rss,
      heapUsed: NaN,
      counts: countKinds([]),
      times: [],
      registryHits: new Map(),
      listingFrom: NaN,
      listingTo: NaN,
      otherPasses: { ...passes },
    };
    passes.cleanup = 0;
    passes.access = 0;
    lastCpu = cpu;
    polls.push(poll);
    const index = polls.length;
    log(
      `  poll ${index}${poll.loaded ? ' (loaded)' : ''} done at ${s(performance.now() - started)}: RSS ${mb(rss)}, CPU ${s(poll.cpuMs)} since the last`,
    );
    drained = drained.then(async () => {
      const requests = await drainRequestLog(sandbox);
      poll.counts = countKinds(requests);
      poll.times = requests.map((request) => Date.parse(request.time));
      for (const request of requests) {
        const repositories = /^\/api\/v4\/projects\/([^/]+)\/registry\/repositories$/.exec(request.path);
        if (repositories) poll.registryHits.set(repositories[1], (poll.registryHits.get(repositories[1]) ?? 0) + 1);
      }
      const listings = requests
        .filter((request) => kindOf(request) === 'listing')
        .map((request) => Date.parse(request.time));
      poll.listingFrom = Math.min(...listings);
      poll.listingTo = Math.max(...listings);
    });
    const measured = Promise.all([drained, get(metricsUrl)]).then(async ([, text]) => {
      if (text !== undefined) poll.heapUsed = metric(text, 'nodejs_heap_size_used_bytes');
      if (index !== 2 * POLLS) return;
      const collected = await collect();
      if (!collected) return;
      poll.collected = { rss: collected.rss, heapUsed: collected.heapUsed };
      log(
        `    after a full collection: RSS ${mb(collected.rss)}, heap used ${mb(collected.heapUsed)} of ${mb(collected.heapTotal)}, external ${mb(collected.external)}`,
      );
    });
    pending.push(measured);
    if (index === POLLS) {
      // The idle phase is over: its peak, then the burner for the loaded one.
      peakIdle = memoryOf(pid).peak || 0;
      burner = startBurner();
      setTimeout(() => (loadWhenLoaded = load()), (world.intervalS * 1000) / 2).unref();
      log(`  a CPU burner of the bench's own now runs beside the daemon (load ${load()})`);
    }
    if (index >= 2 * POLLS) void measured.then(allDone);
  });
  child.once('exit', () => allDone());

  let deadline: NodeJS.Timeout | undefined;
  try {
    const startBy = performance.now() + 60_000;
    while (startedAt === undefined) {
      if (child.exitCode !== null) throw new Error(`the daemon exited with ${child.exitCode}: ${stderr.trim()}`);
      if (performance.now() > startBy) throw new Error(`the daemon had not started after 60 s: ${stderr.trim()}`);
      await sleep(20);
    }
    const readyMs = startedAt.ms;
    const ready = { rss: startedAt.rss };
    log(`  daemon started after ${s(readyMs)}: RSS ${mb(ready.rss)} (load ${loadAtStart})`);
    const limitMs = (2 * POLLS + 3) * world.intervalS * 1000;
    await Promise.race([done, new Promise<void>((resolveLate) => (deadline = setTimeout(resolveLate, limitMs)))]);
    await Promise.all(pending);
    const peakAll = memoryOf(pid).peak || 0;
    burner?.kill('SIGKILL');
    const stopping = performance.now();
    child.kill('SIGTERM');
    const code = await waitForExit(child, 15_000);
    log(`  daemon stopped in ${s(performance.now() - stopping)} (exit code ${code})`);
    return { readyMs, ready, polls, peakIdle, peakAll, warnings, failures, code, loadAtStart, loadWhenLoaded };
  } finally {
    clearTimeout(deadline);
    burner?.kill('SIGKILL');
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

/** `once`: the same job_retry pass without the pace (as `plan`, `once` and cron passes run), as the sandbox saw it. */
function runOnce(configFile: string): Promise<CommandRun> {
  return runCommand(['once', '-c', configFile, '--policy', 'scale'], { GITLAB_TOKEN: TOKEN }, { timeoutMs: 180_000 });
}

// ---------------------------------------------------------------------------------------------------------------

export async function scaleBench(log: (line?: string) => void): Promise<ScaleResult> {
  const rows: ScaleRow[] = [];
  const notes: string[] = [];
  if (!existsSync(MAIN)) {
    notes.push('The scale section was skipped: dist/main.js is missing (run `npm run build`).');
    log('- skipped: dist/main.js is missing (run `npm run build`)');
    return { rows, notes };
  }
  const chosen = (process.env.FORGEWARDEN_SCALE_WORLDS ?? '')
    .split(',')
    .map(Number)
    .filter((size) => size > 0);
  const worlds = chosen.length > 0 ? WORLDS.filter((world) => chosen.includes(projectsOf(world))) : WORLDS;
  for (const [index, world] of worlds.entries()) await oneWorld(world, index === 0, log, rows, notes);
  const flags = daemonFlags();
  notes.push(
    flags.length
      ? `The scale daemon ran with \`${flags.join(' ')}\`${process.env.FORGEWARDEN_SCALE_NODE_FLAGS === undefined ? ', as deploy/forgewarden.service and `npm start` run it' : ' (FORGEWARDEN_SCALE_NODE_FLAGS)'}.`
      : "The scale daemon ran with Node's default flags (FORGEWARDEN_SCALE_NODE_FLAGS empty).",
  );
  return { rows, notes };
}

async function oneWorld(
  world: ScaleWorld,
  withOnce: boolean,
  log: (line?: string) => void,
  rows: ScaleRow[],
  notes: string[],
): Promise<void> {
  const projects = projectsOf(world);
  log(
    `\n### the daemon over ${n(projects)} projects (job_retry, registry_cleanup preview, access_requests; big/**), interval ${world.intervalS} s, budget ${n(world.budget)}/min, concurrency ${CONCURRENCY}, discovery_interval ${DISCOVERY_INTERVAL}`,
  );
  const dir = mkdtempSync(join(tmpdir(), 'forgewarden-scale-'));
  const worldFile = join(dir, 'world.yml');
  writeFileSync(worldFile, worldText(world));
  const run = benchPrefix(`scale${projects}`);
  const prefixes = [`${run}-daemon`, `${run}-once`];
  let sandbox: Sandbox | undefined;
  try {
    sandbox = await startSandbox(worldFile);
    log(
      `- sandbox: ${n(projects)} projects (${world.groups} groups of ${PROJECTS_PER_GROUP} under big, ${world.flaky} in big itself with a failed job each), up in ${s(sandbox.startMs)}`,
    );
    const httpPort = await freePort();
    const daemonConfig = join(dir, 'daemon.yml');
    writeFileSync(daemonConfig, policyText(sandbox.url, prefixes[0], httpPort, world));
    await clearRequestLog(sandbox);
    const daemon = await runDaemon(daemonConfig, httpPort, sandbox, world, log);
    report(world, daemon, log, rows, notes);
    if (withOnce) {
      // The same job_retry pass unpaced, on a Redis prefix of its own (so it discovers again and has the budget to itself).
      await clearRequestLog(sandbox);
      const onceConfig = join(dir, 'once.yml');
      writeFileSync(onceConfig, policyText(sandbox.url, prefixes[1], 0, world, 'scale'));
      const once = await runOnce(onceConfig);
      const unpaced = await requestLog(sandbox);
      if (once.code !== 0)
        notes.push(
          `\`once\` over ${n(projects)} projects exited with ${once.code}: ${once.stderr.trim().split('\n').slice(-2).join(' / ')}`,
        );
      reportWindows(world, daemon, once, unpaced, log, rows);
    }
  } finally {
    if (sandbox) {
      sandbox.child.kill('SIGTERM');
      await waitForExit(sandbox.child, 10_000);
    }
    await Promise.all(prefixes.map((prefix) => dropKeys(prefix)));
    rmSync(dir, { recursive: true, force: true });
  }
}

function report(
  world: ScaleWorld,
  daemon: DaemonRun,
  log: (line?: string) => void,
  rows: ScaleRow[],
  notes: string[],
): void {
  const projects = projectsOf(world);
  const { polls } = daemon;
  if (polls.length < 2 * POLLS)
    notes.push(`The scale section over ${n(projects)} projects saw ${polls.length} of ${2 * POLLS} polls.`);
  for (const failure of daemon.failures.slice(0, 3)) notes.push(`scale (${n(projects)}): ${failure}`);

  log('');
  log(
    '| poll | burner | listing spread | discovery | listing | failure reads | registry | access | other | cleanup/access passes | daemon CPU | RSS after | heap used after | after a full collection: RSS, heap used |',
  );
  log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  polls.forEach((poll, i) => {
    const c = poll.counts;
    log(
      `| ${i + 1} | ${poll.loaded ? 'yes' : ''} | ${s(poll.listingTo - poll.listingFrom)} | ${c.discovery} | ${n(c.listing)} | ${c.failures} | ${n(c.registry)} | ${c.access} | ${c.other} | ${poll.otherPasses.cleanup}/${poll.otherPasses.access} | ${s(poll.cpuMs)} | ${mb(poll.rss)} | ${mb(poll.heapUsed)} | ${poll.collected ? `${mb(poll.collected.rss)}, ${mb(poll.collected.heapUsed)}` : ''} |`,
    );
  });

  const idle = polls.filter((poll) => !poll.loaded);
  const loaded = polls.filter((poll) => poll.loaded);
  const live = polls.at(-1)?.collected;
  const above = (list: readonly Poll[], targetMb: number) =>
    list.filter((poll) => poll.rss > targetMb * 1024 * 1024).length;
  // The first poll of a daemon discovers and reads every failure once: the steady state is the others.
  const steady = (list: readonly Poll[]) => list.filter((poll) => poll !== polls[0]);
  const cpuIdle = median(steady(idle).map((poll) => poll.cpuMs));
  const cpuLoaded = median(loaded.map((poll) => poll.cpuMs));
  const listing = median(steady(polls).map((poll) => poll.counts.listing));
  const failures = median(steady(polls).map((poll) => poll.counts.failures));
  const discovery = polls.reduce((sum, poll) => sum + poll.counts.discovery, 0);
  const registry = polls.reduce((sum, poll) => sum + poll.counts.registry, 0);
  // Passes that began: the most times any project's repositories were listed (a pass may be under way at the end).
  const hits = new Map<string, number>();
  for (const poll of polls)
    for (const [project, count] of poll.registryHits) hits.set(project, (hits.get(project) ?? 0) + count);
  const cleanupPasses = Math.max(0, ...hits.values());
  const access = polls.reduce((sum, poll) => sum + poll.counts.access, 0);
  const accessPasses = polls.reduce((sum, poll) => sum + poll.otherPasses.access, 0);
  const spread = median(steady(polls).map((poll) => poll.listingTo - poll.listingFrom));
  log('');
  log(
    `- load average (uptime): ${daemon.loadAtStart} when the daemon started; ${daemon.loadWhenLoaded || 'n/a'} with the burner running`,
  );
  log(
    `- RSS idle: ${mb(daemon.ready.rss)} when started; after each poll ${idle.map((poll) => toMb(poll.rss)).join(', ')} MB; peak ${mb(daemon.peakIdle)}; ${above(idle, RSS_TARGET_MB)} of ${idle.length} above ${RSS_TARGET_MB} MB`,
  );
  log(
    `- RSS loaded: after each poll ${loaded.map((poll) => toMb(poll.rss)).join(', ')} MB; peak ${mb(daemon.peakAll)}; ${above(loaded, RSS_LOADED_TARGET_MB)} of ${loaded.length} above ${RSS_LOADED_TARGET_MB} MB; live heap after poll ${polls.length}: ${live ? mb(live.heapUsed) : 'n/a'}`,
  );
  log(
    `- daemon CPU per poll: ${s(cpuIdle)} idle, ${s(cpuLoaded)} loaded (medians; every policy's work between two job_retry polls)`,
  );
  log(
    `- job_retry requests per poll: ${n(listing)} listings (${(listing / projects).toFixed(2)} per project) + ${failures} failure reads; listing spread over ${s(spread)} of ${world.intervalS} s`,
  );
  log(
    `- registry_cleanup: ${n(registry)} requests over ${cleanupPasses} passes begun, ${polls.reduce((sum, poll) => sum + poll.otherPasses.cleanup, 0)} done (${(registry / Math.max(1, cleanupPasses) / projects).toFixed(2)} per project a pass); access_requests: ${n(access)} over ${accessPasses} passes; discovery ${n(discovery)} requests over ${polls.length} polls`,
  );

  const label = `${n(projects)} projects`;
  rows.push({
    figure: `daemon RSS idle, ${label} (job_retry, registry_cleanup preview, access_requests), ${idle.length} polls`,
    forgewarden: `${mb(daemon.ready.rss)} when started; after each poll ${idle.map((poll) => toMb(poll.rss)).join(' · ')} MB (peak ${mb(daemon.peakIdle)})`,
    peers: '',
    ratio: `${above(idle, RSS_TARGET_MB)} of ${idle.length} polls above ${RSS_TARGET_MB} MB`,
    floor: `≤ ${RSS_TARGET_MB} MB, flat`,
  });
  rows.push({
    figure: `daemon RSS loaded (a CPU burner beside it), ${label}, ${loaded.length} polls`,
    forgewarden: `after each poll ${loaded.map((poll) => toMb(poll.rss)).join(' · ')} MB (peak ${mb(daemon.peakAll)}); live heap after the last ${live ? mb(live.heapUsed) : 'n/a'}`,
    peers: '',
    ratio: `${above(loaded, RSS_LOADED_TARGET_MB)} of ${loaded.length} polls above ${RSS_LOADED_TARGET_MB} MB`,
    floor: `≤ ${RSS_LOADED_TARGET_MB} MB, flat`,
  });
  rows.push({
    figure: `daemon CPU per poll, ${label}, interval ${world.intervalS} s`,
    forgewarden: `idle ${s(cpuIdle)} (${((100 * cpuIdle) / (world.intervalS * 1000)).toFixed(0)}% of one core) · loaded ${s(cpuLoaded)}`,
    peers: '',
    ratio: `${(cpuIdle / projects).toFixed(3)} ms a project`,
    floor: '',
  });
  rows.push({
    figure: `requests per poll, ${label} (${world.flaky} with a failed job), dry run`,
    forgewarden: `job_retry ${n(listing)} listings (${(listing / projects).toFixed(2)}/project) + ${failures} failure reads; registry_cleanup ${(registry / Math.max(1, cleanupPasses) / projects).toFixed(2)}/project a pass; access_requests ${Math.round(access / Math.max(1, accessPasses))} a pass; discovery ${n(discovery)} over ${polls.length} polls`,
    peers: '',
    ratio: '',
    floor: `job_retry 1.00/project (+ 2 reads a failed job)`,
  });
  if (daemon.warnings.length)
    notes.push(`The scale daemon (${label}) warned: ${[...new Set(daemon.warnings)].slice(0, 3).join(' / ')}`);
  if (daemon.code !== 0) notes.push(`The scale daemon (${label}) exited with ${daemon.code} on SIGTERM.`);
}

/** The first world's requests against the budget: 10 s and minute windows, the peak second, paced and unpaced. */
function reportWindows(
  world: ScaleWorld,
  daemon: DaemonRun,
  once: { wallMs: number; peakRss: number },
  unpaced: readonly LoggedRequest[],
  log: (line?: string) => void,
  rows: ScaleRow[],
): void {
  const projects = projectsOf(world);
  const times = daemon.polls.flatMap((poll) => poll.times).sort((a, b) => a - b);
  if (times.length === 0) return;
  const origin = times[0];
  const last = times[times.length - 1];
  const tens = perWindow(times, 10_000, origin, last).slice(1, -1);
  const minutes = perWindow(times, 60_000, origin, last).slice(1, -1);
  const seconds = perWindow(times, 1000, origin, last);
  const onceTimes = unpaced.map((r) => Date.parse(r.time)).sort((a, b) => a - b);
  const onceSeconds = onceTimes.length ? perWindow(onceTimes, 1000, onceTimes[0], onceTimes[onceTimes.length - 1]) : [];
  const onceSpan = onceTimes.length ? onceTimes[onceTimes.length - 1] - onceTimes[0] : NaN;
  log(
    `- per 10 s window: max ${n(Math.max(...tens))}, median ${n(Math.round(median(tens)))} (the budget's rate: ${n(world.budget / 6)} per 10 s); whole budget minutes ${minutes.map(n).join(', ')}`,
  );
  log(
    `- peak per second: paced ${n(Math.max(...seconds))}; unpaced (\`once\`, job_retry alone) ${n(Math.max(0, ...onceSeconds))}, ${n(unpaced.length)} requests in ${s(onceSpan)}, process ${s(once.wallMs)}, max RSS ${mb(once.peakRss)}`,
  );
  rows.push({
    figure: `requests per 10 s / per minute, ${n(projects)} projects, three policies, budget ${n(world.budget)}/min, c=${CONCURRENCY}`,
    forgewarden: `10 s: max ${n(Math.max(...tens))}, median ${n(Math.round(median(tens)))}; whole minutes ${minutes.map(n).join(', ') || 'none'}`,
    peers: '',
    ratio: `${((100 * Math.max(...minutes, 0)) / world.budget).toFixed(0)}% of the budget (busiest minute)`,
    floor: `${n(world.budget / 6)} / 10 s, ${n(world.budget)} / min`,
  });
  rows.push({
    figure: `peak requests per second, ${n(projects)} projects`,
    forgewarden: `paced (daemon, three policies) ${n(Math.max(...seconds))}/s`,
    peers: `unpaced (\`once\`, job_retry) ${n(Math.max(0, ...onceSeconds))}/s, whole pass in ${s(onceSpan)}`,
    ratio: '',
    floor: `budget's rate ${n(Math.round(world.budget / 60))}/s`,
  });
}

// Alone: `node dist-bench/bench/scale.js` (npm run bench -- --only scale does the same inside run.ts).
if (require.main === module) {
  scaleBench((line = '') => process.stdout.write(`${line}\n`)).then(
    ({ rows, notes }) => {
      for (const row of rows)
        process.stdout.write(`| ${[row.figure, row.forgewarden, row.peers, row.ratio, row.floor].join(' | ')} |\n`);
      for (const note of notes) process.stdout.write(`- ${note}\n`);
    },
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
