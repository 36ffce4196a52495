import { appendFileSync } from 'node:fs';
import {
  childEnv,
  runCli,
  startCli,
  startSandboxCommand,
  statusOf,
  waitUntil,
  writeTempFile,
  type CliProcess,
} from '../support/cli';
import { freePort } from '../support/redis-server';
import { startSentinelTopology, stopAllTopologies, type SentinelTopology } from '../support/redis-topology';

/**
 * The daemon on a primary, a replica and three sentinels, running job_retry and registry_cleanup against the
 * sandbox while the primary changes under it: once as asked (SENTINEL FAILOVER) and once killed. Every action must
 * happen once and none twice, and work must go on without a restart.
 *
 * With FORGEWARDEN_FAILOVER_TIMINGS=file each failover appends one JSON line of timings there (for the operations
 * guide); the tests never judge time.
 */

const JOB_LOG = 'npm ERR! network read ECONNRESET\nError: connection reset by peer\n';
/** Demo-world jobs that succeeded; each is failed by hand after a failover, so its retry is work done after it. */
const FAILED_AFTER_FIRST = [
  { project: 1, job: 1001 },
  { project: 2, job: 2001 },
];
const FAILED_AFTER_SECOND = [{ project: 1, job: 1003 }];

interface Request {
  readonly method: string;
  readonly path: string;
}

