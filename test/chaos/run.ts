/**
 * `npm run chaos`: nothing dropped, nothing doubled. Each scenario runs the built daemon (dist/main.js) as real child
 * processes against the in-process sandbox forge, with faults, kills, replicas or a Redis outage, and its end state
 * is compared with a fault-free reference run of the same world, one row per policy. Exit 1 on any difference.
 *
 *   npm run chaos -- --seed 7                  replay the faults and kill points of seed 7
 *   npm run chaos -- --only reference,kills    a subset (the reference always runs: the others compare with it)
 *   npm run chaos -- --out results.json        where the JSON summary goes (default .chaos-results.json)
 *   npm run chaos -- --daemon /path/main.js    another build of the daemon
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { passed, type Row } from './compare';
import { killAllDaemons, PRELOAD } from './daemon';
import { FAULT_PERCENT } from './fault-mix';
import { designOutcome, type Outcome } from './outcome';
import { Random } from './random';
import { differences, races, scenarioSummary, table, writeSummary, type Summary } from './report';
import { DAEMON_DID_NOT_START, runScenario, type ScenarioPlan, type ScenarioResult } from './scenario';
import { closeAllRedis } from './redis';
import { stopAllTopologies } from '../support/redis-topology';
import { buildDesign } from './world';

const REPO = resolve(__dirname, '../../../..');
const DEFAULT_SEED = 20_250_602;

/**
 * The reference runs first and alone (every other scenario is compared with it). The others then run side by side,
 * `--parallel` at a time, longest first: each has its own forge, Redis and daemons. By default as many lanes as the
 * machine has cores, at most 3: the kills scenario restarts its daemon twenty times, and each boot takes a core for a
 * moment, so three lanes on two cores slowed it to its time limit (the forge's clock stops moving after a day of hour
 * steps, and what is not done by then never is). Time limits bound the active phase of each, so the suite stops by
 * itself (within about seven minutes on two cores) even when nothing converges.
 */
const DEFAULT_PARALLEL = Math.max(1, Math.min(3, cpus().length));
const REFERENCE: ScenarioPlan = { name: 'reference', daemons: 1, faults: false, timeLimitMs: 40_000 };
const PLANS: ScenarioPlan[] = [
  { name: 'faults', daemons: 1, faults: true, timeLimitMs: 75_000 },
  { name: 'kills', daemons: 1, faults: true, killCycles: 20, timeLimitMs: 130_000 },
  { name: 'replicas', daemons: 3, faults: true, timeLimitMs: 70_000 },
  {
    name: 'redis-outage',
    daemons: 2,
    faults: false,
    // First while keys are uploaded but their grace runs and the first bulk deletions are within their hour: Redis
    // comes back empty. Then, with the work nearly done, it comes back with its data.
    redisOutages: [
      { afterHourSteps: 0, delayMs: 3_000, forMs: 30_000, data: 'empty' },
      { afterHourSteps: 2, delayMs: 1_000, forMs: 30_000, data: 'with-data' },
    ],
    timeLimitMs: 125_000,
  },
  // Redis behind Sentinel, failed over while the work is under way: first while keys wait out their grace and the
  // first bulk deletions are within their hour, then once by SIGKILL to the primary (restarted as a replica, so the
  // later ones have a replica to promote), then twice more. The clock stands still until each has settled.
  {
    name: 'failover',
    daemons: 2,
    faults: false,
    failovers: [
      { afterHourSteps: 0, delayMs: 3_000, kind: 'failover' },
      { afterHourSteps: 1, delayMs: 1_000, kind: 'kill-primary' },
      { afterHourSteps: 2, delayMs: 1_000, kind: 'failover' },
      { afterHourSteps: 3, delayMs: 1_000, kind: 'failover' },
    ],
    timeLimitMs: 150_000,
  },
  // A person at work beside one daemon under the same faults (humans.ts): the rows judge each harmful write of the
  // daemon at the moment the forge handles it, and the work on the targets the person left alone.
  { name: 'humans', daemons: 1, faults: true, humans: { forMs: 45_000, gapMs: [250, 900] }, timeLimitMs: 110_000 },
  // A runner outage: job_retry in a retry storm from its first pass, under the same faults, its daemon SIGKILLed and
  // restarted while the runners are down; once they are back, every designed retry must end in a successful attempt.
  {
    name: 'storm',
    daemons: 1,
    faults: true,
    killCycles: 8,
    storm: { downForMs: 40_000 },
    // The forge's clock stops at the last hour step, and what is left (the storm's last probe, the held jobs' retries)
    // then waits in vain: enough steps and time that a loaded machine's slower passes still get there.
    timeLimitMs: 240_000,
    maxHourSteps: 60,
  },
];
/** The order lanes take scenarios in: the longest first, so the lanes end close together. */
const LANE_ORDER = ['redis-outage', 'failover', 'kills', 'humans', 'storm', 'faults', 'replicas'];

