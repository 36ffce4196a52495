/**
 * The operator console over a full Redis (`npm run bench -- --only console`): the issue asks that the overview and
 * the first audit page answer in under 200 ms with 50 policies and 1,000,000 audit entries appended to the trail.
 *
 * The real daemon (`node dist/main.js run`, as deployed) with 50 dry-run policies (40 job_retry, 5 access_requests at
 * a 24 h interval, 5 registry_cleanup at 03:00) against the sandbox forge, on a Redis prefix of its own (removed
 * afterwards). Once its first passes are behind it, the bench fills Redis as a long-lived deployment would have it:
 * - 1,000,000 audit entries appended with AuditTrail.record's own rule (`XADD key MAXLEN ~ 100000 * field value…`),
 *   10,000 to a pipeline, so the stream ends trimmed as in production (its XLEN is reported);
 * - 20 passes in each policy's pass log (PassLog.record) and a few unsettled targets for most policies.
 * Then each console route is asked 5 times to warm up and 50 times in a row (one keep-alive connection), and every
 * answer is checked (status 200, and what the page must hold). Per route: min, median, p95 and max wall time; the
 * daemon's CPU per request (/proc/PID/stat over the 50); the Redis server's time in XREVRANGE per request (the delta of
 * INFO commandstats, which counts every client of that Redis: its call count says whether another client read too).
 * For the audit routes, the same read (AuditTrail.page) and the same rendering (the console's views) are also timed
 * here, in the bench's process, to tell reading Redis from rendering, and the bounded scan of a filter that matches
 * nothing is timed at several scan limits (AUDIT_SCAN_LIMIT is 10,000; its chunk, SCAN_CHUNK, is 500 a round trip).
 * About a minute, most of it the filling.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import Redis from 'ioredis';
import { Pool } from 'undici';
import { parseConfig } from '../src/config/load';
import type { AppConfig } from '../src/config/schema';
import { AUDIT_PAGE_SIZE, AUDIT_SCAN_LIMIT } from '../src/console/console-reader';
import { auditPage } from '../src/console/views/audit';
import type { PageFrame } from '../src/console/views/layout';
import type { UnsettledTarget } from '../src/engine/policy';
import { type AuditFilter, AuditTrail } from '../src/engine/stores/audit';
import { EngineKeys } from '../src/engine/stores/keys';
import { type PassEntry, PassLog, PASSES_KEPT } from '../src/engine/stores/pass-log';
import { POLICY_TYPES } from '../src/policies';
import {
  benchPrefix,
  benchRedisUrl,
  DAEMON_NODE_FLAGS,
  dropKeys,
  freePort,
  MAIN,
  memoryOf,
  percentile,
  type Sandbox,
  startDaemonWithPasses,
  startSandbox,
  waitForExit,
} from './processes';

// The world's administrator; the sandbox accepts it and no real forge does.
const TOKEN = 'glpat-sandbox-console-admin';
const PROJECTS = 5;
const POLICIES = 50;
const AUDIT_ENTRIES = 1_000_000;
/** AuditTrail.record's rule (AUDIT_MAX_ENTRIES in src/engine/stores/audit.ts, not exported). */
const AUDIT_MAXLEN = 100_000;
const PIPELINE = 10_000;
const WARM_UP = 5;
const REQUESTS = 50;
const TARGET_MS = 200;
/** A text no target holds: the worst case of a filter, a scan to its bound. */
const NO_MATCH = 'no-such-target-zz';
/** Scan limits the bounded scan of a no-match filter is timed at, in this process. */
const SCAN_LIMITS = [5_000, 10_000, 20_000, 40_000];

export interface ConsoleRow {
  figure: string;
  forgewarden: string;
  peers: string;
  ratio: string;
  floor: string;
}

const n = (value: number) => value.toLocaleString('en');
const msText = (value: number) => (Number.isNaN(value) ? 'n/a' : `${value.toFixed(value < 10 ? 1 : 0)} ms`);
const s = (value: number) => `${(value / 1000).toFixed(1)} s`;

function median(values: readonly number[]): number {
  return percentile(values, 0.5);
}

// ---------------------------------------------------------------------------------------------------------------
// the world, the policy file, the entries

type Kind = 'job_retry' | 'access_requests' | 'registry_cleanup';

