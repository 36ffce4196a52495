/**
 * Token rotation at scale (`npm run bench -- --only tokens`): key_rotation rotating and delivering 1,000 project access
 * tokens, one in each of 1,000 projects found by a glob (`bench/*`), each delivered to the project's CI/CD variable
 * that holds the old value, all within the default request budget (`gitlab.max_requests_per_minute` 600, writes spaced
 * 250 ms). The daemon runs in this process (Nest app, real Redis) against the sandbox forge, also in this process; one
 * `once`-like pass with `max_actions_per_run: 2000` does it all. Figures: wall time, requests per token (the
 * sandbox's request log), the busiest minute against the budget, and that every variable holds its project's active
 * token with no family revoked. About 12 minutes, nearly all of it waiting on the budget.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createApp } from '../src/bootstrap';
import { parseConfig } from '../src/config/load';
import { EngineService } from '../src/engine/engine.service';
import { AppLogger } from '../src/logging/logger';
import { keyRotationPolicy } from '../src/policies/key-rotation/key-rotation.schema';
import { startSandbox, type World } from '../src/sandbox';
import { benchPrefix, benchRedisUrl, dropKeys } from './processes';

const TOKENS = 1_000;
const BUDGET = 600;
// The world's administrator; the sandbox accepts it and no real forge does.
const ADMIN = 'glpat-sandbox-tokens-admin';

export interface TokensRow {
  figure: string;
  forgewarden: string;
  peers: string;
  ratio: string;
  floor: string;
}

/** 1,000 projects in group `bench`, each with a `deploy` token expiring in 3 days and the variable holding it. */
function world(): World {
  return {
    users: [{ id: 1, username: 'root', admin: true, tokens: [ADMIN] }],
    groups: [{ id: 10, path: 'bench' }],
    projects: Array.from({ length: TOKENS }, (_, index) => {
      const value = `glpat-bench-old-${String(index).padStart(6, '0')}`;
      return {
        id: index + 1,
        path: `p${index}`,
        namespace: 'bench',
        access_tokens: [{ token: value, name: 'deploy', scopes: ['read_api' as const], expires_at: 'now+3d' }],
        variables: [{ key: 'DEPLOY_TOKEN', value, masked: true, protected: true }],
      };
    }),
  };
}

export async function tokensBench(log: (line?: string) => void): Promise<{ rows: TokensRow[]; notes: string[] }> {
  log('\n## key_rotation: 1,000 project access tokens rotated and delivered\n');
  const sandbox = await startSandbox({ world: world() });
  const secrets = mkdtempSync(join(tmpdir(), 'fwbench-tokens-'));
  const prefix = benchPrefix('tokens');
  try {
    const text = [
      'version: 1',
      `gitlab: { url: "${sandbox.url}", token: "${ADMIN}", max_requests_per_minute: ${BUDGET} }`,
      `redis: { url: "${benchRedisUrl()}", prefix: "${prefix}" }`,
      'dry_run: false',
      'policies:',
      '  - name: tokens',
      '    type: key_rotation',
      '    interval: 1h',
      `    secrets_dir: "${secrets}"`,
      '    max_actions_per_run: 2000',
      '    project_access_tokens:',
      '      - { projects: ["bench/*"], names: ["^deploy$"], before_expiry: 14d, lifetime: 90d, deliver: [{ variable: { key: DEPLOY_TOKEN } }] }',
    ].join('\n');
    const config = parseConfig(text, 'tokens-bench.yml', { policyTypes: [keyRotationPolicy], env: {} });
    const { app } = await createApp(config, 'tokens-bench.yml', new AppLogger({ level: 'error' }), { http: false });
    sandbox.state.requestLog.length = 0;
    const started = performance.now();
    let result;
    try {
      result = await app.get(EngineService).runPass('tokens', 'act', 'inline');
    } finally {
      await app.close();
    }
    const wallMs = performance.now() - started;
    if (result.error) throw new Error(`the pass failed: ${result.error}`);

    const requests = sandbox.state.requestLog.map((entry) => Date.parse(entry.time));
    // The budget's windows are minutes aligned to the epoch (see rate-limit.ts): the busiest of them.
    const perMinute = new Map<number, number>();
    for (const time of requests)
      perMinute.set(Math.floor(time / 60_000), (perMinute.get(Math.floor(time / 60_000)) ?? 0) + 1);
    const busiest = Math.max(0, ...perMinute.values());
    const tokens = sandbox.state.accessTokens;
    const now = sandbox.state.clock.date();
    let delivered = 0;
    for (let id = 1; id <= TOKENS; id++) {
      const active = tokens
        .ofPlace('project', id)
        .filter((token) => token.name === 'deploy' && tokens.active(token, now));
      const variable = sandbox.state.ciVariables.of('project', id).find((entry) => entry.key === 'DEPLOY_TOKEN');
      if (active.length === 1 && variable?.value === active[0].value) delivered++;
    }
    const done = result.records.filter((record) => record.outcome === 'done').length;
    const perToken = requests.length / TOKENS;
    log(
      `${done} actions done in ${(wallMs / 1000).toFixed(0)} s; ${requests.length} requests (${perToken.toFixed(2)} a token), busiest budget minute ${busiest}`,
    );
    log(
      `${delivered} of ${TOKENS} variables hold their project's one active token; family revocations: ${tokens.familyRevocations.length}`,
    );
    const floorMs = (requests.length / BUDGET) * 60_000;
    return {
      rows: [
        {
          figure: `key_rotation: rotate and deliver ${TOKENS.toLocaleString('en')} project access tokens (glob over 1,000 projects, one variable each), default budget ${BUDGET}/min`,
          forgewarden: `${(wallMs / 60_000).toFixed(1)} min, ${perToken.toFixed(2)} requests a token; busiest budget minute ${busiest}/${BUDGET}; ${delivered}/${TOKENS} delivered, ${tokens.familyRevocations.length} family revocations`,
          peers: '',
          ratio: '',
          floor: `${(floorMs / 60_000).toFixed(1)} min (requests ÷ budget)`,
        },
      ],
      notes: [
        `Tokens: the daemon and the sandbox forge in one process, one pass with max_actions_per_run 2000; per token: the listing, the rotate precondition's and the step's reads, the rotate, the variable's write and read-back, and the new token read active.`,
      ],
    };
  } finally {
    await sandbox.close();
    rmSync(secrets, { recursive: true, force: true });
    await dropKeys(prefix);
  }
}