interface Options {
  seed: number;
  parallel: number;
  only: Set<string> | undefined;
  out: string;
  mainJs: string;
}

function parseArgs(argv: string[]): Options {
  const options: Options = {
    seed: DEFAULT_SEED,
    parallel: DEFAULT_PARALLEL,
    only: undefined,
    out: resolve(REPO, '.chaos-results.json'),
    mainJs: resolve(REPO, 'dist/main.js'),
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined) usage(`${flag} needs a value`);
      return v;
    };
    if (flag === '--seed') {
      const seed = Number(value());
      if (!Number.isInteger(seed) || seed < 0) usage('--seed takes a whole number');
      options.seed = seed;
    } else if (flag === '--parallel') {
      const parallel = Number(value());
      if (!Number.isInteger(parallel) || parallel < 1 || parallel > PLANS.length)
        usage(`--parallel takes 1 to ${PLANS.length}`);
      options.parallel = parallel;
    } else if (flag === '--only') {
      options.only = new Set(
        value()
          .split(',')
          .map((s) => s.trim()),
      );
      for (const name of options.only)
        if (![REFERENCE, ...PLANS].some((p) => p.name === name)) usage(`unknown scenario ${name}`);
    } else if (flag === '--out') options.out = resolve(value());
    else if (flag === '--daemon') options.mainJs = resolve(value());
    else usage(`unknown option ${argv[i]}`);
  }
  return options;
}

function usage(problem: string): never {
  process.stderr.write(
    `chaos: ${problem}\nusage: npm run chaos -- [--seed N] [--only ${PLANS.map((p) => p.name).join(',')}] [--parallel N] [--out FILE] [--daemon dist/main.js]\n`,
  );
  process.exit(2);
}