interface Named {
  readonly name: string;
  readonly kind: Kind;
}

/** 40 job_retry, 5 access_requests, 5 registry_cleanup, interleaved. */
const POLICY_LIST: readonly Named[] = Array.from({ length: POLICIES }, (_, index) => {
  const kind: Kind = index % 10 === 8 ? 'access_requests' : index % 10 === 9 ? 'registry_cleanup' : 'job_retry';
  const stem = kind === 'job_retry' ? 'retry' : kind === 'access_requests' ? 'access' : 'cleanup';
  return { name: `${stem}-${String(index + 1).padStart(2, '0')}`, kind };
});

const project = (index: number) => `acme/svc-${String((index % PROJECTS) + 1).padStart(2, '0')}`;

function worldText(): string {
  const projects = Array.from({ length: PROJECTS }, (_, index) => ({
    path: `svc-${String(index + 1).padStart(2, '0')}`,
    namespace: 'acme',
    pipelines: [{ ref: 'main', jobs: [{ name: 'test-1', stage: 'test', status: 'success', log: 'ok\n' }] }],
  }));
  // JSON is YAML.
  return JSON.stringify({
    users: [{ username: 'root', admin: true, tokens: [TOKEN] }],
    groups: [{ path: 'acme', members: [{ user: 'root', access_level: 'owner' }] }],
    projects,
  });
}

function policyText(url: string, prefix: string, httpPort: number): string {
  const policies = POLICY_LIST.map(({ name, kind }, index) => {
    if (kind === 'job_retry') {
      return [
        `  - name: ${name}`,
        '    type: job_retry',
        `    projects: [${project(index)}, ${project(index + 1)}]`,
        '    interval: 24h',
        '    match: { stages: [test], failure_log: ["(?i)connection reset", "ETIMEDOUT"] }',
      ];
    }
    if (kind === 'access_requests') {
      return [
        `  - name: ${name}`,
        '    type: access_requests',
        '    groups: [acme]',
        '    interval: 24h',
        '    rules:',
        '      - approve: developer',
        '        when: { email_domains: [acme.com] }',
        '    otherwise: leave',
      ];
    }
    return [
      `  - name: ${name}`,
      '    type: registry_cleanup',
      '    groups: [acme]',
      '    schedule: "0 3 * * *"',
      '    name_regex_delete: ".*"',
      '    keep_n: 5',
      '    older_than: 30d',
    ];
  });
  return [
    'version: 1',
    `gitlab: { url: "${url}", token: "\${GITLAB_TOKEN}" }`,
    `redis: { prefix: ${prefix} }`,
    'dry_run: true',
    `http: { host: 127.0.0.1, port: ${httpPort} }`,
    'shutdown_timeout: 5s',
    'policies:',
    ...policies.flat(),
    '',
  ].join('\n');
}

/** A small deterministic generator, so every run appends the same trail. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const OUTCOMES = [
  'would_act',
  'would_act',
  'would_act',
  'would_act',
  'done',
  'done',
  'failed',
  'deferred',
  'gone',
  'duplicate',
];

/** One audit entry's fields, in AuditTrail.record's order, as a policy of that kind records them. */
function auditFields(rand: () => number, time: string): string[] {
  const policy = POLICY_LIST[Math.floor(rand() * POLICIES)];
  const outcome = OUTCOMES[Math.floor(rand() * OUTCOMES.length)];
  const id = 1_000_000 + Math.floor(rand() * 9_000_000);
  let target: string;
  let action: string;
  let reason: string;
  if (policy.kind === 'job_retry') {
    target = `${project(id)} job ${id} (test-${(id % 7) + 1})`;
    action = 'retry';
    reason = `retry 1 of 2: log matched "(?i)connection reset"`;
  } else if (policy.kind === 'access_requests') {
    target = `group acme: user${id % 5000} (user ${id % 5000})`;
    action = 'approve';
    reason = 'rule 1: email domain acme.com';
  } else {
    target = `repository ${project(id)}/app`;
    action = 'bulk_delete';
    reason = 'tags matching ".*" older than 30d, keeping 5';
  }
  const fields = [
    'time',
    time,
    'policy',
    policy.name,
    'target',
    target,
    'action',
    action,
    'reason',
    reason,
    'outcome',
    outcome,
    'dry_run',
    outcome === 'would_act' ? 'true' : 'false',
  ];
  if (outcome === 'failed') fields.push('detail', 'HTTP 502 from the forge: Bad Gateway');
  else if (outcome === 'deferred') fields.push('detail', 'over max_actions_per_run (20): decided again next pass');
  return fields;
}

