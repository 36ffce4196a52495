import { copyFileSync, existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { startSandbox, type RunningSandbox } from '../../src/sandbox';
import { ADMIN_TOKEN } from '../support/world-builders';
import { startSentinelTopology, type SentinelTopology } from '../support/redis-topology';
import { freePort, isAlive } from '../support/redis-server';
import { compare, converged, type Row } from './compare';
import { Daemon, sleep } from './daemon';
import { faultRules, tokenFaultRules } from './fault-mix';
import { readOutcome, type Outcome, type Seeded } from './outcome';
import { POLICIES, policyFile } from './policy-file';
import { readSettings, seededRuleIds, seedSettings } from './project-settings';
import type { Random } from './random';
import { auditOutcomes, ChaosRedis, describeRedis } from './redis';
import { type Design, OUTAGE } from './world';
import { BACKUP, checkBackups, HUMANS_BACKUP_POLICY, humansRows, humansSummary, Judge, Person } from './humans';
import { writeOnRotateHook } from './on-rotate-hook';

/**
 * One scenario: a fresh forge (the same world every time), a fresh Redis and fresh key folder, the daemons as child
 * processes, the clock moved an hour at a time, and whatever the scenario does to them. It runs until the forge holds
 * the expected outcome or the time limit, then faults stop, a quiet period lets late work land (and late duplicates
 * show), and the forge is compared with the expected outcome.
 */

export interface ScenarioPlan {
  name: string;
  /** Replicas running at once, all on the same Redis. */
  daemons: number;
  /** Inject the fault mix on every API request. */
  faults: boolean;
  /** SIGKILL the first daemon this many times at random points, restarting it each time. */
  killCycles?: number;
  /**
   * Redis outages, one after the other: each starts `delayMs` after the daemons' start or, with `afterHourSteps`,
   * after that many hour steps of the clock (which stands still while Redis is away), and lasts `forMs`. Redis comes
   * back without its data, or with what it held when it went (saved just before).
   */
  redisOutages?: RedisOutage[];
  /**
   * Redis behind Sentinel (a primary, a replica and three sentinels; the daemons' policy file names the sentinels)
   * instead of one server, and these failovers, one after the other. Each starts as an outage does (after
   * `afterHourSteps` hour steps, `delayMs` after the last one or the daemons' start or the end of the failover
   * before), and the clock stands still until the topology has settled again.
   */
  failovers?: FailoverEvent[];
  /** Bound of the active phase (before the quiet period). */
  timeLimitMs: number;
  /** Hour steps of the forge's clock at the most (default 24): a storm's probes and backoffs spend forge hours. */
  maxHourSteps?: number;
  /**
   * A person at work beside the daemon for `forMs` (humans.ts), one change every `gapMs` (random within): the rows then
   * judge the daemon's writes at the moment the forge handles them, and the targets the person left alone.
   */
  humans?: { forMs: number; gapMs: [number, number] };
  /**
   * A runner outage from the start for `downForMs` (the sandbox's runners down: every retry fails at once with the
   * world's ETIMEDOUT signature), job_retry's storm control at the world's scale: the job_retry row then also holds
   * that every job the world's design retries ends in a successful attempt.
   */
  storm?: { downForMs: number };
}

export interface RedisOutage {
  afterHourSteps: number;
  delayMs: number;
  forMs: number;
  data: 'empty' | 'with-data';
}

/**
 * `failover`: SENTINEL FAILOVER, done once the new primary serves and the old one replicates from it (about 10 s:
 * Sentinel waits that long before it demotes the old primary). `kill-primary`: SIGKILL to the primary, then the wait
 * for the sentinels to promote the replica, then the killed server restarted (empty) as the new primary's replica, so
 * a later failover has one to promote.
 */
export interface FailoverEvent {
  afterHourSteps: number;
  delayMs: number;
  kind: 'failover' | 'kill-primary';
}

export interface ScenarioResult {
  rows: Row[];
  outcome: Outcome;
  wallMs: number;
  converged: boolean;
  clockSteps: number;
  daemonStarts: number;
  requests: number;
  notes: string[];
  /** With a person at work: their changes by kind and the rule judges' checks, printed under the humans table. */
  humansLine?: string;
  /** With a Sentinel topology: the failovers made (requested or after a kill), and those that happened unasked. */
  failovers?: { made: number; unrequested: number };
  /**
   * With a Sentinel topology: each daemon's forgewarden_redis_failovers_total and forgewarden_redis_up at the end (null:
   * not read). A daemon whose Redis connection never came back reports up 0.
   */
  redisMetrics?: Record<string, { failovers: number | null; up: number | null }>;
}

export interface ScenarioContext {
  design: Design;
  mainJs: string;
  runDir: string;
  random: Random;
  log: (line: string) => void;
}

/**
 * The clock moves once a second: an hour and a minute every fourth time (past the forge's hour between bulk deletions
 * and past the keys' one-hour grace), a minute and a second otherwise (so the registry policy's every-minute schedule
 * fires between the hours too, and a pass that a fault broke is tried again within the same hour).
 *
 * A step is a jump of the daemons' wall clock. Their client measures its retry deadline (120 s) on monotonic time, so
 * a request waiting to retry across a step carries on, as it would across an NTP step in production.
 */
const TICK_MS = 1_000;
/**
 * An hour step waits (at most HOLD_MAX_MS) while a bulk tag deletion was sent in the last HOLD_AFTER_BULK_MS: the
 * daemon writes its hourly ledger before the call, and a call still being retried when the forge's clock jumps an
 * hour would reach the forge an hour later than the ledger says, and a correct next call would look early.
 */
const HOLD_AFTER_BULK_MS = 2_000;
const HOLD_MAX_MS = 5_000;
/**
 * After Redis is back, hour steps wait this long (minute steps go on): the daemons notice the loss, make their
 * schedules again and run passes while the forge's hour of the last bulk deletions and the keys' grace still run, so
 * a ledger or a rotation record that was lost shows as a second bulk deletion or a second key.
 */
const AFTER_REDIS_HOLD_MS = 12_000;
/**
 * How long a sentinel waits for a PING reply before it calls a server down. The topology's default (1 s) let a loaded
 * two-core box fail over unasked: a primary just promoted, busy with the full sync of the restarted server and the
 * daemons' reconnections, missed a sentinel's PING for a second and was failed over to that half-synced replica.
 * A killed primary is promoted about 2 s later than with 1 s.
 */
const SENTINEL_DOWN_AFTER_MS = 3_000;
/** The daemons' count of the primary changes they noticed, and whether Redis answered their last check (every 10 s). */
const FAILOVERS_METRIC = 'forgewarden_redis_failovers_total';
const REDIS_UP_METRIC = 'forgewarden_redis_up';
const HOUR_STEP_EVERY = 4;
const HOUR_STEP_MS = 61 * 60_000;
const MINUTE_STEP_MS = 61_000;
/** At least this many hour steps, as the reference needs them (three capped bulk deletions, one grace period). */
const MIN_HOUR_STEPS = 3;
/** At most this many: a day of forge time, far from every time-based rule of the world (30d, 14d, 90d, 1d tags). */
const MAX_HOUR_STEPS = 24;
const POLL_MS = 250;
const START_TIMEOUT_MS = 15_000;
export const DAEMON_DID_NOT_START = 'the daemon did not report its start';
const CHECK_EVERY_MS = 500;
const QUIET_MS = 3_000;
/** A killed daemon lives this long (uniform) after each start: during boot, mid-pass, between passes. */
const KILL_ALIVE_MS: [number, number] = [200, 1_500];

export async function runScenario(
  plan: ScenarioPlan,
  expected: Outcome,
  ctx: ScenarioContext,
): Promise<ScenarioResult> {
  const started = Date.now();
  const dir = join(ctx.runDir, plan.name);
  const secretsDir = join(dir, 'secrets');
  mkdirSync(secretsDir, { recursive: true, mode: 0o700 });
  const configFile = join(dir, 'policies.yml');
  const backupFolder = join(dir, 'backups', BACKUP.group);
  const backup = plan.humans
    ? {
        destination: join(dir, 'backups'),
        group: BACKUP.group,
        schedule: BACKUP.schedule,
        keepLast: BACKUP.keepLast,
        policy: HUMANS_BACKUP_POLICY,
      }
    : undefined;
  const clockFile = join(dir, 'clock-offset-ms');
  const notes: string[] = [];

  let redis: ChaosRedis | undefined;
  let topology: SentinelTopology | undefined;
  let sandbox: RunningSandbox | undefined;
  const daemons: Daemon[] = [];
  try {
    if (plan.failovers) topology = await startSentinelTopology({ downAfterMs: SENTINEL_DOWN_AFTER_MS });
    else redis = await ChaosRedis.start();
    // With a person at work, on_rotate reports each run to the judge (on-rotate-hook.ts).
    const onRotate = plan.humans ? writeOnRotateHook(dir).command : undefined;
    writeFileSync(
      configFile,
      policyFile(secretsDir, {
        ...(plan.humans ? { backup, registryMode: 'per_tag', onRotate } : {}),
        ...(topology
          ? { redis: { sentinels: topology.sentinelAddresses, masterName: topology.masterName }, metrics: true }
          : {}),
        ...(plan.storm ? { storm: true } : {}),
      }),
    );
    /** Where the daemons' data is now: the one server, or the primary the sentinels name. */
    const redisUrl = async (): Promise<string> =>
      redis ? redis.url : `redis://127.0.0.1:${await topology?.primaryPort()}`;
    sandbox = await startSandbox({ world: ctx.design.world });
    const state = sandbox.state;
    const writeClock = (): void => {
      // Renamed into place, so a daemon never reads a half-written offset.
      writeFileSync(`${clockFile}.tmp`, String(state.clock.now() - Date.now()));
      renameSync(`${clockFile}.tmp`, clockFile);
    };
    writeClock();
    const seeded = await seedForge(sandbox, ctx.design);
    // The token calls' lost answers cost forge hours each; the storm row spends its hours on the runner outage instead.
    const tokenFaults = plan.storm ? [] : tokenFaultRules();
    if (plan.faults)
      for (const rule of [...faultRules(ctx.random.fork(`faults:${plan.name}`)), ...tokenFaults])
        state.faults.add(rule);
    const runnerOutage = plan.storm ? new RunnerOutage(state, started + plan.storm.downForMs) : undefined;

    for (let i = 0; i < plan.daemons; i++) {
      daemons.push(
        new Daemon(`daemon-${i + 1}`, {
          mainJs: ctx.mainJs,
          configFile,
          clockFile,
          forgeUrl: sandbox.url,
          token: ADMIN_TOKEN,
          redisUrl: redis?.url,
          // With sentinels each daemon serves /metrics, for its count of failovers at the end.
          httpPort: topology ? await freePort() : undefined,
          logDir: dir,
        }),
      );
    }
    for (const daemon of daemons) daemon.start();
    const judge = plan.humans ? new Judge(state) : undefined;
    if (judge) state.watchers.add(judge.watch);
    // A daemon that cannot start (a broken build, a bad policy file) fails the scenario at once, not after its limit.
    const startedOk = await daemons[0].ready(START_TIMEOUT_MS);
    if (!startedOk)
      notes.push(
        `${DAEMON_DID_NOT_START} ${daemons[0].running ? `within ${START_TIMEOUT_MS / 1000} s` : '(it exited)'}; see ${daemons[0].currentLog}`,
      );

    const killRandom = ctx.random.fork(`kills:${plan.name}`);
    const nextAlive = (): number => killRandom.int(KILL_ALIVE_MS[0], KILL_ALIVE_MS[1]);
    let killsLeft = plan.killCycles ?? 0;
    let killAt = Date.now() + nextAlive();

    const activeUntil = startedOk ? started + plan.timeLimitMs : 0;
    const person =
      judge && plan.humans
        ? new Person(sandbox, judge, ctx.random.fork(`humans:${plan.name}`), backupFolder)
        : undefined;
    let personDone = !person;
    const personWork =
      person && plan.humans && startedOk
        ? person.work(Date.now() + plan.humans.forMs, plan.humans.gapMs).finally(() => {
            personDone = true;
          })
        : undefined;
    // Done, for a scenario with a person: the person has stopped and every target they left alone is done.
    const healthyDone = (): boolean => {
      if (!judge || !personDone) return false;
      const now = readOutcome(state, ctx.design, secretsDir, seeded);
      // The person leaves tokens alone: their row is the main table's, judged against the reference.
      const tokens = compare(expected, now).tokens;
      return (
        tokens.missing === 0 &&
        tokens.extra === 0 &&
        humansRows(plan.name, expected, now, judge, state, backupFolder, new Map()).every((row) => row.missing === 0)
      );
    };
    let steps = 0;
    let ticks = 0;
    let nextTickAt = Date.now() + TICK_MS;
    let lastStepAt = Date.now();
    const outages = [...(plan.redisOutages ?? [])];
    let redisBackAt: number | undefined;
    let checkAt = 0;
    let done = false;
    let logIndex = 0;
    let lastBulkAt = 0;
    let holdingSince: number | undefined;
    let noHourStepBefore = 0;
    const failovers = new Failovers(topology, plan.failovers ?? [], (line) => ctx.log(`  ${plan.name}: ${line}`));

    while (Date.now() < activeUntil) {
      const now = Date.now();
      const outage = outages[0];
      const failover = failovers.next;
      if (failover && !failovers.busy && steps >= failover.afterHourSteps && now >= lastStepAt + failover.delayMs) {
        failovers.start(`${Math.round((now - started) / 1000)} s in, after ${steps} hour step(s)`);
      } else if (failovers.settled()) {
        // As after an outage: the clock stood still, and the hour of the last bulk deletion and the keys' grace go on.
        nextTickAt = Date.now() + TICK_MS;
        lastStepAt = Date.now();
        noHourStepBefore = Date.now() + AFTER_REDIS_HOLD_MS;
      }
      if (
        redis &&
        redisBackAt === undefined &&
        outage &&
        steps >= outage.afterHourSteps &&
        now >= lastStepAt + outage.delayMs
      ) {
        if (outage.data === 'with-data') await redis.snapshot();
        await redis.down();
        redisBackAt = Date.now() + outage.forMs;
        ctx.log(
          `  ${plan.name}: Redis stopped (${Math.round((Date.now() - started) / 1000)} s in, after ${steps} hour step(s)); back ${outage.data === 'empty' ? 'empty' : 'with its data'} in ${outage.forMs / 1000} s`,
        );
      } else if (redis && redisBackAt !== undefined && outage && now >= redisBackAt) {
        await redis.up(outage.data);
        outages.shift();
        redisBackAt = undefined;
        // The forge's clock stood still while Redis was away, so the hour of the last bulk deletion is not over.
        nextTickAt = Date.now() + TICK_MS;
        lastStepAt = Date.now();
        noHourStepBefore = Date.now() + AFTER_REDIS_HOLD_MS;
        ctx.log(`  ${plan.name}: Redis is back`);
      }
      // During a failover too: until the topology has settled, the primary has no replica to confirm a claim.
      const redisDown = redisBackAt !== undefined || failovers.busy;
      for (; logIndex < state.requestLog.length; logIndex++) {
        const entry = state.requestLog[logIndex];
        if (entry.method === 'DELETE' && /\/registry\/repositories\/\d+\/tags$/.test(entry.path)) lastBulkAt = now;
      }
      const due =
        !redisDown &&
        now >= nextTickAt &&
        steps < (plan.maxHourSteps ?? MAX_HOUR_STEPS) &&
        !(done && steps >= MIN_HOUR_STEPS);
      // Right after Redis came back, a minute step takes the place of the hour step, which stays next.
      const hour = (ticks + 1) % HOUR_STEP_EVERY === 0 && now >= noHourStepBefore;
      const holdForBulk = due && hour && now - lastBulkAt < HOLD_AFTER_BULK_MS;
      if (holdForBulk) holdingSince ??= now;
      if (due && (!holdForBulk || now - (holdingSince ?? now) >= HOLD_MAX_MS)) {
        // Forge and daemons move in one synchronous step (the forge runs in this process, so no request sees one
        // moved without the other); the daemons read the new offset within 25 ms.
        holdingSince = undefined;
        if (hour || (ticks + 1) % HOUR_STEP_EVERY !== 0) ticks += 1;
        state.clock.advance(hour ? HOUR_STEP_MS : MINUTE_STEP_MS);
        writeClock();
        if (hour) {
          steps += 1;
          lastStepAt = Date.now();
        }
        nextTickAt = Date.now() + TICK_MS;
      }
      runnerOutage?.tick(now, (line) => ctx.log(`  ${plan.name}: ${line}`));
      if (killsLeft > 0 && now >= killAt) {
        await daemons[0].kill();
        daemons[0].start();
        killsLeft -= 1;
        killAt = Date.now() + nextAlive();
      }
      if (now >= checkAt) {
        checkAt = now + CHECK_EVERY_MS;
        done = judge
          ? healthyDone()
          : converged(expected, readOutcome(state, ctx.design, secretsDir, seeded)) &&
            (runnerOutage?.over(ctx.design) ?? true);
        if (done && killsLeft === 0 && outages.length === 0 && failovers.over && steps >= MIN_HOUR_STEPS) break;
      }
      await sleep(POLL_MS);
    }
    if (!done && startedOk) {
      notes.push(
        `did not reach the expected outcome within ${Math.round(plan.timeLimitMs / 1000)} s; Redis keys in redis-at-end.txt`,
      );
    }
    // A failover under way when the time ran out ends first: the quiet period is for the daemons, not the topology.
    await failovers.finish();
    if (!done && startedOk)
      writeFileSync(
        join(dir, 'redis-at-end.txt'),
        await describeRedis(await redisUrl()).catch((error: unknown) => `${String(error)}\n`),
      );

    await personWork;
    state.faults.clear();
    if (redis && redisBackAt !== undefined) await redis.up(outages[0]?.data ?? 'empty');
    await sleep(QUIET_MS);
    let redisMetrics: ScenarioResult['redisMetrics'];
    if (topology) {
      notes.push(...(await failovers.report()));
      redisMetrics = {};
      for (const daemon of daemons) {
        redisMetrics[daemon.name] = {
          failovers: (await daemon.metric(FAILOVERS_METRIC)) ?? null,
          up: (await daemon.metric(REDIS_UP_METRIC)) ?? null,
        };
      }
      const figures = Object.entries(redisMetrics);
      const shown = (value: number | null): string => (value === null ? 'not read' : String(value));
      notes.push(
        `${FAILOVERS_METRIC}: ${figures.map(([name, { failovers: value }]) => `${name} ${shown(value)}`).join(', ')}`,
      );
      notes.push(`${REDIS_UP_METRIC}: ${figures.map(([name, { up }]) => `${name} ${shown(up)}`).join(', ')}`);
    }
    const outcome = readOutcome(state, ctx.design, secretsDir, seeded, dir);
    if (judge && person) checkBackups(judge, backupFolder, person.deletedBackups);
    // After the quiet period no pass is owed any more: what is still open is late.
    judge?.rules.checkAll(true);
    // What the forge recorded, for the evidence behind a failing row (one JSON object a line).
    writeFileSync(
      join(dir, 'forge-requests.jsonl'),
      state.requestLog.map((entry) => JSON.stringify(entry)).join('\n') + '\n',
    );
    let rows: Row[];
    let humansLine: string | undefined;
    if (judge) {
      const audit = await auditOutcomes(await redisUrl());
      rows = humansRows(plan.name, expected, outcome, judge, state, backupFolder, audit).map(({ area, ...row }) => ({
        ...row,
        faults: area === 'backup' || area === 'judge' ? 0 : outcome.faults[area],
      }));
      rows.push({
        scenario: plan.name,
        policy: POLICIES.tokens,
        faults: outcome.faults.tokens,
        ...compare(expected, outcome).tokens,
      });
      if (person) humansLine = humansSummary(person, judge);
    } else {
      const counts = compare(expected, outcome, {
        redisBackEmpty: (plan.redisOutages ?? []).some((outage) => outage.data === 'empty'),
      });
      if (runnerOutage) {
        const storm = runnerOutage.judge(ctx.design);
        counts.jobRetry = {
          ...counts.jobRetry,
          missing: counts.jobRetry.missing + storm.missing.length,
          details: [...counts.jobRetry.details, ...storm.missing],
        };
        notes.push(...storm.notes);
      }
      rows = (Object.keys(POLICIES) as (keyof typeof POLICIES)[]).map((policy) => ({
        scenario: plan.name,
        policy: POLICIES[policy],
        faults: outcome.faults[policy],
        ...counts[policy],
      }));
    }
    return {
      rows,
      outcome,
      wallMs: Date.now() - started,
      converged: done,
      clockSteps: steps,
      daemonStarts: daemons.reduce((sum, d) => sum + d.startCount, 0),
      requests: state.requestLog.length,
      notes,
      ...(humansLine !== undefined ? { humansLine } : {}),
      ...(topology ? { failovers: { made: failovers.made, unrequested: failovers.unrequested }, redisMetrics } : {}),
    };
  } finally {
    await Promise.all(daemons.map((d) => d.stop(6_000)));
    await sandbox?.close();
    await redis?.close();
    if (topology) {
      // The servers' and sentinels' logs (who was promoted when, who saw whom down) go with the topology: keep a copy.
      const logs = join(dir, 'redis-topology');
      mkdirSync(logs, { recursive: true });
      for (const file of topology.logFiles()) if (existsSync(file)) copyFileSync(file, join(logs, basename(file)));
      await topology.stop();
    }
  }
}

/**
 * What the world file cannot hold (approval settings and rules, integrations), set through the forge's API; then the
 * request log starts empty, so only the daemons' requests are judged. Fails when the forge does not hold what the
 * design says it holds before the run: a design that went wrong must not become the yardstick.
 */
export async function seedForge(sandbox: RunningSandbox, design: Design): Promise<Seeded> {
  await seedSettings(sandbox.url, ADMIN_TOKEN);
  const { state } = sandbox;
  state.requestLog.length = 0;
  const seeded: Seeded = { ruleIds: seededRuleIds(state) };
  const held = readSettings(state, seeded.ruleIds);
  const wrong = design.settings
    .filter(({ item, before }) => held.get(item) !== before)
    .map(({ item, before }) => `${item}: design ${before}, forge ${held.get(item) ?? 'absent'}`);
  if (wrong.length > 0)
    throw new Error(`chaos world: the forge's settings before the run are not the design's:\n  ${wrong.join('\n  ')}`);
  return seeded;
}

/**
 * The failover scenario's events, one at a time in the background (each takes 10 to 30 s, and the scenario's loop goes
 * on checking the forge meanwhile). It also notices a primary that changed without being asked (a sentinel that
 * missed a PING on a loaded machine): the daemons must survive that too, but the clock did not stand still for it.
 */
class Failovers {
  private readonly pending: FailoverEvent[];
  private running: Promise<void> | undefined;
  private finished = false;
  /** The primary the last event left, to tell an unrequested failover by. */
  private primary: number | undefined;
  private readonly lines: string[] = [];
  private failed = false;
  private count = 0;
  /** Processes of the topology this scenario SIGKILLed (a killed primary; its restart is a new process). */
  private killed = 0;
  made = 0;
  unrequested = 0;

  constructor(
    private readonly topology: SentinelTopology | undefined,
    events: readonly FailoverEvent[],
    private readonly log: (line: string) => void,
  ) {
    this.pending = topology ? [...events] : [];
    this.primary = topology?.dataPorts[0];
  }

  /** The event due next; none after one failed (the topology is then in no state to go on). */
  get next(): FailoverEvent | undefined {
    return this.failed ? undefined : this.pending[0];
  }

  get busy(): boolean {
    return this.running !== undefined;
  }

  /** No event left to make and none under way. */
  get over(): boolean {
    return this.next === undefined && !this.busy;
  }

  start(when: string): void {
    const event = this.pending.shift();
    const topology = this.topology;
    if (!event || !topology) return;
    const number = ++this.count;
    const began = Date.now();
    const seconds = (): string => ((Date.now() - began) / 1000).toFixed(1);
    this.log(
      `failover ${number}: ${event.kind === 'failover' ? 'SENTINEL FAILOVER' : 'SIGKILL to the primary'} (${when})`,
    );
    this.running = (async () => {
      let line: string;
      if (event.kind === 'failover') {
        const { from, to } = await topology.failover();
        this.noticeUnrequested(from);
        line = `requested: ${from} → ${to}, settled in ${seconds()} s`;
        this.primary = to;
      } else {
        const { killed } = await topology.killPrimary();
        this.killed += 1;
        this.noticeUnrequested(killed);
        const to = await topology.waitForPrimaryOtherThan(killed);
        const promoted = seconds();
        await topology.restart(killed);
        line = `${killed} SIGKILLed: ${to} promoted after ${promoted} s, ${killed} back as its replica after ${seconds()} s`;
        this.primary = to;
      }
      this.made += 1;
      this.lines.push(line);
      this.log(`failover ${number}: ${line}`);
    })()
      .catch((error: unknown) => {
        this.failed = true;
        const line = `failover ${number} (${event.kind}) FAILED after ${seconds()} s${this.vanished()}, no further failovers made: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`;
        this.lines.push(line);
        this.log(line);
      })
      .finally(() => {
        this.finished = true;
      });
  }

  /** True once, when the event under way has ended: the clock may move again. */
  settled(): boolean {
    if (!this.running || !this.finished) return false;
    this.running = undefined;
    this.finished = false;
    return true;
  }

  /** Waits for the event under way, if any. */
  async finish(): Promise<void> {
    await this.running;
    this.settled();
  }

  /** The notes for the scenario's report; checks once more for a primary changed unasked. */
  async report(): Promise<string[]> {
    if (!this.topology) return [];
    try {
      if (!this.failed) this.noticeUnrequested(await this.topology.primaryPort());
    } catch (error) {
      this.lines.push(
        `no sentinel named a primary at the end: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    const left = this.pending.length;
    const vanished = this.vanished();
    if (vanished) this.lines.push(`at the end${vanished}`);
    return [
      `${this.made} failovers made${left > 0 ? ` (${left} not made: the time ran out or one failed)` : ''}${this.unrequested > 0 ? `, and ${this.unrequested} primary change(s) nobody asked for` : ''}`,
      ...this.lines,
    ];
  }

  /**
   * Processes of the topology gone that the scenario did not kill: a crash, or something outside the suite ending
   * them (twice, on a machine shared with other test runs, all but one went at once without a line in their logs).
   */
  private vanished(): string {
    if (!this.topology) return '';
    const pids = this.topology.pids();
    const gone = pids.length - pids.filter(isAlive).length - this.killed;
    return gone > 0
      ? ` (${gone} of the topology's processes died that the scenario did not kill: see redis-topology/)`
      : '';
  }

  private noticeUnrequested(primaryNow: number): void {
    if (this.primary === undefined || primaryNow === this.primary) return;
    this.unrequested += 1;
    const line = `the primary moved from ${this.primary} to ${primaryNow} without a failover being asked for (the clock did not stand still for it)`;
    this.lines.push(line);
    this.log(line);
    this.primary = primaryNow;
  }
}

/**
 * The storm scenario's runner outage: the sandbox's runners down from the start (retries fail at once with the world's
 * ETIMEDOUT signature), up at `upAt`. Judged at the end: every job the design retries ends in a successful attempt, and
 * the retries sent while the runners were down are counted.
 */
class RunnerOutage {
  private upSince: number | undefined;
  private retriesWhileDown = 0;

  constructor(
    private readonly state: RunningSandbox['state'],
    private readonly upAt: number,
  ) {
    Object.assign(state.runners, { state: 'down', ...OUTAGE });
  }

  tick(now: number, log: (line: string) => void): void {
    if (this.upSince !== undefined || now < this.upAt) return;
    this.retriesWhileDown = this.retries();
    this.state.runners.state = 'up';
    this.upSince = now;
    log(`runners back up; ${this.retriesWhileDown} retries were sent while they were down`);
  }

  /** Done: the runners are back and every designed retry ended in success. */
  over(design: Design): boolean {
    return this.upSince !== undefined && this.judge(design).missing.length === 0;
  }

  judge(design: Design): { missing: string[]; notes: string[] } {
    const jobs = [...this.state.jobs.values()];
    const missing: string[] = [];
    for (const id of design.retriedJobs) {
      const job = this.state.jobs.get(id);
      if (!job) continue;
      const newest = jobs
        .filter((other) => other.pipeline_id === job.pipeline_id && other.name === job.name)
        .reduce((a, b) => (b.id > a.id ? b : a));
      if (newest.status !== 'success')
        missing.push(
          `job ${id} (${job.name}, pipeline ${job.pipeline_id}): its newest attempt ${newest.id} is ${newest.status}, not a success after the outage`,
        );
    }
    return {
      missing,
      notes: [`${this.retriesWhileDown} retries sent while the runners were down, ${this.retries()} in all`],
    };
  }

  private retries(): number {
    return this.state.requestLog.filter(
      (entry) => entry.method === 'POST' && /\/jobs\/\d+\/retry$/.test(entry.path) && entry.status === 200,
    ).length;
  }
}
