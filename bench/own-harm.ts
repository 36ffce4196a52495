/**
 * The bot's own harm mended (`npm run bench -- --only own-harm`): a project_settings reprotect of `main` cut between its
 * unprotect and its protect by the token losing its rights, in the real daemon (`node dist/main.js run`) against the
 * sandbox forge. The daemon's protect is held at the forge's door while a person takes its administrator flag away;
 * some seconds later the flag comes back. The figure is the time from the rights returning to `main` protected again,
 * over five runs, each on a sandbox and a Redis prefix of its own. About a minute and a half a run.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DAEMON_NODE_FLAGS,
  dropKeys,
  freePort,
  MAIN,
  percentile,
  ROOT,
  type Sandbox,
  sleep,
  startSandbox,
  waitForExit,
} from './processes';

const BOT_TOKEN = 'glpat-sandbox-harm-bot';
const PERSON_TOKEN = 'glpat-sandbox-harm-person';
const RUNS = 5;
/** How long the rights stay away after the cut, at random: long enough for a repair pass or two to be refused. */
const AWAY_MS = [5_000, 40_000] as const;

export interface OwnHarmRow {
  figure: string;
  forgewarden: string;
  peers: string;
  ratio: string;
  floor: string;
}

/** The bot (root) is an administrator and a developer of acme/api, whose main lets developers push. */
const WORLD = JSON.stringify({
  users: [
    { id: 1, username: 'root', admin: true, tokens: [BOT_TOKEN] },
    { id: 2, username: 'ada', admin: true, tokens: [PERSON_TOKEN] },
  ],
  groups: [{ id: 10, path: 'acme' }],
  projects: [
    {
      id: 1,
      path: 'api',
      namespace: 'acme',
      members: [{ user: 'root', access_level: 'developer' }],
      protected_branches: [{ name: 'main', push_access_level: 'developer', merge_access_level: 'developer' }],
    },
  ],
});

function policyText(forgeUrl: string, prefix: string, httpPort: number): string {
  return [
    'version: 1',
    `gitlab: { url: "${forgeUrl}", token: "\${GITLAB_TOKEN}", max_requests_per_minute: 6000 }`,
    `redis: { prefix: ${prefix} }`,
    'dry_run: false',
    `http: { host: 127.0.0.1, port: ${httpPort} }`,
    'shutdown_timeout: 5s',
    'policies:',
    '  - name: baseline',
    '    type: project_settings',
    '    projects: [acme/api]',
    // The schedule alone would come back in an hour: what brings the branch back sooner is the harm's own follow-up.
    '    interval: 1h',
    '    protected_branches:',
    '      - { name: main, push_access_level: maintainer, merge_access_level: developer }',
    '',
  ].join('\n');
}

async function call(
  sandbox: Sandbox,
  method: string,
  path: string,
  body?: unknown,
  token?: string,
): Promise<{ status: number; json: unknown }> {
  const response = await fetch(`${sandbox.url}${path}`, {
    method,
    headers: {
      ...(token ? { 'PRIVATE-TOKEN': token } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, json: text ? (JSON.parse(text) as unknown) : undefined };
}

/** main's push levels as the forge shows them now, or undefined while it is unprotected. */
async function pushLevels(sandbox: Sandbox): Promise<number[] | undefined> {
  const answer = await call(sandbox, 'GET', '/api/v4/projects/1/protected_branches/main', undefined, PERSON_TOKEN);
  if (answer.status === 404) return undefined;
  return (answer.json as { push_access_levels: Array<{ access_level: number }> }).push_access_levels.map(
    (entry) => entry.access_level,
  );
}

/** One run: the cut, the rights away for `awayMs`, then the time until main is protected as declared, ms. */
async function oneRun(folder: string, run: number, awayMs: number): Promise<{ mendedMs: number; repairs: number }> {
  const world = join(folder, `world-${run}.json`);
  writeFileSync(world, WORLD);
  const sandbox = await startSandbox(world);
  const prefix = `bench-own-harm-${process.pid}-${run}`;
  const httpPort = await freePort();
  const config = join(folder, `policies-${run}.yml`);
  writeFileSync(config, policyText(sandbox.url, prefix, httpPort));
  // The daemon's first protect of main (after its unprotect) waits at the forge's door.
  const hold = (
    await call(sandbox, 'POST', '/__sandbox/holds', { method: 'POST', path: '^/api/v4/projects/1/protected_branches$' })
  ).json as { id: number };
  const daemon = spawn(process.execPath, [...DAEMON_NODE_FLAGS, MAIN, 'run', '-c', config], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'ignore'],
    env: { ...process.env, GITLAB_TOKEN: BOT_TOKEN, LOG_LEVEL: 'warn' },
  });
  try {
    for (;;) {
      const state = (await call(sandbox, 'GET', `/__sandbox/holds/${hold.id}`)).json as { waiting: number };
      if (state.waiting > 0) break;
      if (daemon.exitCode !== null) throw new Error(`the daemon exited with ${daemon.exitCode}`);
      await sleep(50);
    }
    await call(sandbox, 'PUT', '/api/v4/users/1', { admin: false }, PERSON_TOKEN);
    await call(sandbox, 'DELETE', `/__sandbox/holds/${hold.id}`);
    await sleep(awayMs);
    await call(sandbox, 'PUT', '/api/v4/users/1', { admin: true }, PERSON_TOKEN);
    const back = Date.now();
    for (const deadline = back + 120_000; Date.now() < deadline; await sleep(100)) {
      if ((await pushLevels(sandbox))?.includes(40)) break;
    }
    const mendedMs = Date.now() - back;
    const log = (await call(sandbox, 'GET', '/__sandbox/requests?method=POST&path=protected_branches$'))
      .json as unknown[];
    return { mendedMs, repairs: log.length };
  } finally {
    daemon.kill('SIGTERM');
    await waitForExit(daemon, 15_000);
    sandbox.child.kill('SIGTERM');
    await waitForExit(sandbox.child, 5_000);
    await dropKeys(prefix);
  }
}

export async function ownHarmBench(log: (line: string) => void): Promise<{ rows: OwnHarmRow[]; notes: string[] }> {
  const folder = mkdtempSync(join(tmpdir(), 'forgewarden-bench-own-harm-'));
  const runs: Array<{ awayMs: number; mendedMs: number; repairs: number }> = [];
  try {
    for (let run = 1; run <= RUNS; run++) {
      const awayMs = AWAY_MS[0] + Math.random() * (AWAY_MS[1] - AWAY_MS[0]);
      const result = await oneRun(folder, run, awayMs);
      runs.push({ awayMs, ...result });
      log(
        `own harm: run ${run}: rights away ${(awayMs / 1000).toFixed(1)} s, main protected ${(result.mendedMs / 1000).toFixed(1)} s after they came back (${result.repairs} protects sent)`,
      );
    }
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
  const mended = runs.map((run) => run.mendedMs);
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  return {
    rows: [
      {
        figure: `own harm: rights back → branch protected (${RUNS} runs; median, max)`,
        forgewarden: `${s(percentile(mended, 0.5))}, ${s(Math.max(...mended))}`,
        peers: '',
        ratio: '',
        floor: 'the next pass: ≤ 45 s after the last refused one',
      },
    ],
    notes: [
      `Own harm: each run's rights away and then back → protected: ${runs.map((run) => `${s(run.awayMs)} → ${s(run.mendedMs)}`).join('; ')}.`,
    ],
  };
}