/** Appends `count` entries with AuditTrail.record's XADD, `PIPELINE` to a round trip; the time it took. */
async function fillAudit(redis: Redis, key: string, count: number, log: (line?: string) => void): Promise<number> {
  const rand = random(20261127);
  const started = performance.now();
  for (let done = 0; done < count;) {
    const batch = redis.pipeline();
    const time = new Date().toISOString();
    const size = Math.min(PIPELINE, count - done);
    for (let i = 0; i < size; i++)
      batch.xadd(key, 'MAXLEN', '~', String(AUDIT_MAXLEN), '*', ...auditFields(rand, time));
    const answers = (await batch.exec()) ?? [];
    const failed = answers.find(([error]) => error);
    if (failed) throw new Error(`XADD failed: ${String(failed[0])}`);
    done += size;
    if (done % 200_000 === 0) log(`  ${n(done)} appended (${s(performance.now() - started)})`);
  }
  return performance.now() - started;
}

/** 20 passes for each policy, newest last written, and a few open targets for most, as a busy deployment has them. */
async function fillPassesAndUnsettled(redis: Redis, config: AppConfig): Promise<number> {
  const passLog = new PassLog(redis, config);
  const keys = EngineKeys.of(config);
  const now = Date.now();
  const rand = random(7);
  let open = 0;
  for (const [index, { name, kind }] of POLICY_LIST.entries()) {
    for (let pass = PASSES_KEPT; pass >= 1; pass--) {
      const failed = rand() < 0.05;
      const entry: PassEntry = {
        started: new Date(now - pass * 3_600_000).toISOString(),
        took_ms: Math.round(200 + rand() * 4_000),
        occasion: 'schedule',
        result: failed ? 'failed' : rand() < 0.1 ? 'partial' : 'ok',
        dry_run: true,
        outcomes: failed
          ? {}
          : {
              skipped: Math.floor(rand() * 40),
              would_act: Math.floor(rand() * 5),
              ...(rand() < 0.2 ? { deferred: 2 } : {}),
            },
        summary:
          kind === 'job_retry'
            ? `2 projects, ${Math.floor(rand() * 30)} failed jobs`
            : kind === 'access_requests'
              ? '1 group, 3 pending requests'
              : '5 repositories, 120 tags',
        ...(failed ? { error: 'HTTP 502 from the forge: Bad Gateway' } : {}),
        replica: 'bench:1',
      };
      await passLog.record(name, entry);
    }
    const targets = index % 5 === 4 ? 0 : 1 + (index % 4);
    if (targets === 0) continue;
    const fields: Record<string, string> = {};
    for (let t = 0; t < targets; t++) {
      const target: UnsettledTarget = {
        key: `${index}:${t}`,
        action: kind === 'job_retry' ? 'retry' : kind === 'access_requests' ? 'approve' : 'bulk_delete',
        target: `${project(index + t)} job ${2_000_000 + index * 10 + t} (test-1)`,
        params: { project: 1 + ((index + t) % PROJECTS), job: 2_000_000 + index * 10 + t },
        outcome: t % 2 ? 'deferred' : 'failed',
        since: new Date(now - (t + 1) * 600_000).toISOString(),
        detail:
          t % 2 ? 'over max_actions_per_run (20): decided again next pass' : 'HTTP 502 from the forge: Bad Gateway',
      };
      fields[target.key] = JSON.stringify(target);
    }
    await redis.hset(keys.unsettled(name), fields);
    open += targets;
  }
  return open;
}

// ---------------------------------------------------------------------------------------------------------------
// the daemon

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

/** `node dist/main.js run`, as deployed, once every interval policy has made its first pass. */
function startDaemon(configFile: string, httpUrl: string): Promise<ChildProcess> {
  const scheduled = POLICY_LIST.filter((policy) => policy.kind !== 'registry_cleanup').map((policy) => policy.name);
  return startDaemonWithPasses(configFile, httpUrl, { GITLAB_TOKEN: TOKEN }, scheduled, 60_000);
}