async function main(): Promise<number> {
  const options = parseArgs(process.argv.slice(2));
  const startedAt = new Date();
  const started = Date.now();
  const log = (line: string): void => void process.stdout.write(`${line}\n`);

  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) {
    process.stderr.write('chaos: redis-server is not installed (Debian/Ubuntu: apt-get install redis-server)\n');
    return 2;
  }
  for (const file of [options.mainJs, PRELOAD]) {
    if (!existsSync(file)) {
      process.stderr.write(`chaos: ${file} is missing (run npm run build)\n`);
      return 2;
    }
  }

  const runDir = mkdtempSync(join(tmpdir(), 'forgewarden-chaos-'));
  log(`chaos: seed ${options.seed} (replay with: npm run chaos -- --seed ${options.seed})`);
  log(`chaos: daemon ${options.mainJs}; logs, policy files and key folders in ${runDir}`);
  log(`chaos: faults on ${FAULT_PERCENT}% of API requests in the faults, kills and replicas scenarios`);

  const random = new Random(options.seed);
  const design = buildDesign();
  const context = { design, mainJs: options.mainJs, runDir, random, log };
  const results = new Map<string, ScenarioResult>();
  const run = async (plan: ScenarioPlan, expected: Outcome): Promise<ScenarioResult> => {
    log(`chaos: ${plan.name}: ${describe(plan)}`);
    const result = await runScenario(plan, expected, context);
    const faults = Object.values(result.outcome.faults).reduce((a, b) => a + b, 0);
    log(
      `chaos: ${plan.name}: ${result.converged ? 'reached the expected outcome' : 'did NOT reach the expected outcome'} in ` +
        `${(result.wallMs / 1000).toFixed(1)} s; ${result.requests} requests, ${faults} faults, ${result.clockSteps} hour steps, ` +
        `${result.daemonStarts} daemon starts${result.notes.length > 0 ? `; ${result.notes.join('; ')}` : ''}`,
    );
    results.set(plan.name, result);
    return result;
  };

  // The reference is held to the world's design; every other scenario to the reference.
  const referenceResult = await run(REFERENCE, designOutcome(design));
  const reference = referenceResult.outcome;
  const daemonStarts = !referenceResult.notes.some((note) => note.startsWith(DAEMON_DID_NOT_START));
  if (!daemonStarts) log('chaos: the daemon does not start, so no other scenario runs');
  if (results.get(REFERENCE.name)?.rows.some((row) => !passed(row))) {
    log(
      "chaos: the reference run differs from the world's design (see its rows); the other scenarios are compared with it anyway",
    );
  }
  const queue = LANE_ORDER.map((name) => PLANS.find((p) => p.name === name)).filter(
    (plan): plan is ScenarioPlan =>
      daemonStarts && plan !== undefined && (!options.only || options.only.has(plan.name)),
  );
  const lane = async (): Promise<void> => {
    for (let plan = queue.shift(); plan; plan = queue.shift()) await run(plan, reference);
  };
  await Promise.all(Array.from({ length: options.parallel }, lane));

  const rows: Row[] = [];
  const scenarios: Summary['scenarios'] = [];
  for (const plan of [REFERENCE, ...PLANS]) {
    const result = results.get(plan.name);
    if (!result) continue;
    rows.push(...result.rows);
    scenarios.push(scenarioSummary(plan.name, result));
  }

  log('');
  log(table(rows));
  for (const [name, result] of results) if (result.humansLine) log(`${name}: ${result.humansLine}`);
  const evidence = differences(rows);
  if (evidence) log(`\n${evidence}`);
  const raced = races(rows);
  if (raced) log(`\n${raced}`);
  const summary = writeSummary(
    options.out,
    {
      seed: options.seed,
      started_at: startedAt.toISOString(),
      wall_ms: Date.now() - started,
      log_dir: runDir,
      daemon: options.mainJs,
      scenarios,
    },
    rows,
  );
  log(
    `\nchaos: ${summary.passed} rows passed, ${summary.failed} failed, in ${((Date.now() - started) / 1000).toFixed(0)} s (seed ${options.seed}); summary in ${options.out}`,
  );
  return summary.failed > 0 ? 1 : 0;
}

function describe(plan: ScenarioPlan): string {
  const parts = [
    `${plan.daemons} daemon${plan.daemons === 1 ? '' : 's'}`,
    plan.faults ? `${FAULT_PERCENT}% faults` : 'no faults',
  ];
  if (plan.killCycles) parts.push(`${plan.killCycles} SIGKILL/restart cycles`);
  for (const outage of plan.redisOutages ?? [])
    parts.push(`Redis down for ${outage.forMs / 1000} s, back ${outage.data === 'empty' ? 'empty' : 'with its data'}`);
  if (plan.failovers) {
    const kills = plan.failovers.filter((event) => event.kind === 'kill-primary').length;
    parts.push(
      `Redis behind Sentinel, failed over ${plan.failovers.length - kills} time(s) on request${kills > 0 ? ` and ${kills} by SIGKILL to the primary` : ''}`,
    );
  }
  if (plan.humans) parts.push(`a person at work for ${plan.humans.forMs / 1000} s`);
  if (plan.storm)
    parts.push(`the runners down for the first ${plan.storm.downForMs / 1000} s (job_retry in a retry storm)`);
  parts.push(`at most ${plan.timeLimitMs / 1000} s`);
  return parts.join(', ');
}

// Interrupted (Ctrl-C, a CI job's timeout): the daemons and redis-servers are ours to stop, by their pids.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`chaos: ${signal}: stopping the daemons and redis-servers\n`);
    void Promise.allSettled([killAllDaemons(), closeAllRedis(), stopAllTopologies()]).finally(() => process.exit(130));
  });
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`chaos: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    // Other lanes may still run: their daemons and (daemonized) redis-servers would outlive the suite.
    void Promise.allSettled([killAllDaemons(), closeAllRedis(), stopAllTopologies()]).finally(() => process.exit(1));
  },
);