describe('the daemon on Redis behind Sentinel, across failovers', () => {
  let topology: SentinelTopology;
  let sandbox: CliProcess;
  let forge: string;
  let daemon: CliProcess | undefined;
  let httpPort: number;

  beforeAll(async () => {
    // Sentinels that judge a primary down after 3 s, not 1: a loaded test machine stalls for a second now and then,
    // and a failover nobody asked for would change the primary under the test.
    topology = await startSentinelTopology({ downAfterMs: 3_000 });
    ({ process: sandbox, url: forge } = await startSandboxCommand());
    httpPort = await freePort();
  }, 90_000);

  afterAll(async () => {
    await daemon?.stop('SIGTERM');
    await sandbox?.stop();
    await stopAllTopologies();
  }, 60_000);

  function policyFile(options: { masterName?: string; sentinels?: string[] } = {}): string {
    return writeTempFile(
      'policies.yml',
      [
        'version: 1',
        `gitlab: { url: "${forge}", token: glpat-sandbox-admin-token, max_requests_per_minute: 100000 }`,
        'redis:',
        `  sentinels: [${(options.sentinels ?? topology.sentinelAddresses).map((address) => `"${address}"`).join(', ')}]`,
        `  master_name: ${options.masterName ?? topology.masterName}`,
        '  prefix: e2e-sentinel',
        `http: { port: ${httpPort} }`,
        'dry_run: false',
        'policies:',
        '  - name: retry',
        '    type: job_retry',
        '    projects: [acme/api, acme/web]',
        '    interval: 2s',
        '    lookback: 2d',
        '    match: { stages: [test, build], failure_log: ["(?i)connection reset", "ETIMEDOUT", "(?i)no space left on device"] }',
        '    max_retries: 2',
        '  - name: cleanup',
        '    type: registry_cleanup',
        '    schedule: "* * * * *"',
        '    groups: [acme]',
        '    name_regex_delete: ".*"',
        '    keep_n: 3',
        '    older_than: 14d',
        '',
      ].join('\n'),
    );
  }

  async function requests(method: string): Promise<Request[]> {
    return (await (await fetch(`${forge}/__sandbox/requests?method=${method}`)).json()) as Request[];
  }

  const retries = async () =>
    (await requests('POST')).map((request) => request.path).filter((path) => path.endsWith('/retry'));
  const bulkDeletions = async () =>
    (await requests('DELETE'))
      .map((request) => request.path)
      .filter((path) => /\/registry\/repositories\/\d+\/tags$/.test(path));

  async function metric(name: string): Promise<number> {
    try {
      const text = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
      return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
    } catch {
      return Number.NaN;
    }
  }

  async function failJobs(jobs: ReadonlyArray<{ job: number }>): Promise<void> {
    for (const { job } of jobs) {
      const response = await fetch(`${forge}/__sandbox/jobs/${job}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ status: 'failed', log: JOB_LOG, failure_reason: 'script_failure' }),
      });
      expect(response.status).toBe(200);
    }
  }

  /** Holds the daemon's next retry at the forge's door: a failover made then falls in the middle of a pass. */
  async function holdNextRetry(): Promise<string> {
    const response = await fetch(`${forge}/__sandbox/holds`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ method: 'POST', path: '/retry$', agent: 'forgewarden', times: 1 }),
    });
    return ((await response.json()) as { id: string }).id;
  }

  async function holdReached(id: string): Promise<boolean> {
    return (
      ((await (await fetch(`${forge}/__sandbox/holds/${id}`)).json()) as { waiting: number; held: number }).held > 0
    );
  }

  /**
   * Watches the daemon from the moment the primary goes (every 100 ms): for how long /readyz was not 200, and when it
   * was 200 again with the daemon on the new primary (it counted the failover).
   */
  function watchRecovery(
    startedAt: number,
    failoversBefore: number,
  ): { stop(): Promise<{ readyMs: number; notReadyMs: number }> } {
    let readyMs = -1;
    let notReadyMs = 0;
    let last = startedAt;
    let watching = true;
    const loop = (async () => {
      // Bounded, so a test that failed before stop() leaves nothing polling.
      while (watching && Date.now() < startedAt + 180_000) {
        const ready = (await statusOf(`http://127.0.0.1:${httpPort}/readyz`)) === 200;
        const now = Date.now();
        if (!ready) notReadyMs += now - last;
        else if (readyMs < 0 && (await metric('forgewarden_redis_failovers_total')) > failoversBefore)
          readyMs = Date.now() - startedAt;
        last = now;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    return {
      stop: async () => {
        try {
          await waitUntil('the daemon is ready on the new primary', () => readyMs >= 0, 60_000);
        } catch (error) {
          throw new Error(`${String(error)}; ${await diagnosis()}`);
        } finally {
          watching = false;
          await loop;
        }
        return { readyMs, notReadyMs };
      },
    };
  }

  /** What the daemon says of itself, for a failure's message: /readyz, the failovers it counted, its last log lines. */
  async function diagnosis(): Promise<string> {
    const readyz = await fetch(`http://127.0.0.1:${httpPort}/readyz`).then((response) => response.text(), String);
    const log = `${daemon?.stdout ?? ''}${daemon?.stderr ?? ''}`.split('\n').slice(-40).join('\n');
    return `/readyz: ${readyz}; failovers counted: ${await metric('forgewarden_redis_failovers_total')}; the daemon's last lines:\n${log}`;
  }

  /** When the first retry of `jobs` reached the forge, once all of them did. */
  async function retriedAt(startedAt: number, jobs: ReadonlyArray<{ project: number; job: number }>): Promise<number> {
    let firstRetryMs = -1;
    const wanted = jobs.map(({ project, job }) => `/api/v4/projects/${project}/jobs/${job}/retry`);
    try {
      await waitUntil(
        'the jobs failed after the failover are retried',
        async () => {
          const done = await retries();
          if (firstRetryMs < 0 && wanted.some((path) => done.includes(path))) firstRetryMs = Date.now() - startedAt;
          return wanted.every((path) => done.includes(path));
        },
        90_000,
      );
    } catch (error) {
      throw new Error(`${String(error)}; ${await diagnosis()}`);
    }
    return firstRetryMs;
  }

  function record(kind: string, timings: object, expected: number, done: number, duplicated: number): void {
    const file = process.env.FORGEWARDEN_FAILOVER_TIMINGS;
    if (file) appendFileSync(file, `${JSON.stringify({ kind, ...timings, expected, done, duplicated })}\n`);
  }

  function duplicatesOf(paths: readonly string[]): string[] {
    return paths.filter((path, index) => paths.indexOf(path) !== index);
  }

  it('doctor and plan find the primary through the sentinels; a master name they do not know, or no sentinel, is one line and exit 1', async () => {
    const where = `${topology.masterName} via sentinels ${topology.sentinelAddresses.join(',')}`;
    const doctor = await runCli(['doctor', '-c', policyFile()], childEnv());
    expect(doctor.stdout).toContain(`✓ Redis at ${where}: answers and accepts writes\n`);
    expect(doctor.stdout).toContain(
      '✓ Redis replicas: 1 connected; a claim waits for 1 before its action is sent (redis.min_replicas_acked)\n',
    );

    const plan = await runCli(['plan', '-c', policyFile({ masterName: 'no-such-primary' })], childEnv());
    expect(plan.code).toBe(1);
    expect(plan.stderr).toBe(
      `forgewarden plan: cannot reach Redis at no-such-primary via sentinels ${topology.sentinelAddresses.join(',')} (redis.sentinels): the sentinels know no primary named "no-such-primary" (redis.master_name)\n`,
    );

    const nobody = `127.0.0.1:${await freePort()}`;
    const unanswered = await runCli(['plan', '-c', policyFile({ sentinels: [nobody] })], childEnv());
    expect([unanswered.code, unanswered.stderr]).toEqual([
      1,
      `forgewarden plan: cannot reach Redis at ${topology.masterName} via sentinels ${nobody} (redis.sentinels): none of the sentinels answered\n`,
    ]);
  }, 60_000);

  it('goes on after SENTINEL FAILOVER in the middle of a pass: ready again by itself, new failures retried, nothing twice', async () => {
    const hold = await holdNextRetry();
    daemon = startCli(['run', '-c', policyFile()], childEnv());
    await waitUntil(
      'the daemon is ready',
      async () => (await statusOf(`http://127.0.0.1:${httpPort}/readyz`)) === 200,
      60_000,
    );
    await waitUntil('a retry of the first pass is held at the forge', () => holdReached(hold), 30_000);

    const oldPrimary = await topology.primaryPort();
    const startedAt = Date.now();
    const recovery = watchRecovery(startedAt, 0);
    const failover = topology.failover();
    await waitUntil(
      'the sentinels name a new primary',
      async () => (await topology.primaryPort()) !== oldPrimary,
      60_000,
    );
    const promotedMs = Date.now() - startedAt;
    // The held retry goes on while the primary changes; its claim was confirmed on the replica now promoted.
    await fetch(`${forge}/__sandbox/holds/${hold}`, { method: 'DELETE' });
    await failJobs(FAILED_AFTER_FIRST);
    const firstRetryMs = await retriedAt(startedAt, FAILED_AFTER_FIRST);
    const { from, to } = await failover;
    expect(to).not.toBe(from);
    const timings = { promotedMs, firstRetryMs, ...(await recovery.stop()) };

    await waitUntil(
      'the daemon counted the failover',
      async () => (await metric('forgewarden_redis_failovers_total')) >= 1,
      30_000,
    );
    const done = await retries();
    expect(duplicatesOf(done)).toEqual([]);
    for (const { project, job } of FAILED_AFTER_FIRST)
      expect(done).toContain(`/api/v4/projects/${project}/jobs/${job}/retry`);
    expect(await statusOf(`http://127.0.0.1:${httpPort}/readyz`)).toBe(200);
    record('sentinel-failover', timings, done.length, done.length, duplicatesOf(done).length);
  }, 180_000);

  it('goes on after the primary is killed: the replica promoted, the killed one back as a replica, nothing twice', async () => {
    if (!daemon) throw new Error('the first test did not start the daemon');
    const before = await retries();
    const hold = await holdNextRetry();
    // A job failed now is retried in the next pass: hold that retry, then kill the primary under it.
    await failJobs(FAILED_AFTER_SECOND);
    await waitUntil('the retry is held at the forge', () => holdReached(hold), 30_000);

    const startedAt = Date.now();
    const recovery = watchRecovery(startedAt, await metric('forgewarden_redis_failovers_total'));
    const { killed } = await topology.killPrimary();
    await fetch(`${forge}/__sandbox/holds/${hold}`, { method: 'DELETE' });
    await topology.waitForPrimaryOtherThan(killed);
    const promotedMs = Date.now() - startedAt;
    const after = [{ project: 1, job: 1010 }];
    await failJobs(after);
    // Without a replica the new primary cannot confirm a claim: actions wait (deferred) until the old one is back.
    await topology.restart(killed);
    const firstRetryMs = await retriedAt(startedAt, [...FAILED_AFTER_SECOND, ...after]);
    const timings = { promotedMs, firstRetryMs, ...(await recovery.stop()) };

    await waitUntil(
      'the daemon counted the second failover',
      async () => (await metric('forgewarden_redis_failovers_total')) >= 2,
      30_000,
    );
    // Registry cleanup ran on its schedule (every minute) across both failovers: one bulk deletion per repository.
    await waitUntil('the cleanup made its bulk deletions', async () => (await bulkDeletions()).length > 0, 90_000);
    const bulk = await bulkDeletions();
    expect(duplicatesOf(bulk)).toEqual([]);

    const done = await retries();
    expect(duplicatesOf(done)).toEqual([]);
    const expected = [...FAILED_AFTER_SECOND, ...after].map(
      ({ project, job }) => `/api/v4/projects/${project}/jobs/${job}/retry`,
    );
    for (const path of expected) expect(done).toContain(path);
    record(
      'sentinel-kill',
      timings,
      done.length - before.length,
      done.length - before.length,
      duplicatesOf(done).length,
    );

    const stopped = await daemon.stop('SIGTERM');
    daemon = undefined;
    expect(stopped.code).toBe(0);
  }, 240_000);
});