// ---------------------------------------------------------------------------------------------------------------
// the routes

interface Route {
  readonly label: string;
  readonly path: string;
  /** What is wrong with the answer, or undefined. */
  check(body: string): string | undefined;
  /** The XREVRANGE calls one request makes, to tell whether another client read the same Redis meanwhile. */
  readonly xrevrangeCalls: number;
}

interface RouteRun {
  readonly route: Route;
  readonly times: number[];
  readonly bytes: number;
  readonly cpuPerRequest: number;
  /** XREVRANGE's time in the Redis server per request, µs; NaN when other clients called it too. */
  readonly redisUs: number;
  readonly redisCalls: number;
  readonly note?: string;
}

const count = (text: string, needle: string) => text.split(needle).length - 1;

function routes(policy: string): Route[] {
  const rows = (body: string) => count(body, '<tr data-id="');
  return [
    {
      label: 'overview `/`',
      path: '/',
      xrevrangeCalls: 0,
      check: (body) =>
        count(body, 'data-policy="') === POLICIES
          ? undefined
          : `${count(body, 'data-policy="')} policy rows, not ${POLICIES}`,
    },
    {
      label: 'first audit page `/audit`',
      path: '/audit',
      xrevrangeCalls: 1,
      check: (body) =>
        rows(body) === AUDIT_PAGE_SIZE && body.includes('id="older"')
          ? undefined
          : `${rows(body)} rows${body.includes('id="older"') ? '' : ', no link to older entries'}`,
    },
    {
      label: `audit filtered by policy \`/audit?policy=${policy}\``,
      path: `/audit?policy=${policy}`,
      xrevrangeCalls: NaN, // as many chunks as it takes to find 50 of 1 in 50
      check: (body) =>
        rows(body) === AUDIT_PAGE_SIZE && count(body, `<a href="/policies/${policy}">${policy}</a>`) === AUDIT_PAGE_SIZE
          ? undefined
          : `${rows(body)} rows, ${count(body, `>${policy}</a>`)} of ${policy}`,
    },
    {
      label: `audit, a filter nothing matches \`/audit?q=${NO_MATCH}\``,
      path: `/audit?q=${NO_MATCH}`,
      xrevrangeCalls: NaN, // AUDIT_SCAN_LIMIT / SCAN_CHUNK
      check: (body) => {
        const searched = /Searched (\d+) entries/.exec(body)?.[1];
        return body.includes('id="scan-stopped"') && searched === String(AUDIT_SCAN_LIMIT) && rows(body) === 0
          ? undefined
          : `scan-stopped ${body.includes('id="scan-stopped"')}, searched ${searched}, ${rows(body)} rows`;
      },
    },
    {
      label: `policy page \`/policies/${policy}\``,
      path: `/policies/${policy}`,
      xrevrangeCalls: NaN,
      check: (body) => {
        const passes = count(body.slice(body.indexOf('id="passes"'), body.indexOf('id="unsettled"')), '<tr><td>');
        const recent = rows(body);
        return body.includes(`<h1>${policy} `) &&
          passes === PASSES_KEPT &&
          body.includes('id="unsettled-targets"') &&
          recent === 20
          ? undefined
          : `${passes} passes, ${recent} recent actions, unsettled table ${body.includes('id="unsettled-targets"')}`;
      },
    },
  ];
}

/** `cmdstat_xrevrange` of INFO commandstats: calls and µs so far. */
async function xrevrangeStats(redis: Redis): Promise<{ calls: number; usec: number }> {
  const info = await redis.info('commandstats');
  const found = /^cmdstat_xrevrange:calls=(\d+),usec=(\d+)/m.exec(info);
  return { calls: Number(found?.[1] ?? 0), usec: Number(found?.[2] ?? 0) };
}

async function timeRoute(pool: Pool, route: Route, redis: Redis, pid: number): Promise<RouteRun> {
  const ask = async (): Promise<{ ms: number; body: string }> => {
    const started = performance.now();
    const response = await pool.request({ path: route.path, method: 'GET', headers: { accept: 'text/html' } });
    const body = await response.body.text();
    const ms = performance.now() - started;
    if (response.statusCode !== 200)
      throw new Error(`GET ${route.path} answered ${response.statusCode}: ${body.slice(0, 200)}`);
    const wrong = route.check(body);
    if (wrong) throw new Error(`GET ${route.path}: ${wrong}`);
    return { ms, body };
  };
  for (let i = 0; i < WARM_UP; i++) await ask();
  const times: number[] = [];
  let bytes = 0;
  const before = await xrevrangeStats(redis);
  const cpuBefore = cpuOf(pid);
  for (let i = 0; i < REQUESTS; i++) {
    const { ms, body } = await ask();
    times.push(ms);
    bytes = Buffer.byteLength(body);
  }
  const cpu = (cpuOf(pid) - cpuBefore) / REQUESTS;
  const after = await xrevrangeStats(redis);
  const calls = after.calls - before.calls;
  const expected = route.xrevrangeCalls * REQUESTS;
  // Another client's XREVRANGE (another daemon's console on the same Redis) would be counted too: then it is not ours.
  const ours = Number.isNaN(expected) || calls === expected;
  return {
    route,
    times,
    bytes,
    cpuPerRequest: cpu,
    redisUs: ours ? (after.usec - before.usec) / REQUESTS : NaN,
    redisCalls: calls / REQUESTS,
    ...(ours
      ? {}
      : {
          note: `${calls} XREVRANGE calls during ${route.path}, ${expected} expected: another client read the same Redis`,
        }),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// in this process: reading the audit trail, and rendering it

interface Split {
  readonly label: string;
  /** AuditTrail.page: the round trips, RESP parsing and matching, ms (median). */
  readonly readMs: number;
  /** auditPage(): the page's HTML, ms (median). */
  readonly renderMs: number;
  readonly redisUs: number;
  readonly scanned: number;
}

async function split(
  trail: AuditTrail,
  redis: Redis,
  label: string,
  filter: AuditFilter,
  scanLimit: number,
  names: readonly string[],
): Promise<Split> {
  const frame: PageFrame = { now: new Date(), formToken: 'bench-form-token', cookieSession: false };
  const read = () => trail.page(filter, { limit: AUDIT_PAGE_SIZE, scanLimit });
  for (let i = 0; i < WARM_UP; i++) auditPage(filter, await read(), names, frame);
  const readTimes: number[] = [];
  const renderTimes: number[] = [];
  const before = await xrevrangeStats(redis);
  let scanned = 0;
  const runs = 20;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const page = await read();
    const readAt = performance.now();
    auditPage(filter, page, names, frame);
    renderTimes.push(performance.now() - readAt);
    readTimes.push(readAt - started);
    scanned = page.scanned;
  }
  const after = await xrevrangeStats(redis);
  return {
    label,
    readMs: median(readTimes),
    renderMs: median(renderTimes),
    redisUs: (after.usec - before.usec) / runs,
    scanned,
  };
}

/**
 * The same round trips as a no-match scan of `total` entries (XREVRANGE, 1,000 at a time, newest first), their
 * answers parsed by ioredis and nothing else: what AuditTrail.page adds on top is its own reading and matching.
 */
async function rawScan(redis: Redis, key: string, total: number): Promise<number> {
  const times: number[] = [];
  for (let run = 0; run < WARM_UP + 20; run++) {
    const started = performance.now();
    let end = '+';
    for (let read = 0; read < total;) {
      const rows = await redis.xrevrange(key, end, '-', 'COUNT', Math.min(500, total - read));
      if (rows.length === 0) break;
      read += rows.length;
      end = `(${rows[rows.length - 1]?.[0] ?? ''}`;
    }
    if (run >= WARM_UP) times.push(performance.now() - started);
  }
  return median(times);
}

// ---------------------------------------------------------------------------------------------------------------

export async function consoleBench(log: (line?: string) => void): Promise<{ rows: ConsoleRow[]; notes: string[] }> {
  const rows: ConsoleRow[] = [];
  const notes: string[] = [];
  log(
    `\n### the console: ${POLICIES} policies, ${n(AUDIT_ENTRIES)} audit entries appended (trimmed at ~${n(AUDIT_MAXLEN)})`,
  );
  const load = loadavg()
    .map((value) => value.toFixed(2))
    .join(', ');
  log(`- load average at the start: ${load} (1, 5, 15 min)`);
  if (!existsSync(MAIN)) {
    notes.push('The console section was skipped: dist/main.js is missing (run `npm run build`).');
    log('- skipped: dist/main.js is missing (run `npm run build`)');
    return { rows, notes };
  }
  const dir = mkdtempSync(join(tmpdir(), 'forgewarden-console-'));
  const worldFile = join(dir, 'world.json');
  writeFileSync(worldFile, worldText());
  const prefix = benchPrefix('console');
  const redis = new Redis(benchRedisUrl());
  let sandbox: Sandbox | undefined;
  let daemon: ChildProcess | undefined;
  let pool: Pool | undefined;
  try {
    sandbox = await startSandbox(worldFile);
    const httpPort = await freePort();
    const httpUrl = `http://127.0.0.1:${httpPort}`;
    const configFile = join(dir, 'console.yml');
    const text = policyText(sandbox.url, prefix, httpPort);
    writeFileSync(configFile, text);
    const config = parseConfig(text, configFile, { policyTypes: POLICY_TYPES, env: { GITLAB_TOKEN: TOKEN } });
    const started = performance.now();
    daemon = await startDaemon(configFile, httpUrl);
    const pid = daemon.pid ?? -1;
    log(
      `- daemon up with its first passes behind it in ${s(performance.now() - started)} (${POLICIES} dry-run policies against the sandbox)`,
    );

    const key = EngineKeys.of(config).audit();
    const fillMs = await fillAudit(redis, key, AUDIT_ENTRIES, log);
    const length = await redis.xlen(key);
    const memory = await redis.memory('USAGE', key);
    const open = await fillPassesAndUnsettled(redis, config);
    log(
      `- ${n(AUDIT_ENTRIES)} entries appended in ${s(fillMs)} (${n(Math.round(AUDIT_ENTRIES / (fillMs / 1000)))}/s, ${n(PIPELINE)} to a pipeline); XLEN now ${n(length)}, ${(Number(memory) / 1024 / 1024).toFixed(1)} MB in Redis`,
    );
    log(
      `- ${PASSES_KEPT} passes in each policy's pass log, ${open} unsettled targets over ${POLICY_LIST.filter((_, i) => i % 5 !== 4).length} policies`,
    );

    pool = new Pool(httpUrl, { connections: 1 });
    const policy = POLICY_LIST[0].name;
    const runs: RouteRun[] = [];
    log('');
    log(
      `| route (${REQUESTS} in a row after ${WARM_UP} to warm up) | min | median | p95 | max | page | daemon CPU / request | Redis XREVRANGE / request |`,
    );
    log('|---|---|---|---|---|---|---|---|');
    for (const route of routes(policy)) {
      const run = await timeRoute(pool, route, redis, pid);
      runs.push(run);
      if (run.note) notes.push(`Console: ${run.note}.`);
      const redisText = run.route.xrevrangeCalls === 0 ? '' : `${msText(run.redisUs / 1000)} (${run.redisCalls} calls)`;
      log(
        `| ${route.label} | ${msText(Math.min(...run.times))} | ${msText(median(run.times))} | ${msText(percentile(run.times, 0.95))} | ${msText(Math.max(...run.times))} | ${(run.bytes / 1024).toFixed(1)} KB | ${msText(run.cpuPerRequest)} | ${redisText} |`,
      );
    }
    log(`- daemon RSS after: ${(memoryOf(pid).rss / 1024 / 1024).toFixed(1)} MB`);

    // The same reads and pages in this process: what reading the trail costs, and what rendering it does.
    const trail = new AuditTrail(redis, config);
    const names = POLICY_LIST.map((p) => p.name);
    const splits = [
      await split(trail, redis, 'first page, unfiltered', {}, AUDIT_SCAN_LIMIT, names),
      await split(trail, redis, `policy=${policy}`, { policy }, AUDIT_SCAN_LIMIT, names),
    ];
    for (const limit of SCAN_LIMITS)
      splits.push(await split(trail, redis, `q=${NO_MATCH}, scan limit ${n(limit)}`, { text: NO_MATCH }, limit, names));
    log('');
    log(
      'In this process (the same store and view code), medians of 20: reading the trail (AuditTrail.page: round trips, RESP parsing, matching) and rendering the page (auditPage):',
    );
    log('');
    log(
      '| audit page | entries read | AuditTrail.page | of it, in the Redis server (XREVRANGE) | rendering | together |',
    );
    log('|---|---|---|---|---|---|');
    for (const row of splits)
      log(
        `| ${row.label} | ${n(row.scanned)} | ${msText(row.readMs)} | ${msText(row.redisUs / 1000)} | ${msText(row.renderMs)} | ${msText(row.readMs + row.renderMs)} |`,
      );
    const raw = await rawScan(redis, key, AUDIT_SCAN_LIMIT);
    log('');
    log(
      `- the same ${n(AUDIT_SCAN_LIMIT)} entries as bare XREVRANGE round trips of 500, parsed by ioredis only: ${msText(raw)} (median of 20)`,
    );

    const [overview, first, filtered, noMatch, policyPage] = runs;
    const figures = (run: RouteRun) =>
      `median ${msText(median(run.times))}, p95 ${msText(percentile(run.times, 0.95))}, max ${msText(Math.max(...run.times))}`;
    const verdict = (run: RouteRun) =>
      percentile(run.times, 0.95) < TARGET_MS ? `p95 under ${TARGET_MS} ms` : `p95 **over** ${TARGET_MS} ms`;
    rows.push({
      figure: `console overview \`/\`, ${POLICIES} policies, audit trail of ${n(AUDIT_ENTRIES)} appended (XLEN ${n(length)})`,
      forgewarden: figures(overview),
      peers: '',
      ratio: verdict(overview),
      floor: `< ${TARGET_MS} ms`,
    });
    rows.push({
      figure: 'console first audit page `/audit` (50 entries)',
      forgewarden: figures(first),
      peers: '',
      ratio: verdict(first),
      floor: `< ${TARGET_MS} ms`,
    });
    rows.push({
      figure: 'console audit filtered by policy (1 entry in 50 matches)',
      forgewarden: figures(filtered),
      peers: '',
      ratio: verdict(filtered),
      floor: `< ${TARGET_MS} ms`,
    });
    const scan = splits.find((row) => row.scanned === AUDIT_SCAN_LIMIT && row.label.startsWith('q='));
    rows.push({
      figure: `console audit filter that matches nothing (bounded scan of ${n(AUDIT_SCAN_LIMIT)} entries, says where it stopped)`,
      forgewarden: `${figures(noMatch)}; daemon CPU ${msText(noMatch.cpuPerRequest)}, Redis ${msText(noMatch.redisUs / 1000)} a request`,
      peers: '',
      ratio: verdict(noMatch),
      floor: scan
        ? `in the bench's process: read ${msText(scan.readMs)} (bare XREVRANGE ${msText(raw)}) + render ${msText(scan.renderMs)}`
        : '',
    });
    rows.push({
      figure: 'console policy page `/policies/NAME` (20 passes, recent actions)',
      forgewarden: figures(policyPage),
      peers: '',
      ratio: verdict(policyPage),
      floor: '',
    });
    notes.push(
      `Console: load average ${load} at the start; the real daemon (\`node ${DAEMON_NODE_FLAGS.join(' ')} dist/main.js run\`), ${REQUESTS} requests a route in a row on one keep-alive connection after ${WARM_UP} to warm up; ${n(AUDIT_ENTRIES)} entries appended with \`XADD MAXLEN ~ ${n(AUDIT_MAXLEN)}\` in ${s(fillMs)}, leaving ${n(length)}.`,
    );
  } finally {
    await pool?.close();
    if (daemon) {
      daemon.kill('SIGTERM');
      await waitForExit(daemon, 10_000);
    }
    if (sandbox) {
      sandbox.child.kill('SIGTERM');
      await waitForExit(sandbox.child, 5_000);
    }
    await redis.quit();
    await dropKeys(prefix);
    rmSync(dir, { recursive: true, force: true });
  }
  return { rows, notes };
}

// Alone: `node dist-bench/bench/console.js` (npm run bench -- --only console does the same inside run.ts).
if (require.main === module) {
  consoleBench((line = '') => process.stdout.write(`${line}\n`)).then(
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
