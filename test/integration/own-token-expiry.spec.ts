import { createApp } from '../../src/bootstrap';
import { parseConfig } from '../../src/config/load';
import { ForgeHealth } from '../../src/forge/forge-health';
import { readTokenExpiry } from '../../src/forge/token-expiry';
import { AppLogger } from '../../src/logging/logger';
import { POLICY_TYPES } from '../../src/policies';
import type { World } from '../../src/sandbox';
import { waitUntil } from '../support/cli';
import { MemoryStream } from '../support/memory-stream';
import { dropKeys, freePort } from '../support/redis-server';
import { useSandboxClients } from '../support/sandbox-clients';
import { ADMIN_TOKEN, apiProject, baseWorld } from '../support/world-builders';

/**
 * The daemon's own token's expiry as the running daemon reports it: `forgewarden_token_expires_at_seconds` from
 * `GET /personal_access_tokens/self`, absent for a token without expiry, the console's overview line; and the kinds of
 * token that cannot read their own record.
 */

const EXPIRING = 'glpat-daemon-expiring-01';
const JOB_TOKEN = 'glcbt-running-job-token-1';

/** On the real clock (the console judges the expiry against it): the daemon's token expires in 20 days. */
function world(): World {
  const base = baseWorld({
    projects: [
      apiProject({ pipelines: [{ jobs: [{ name: 'deploy', status: 'running', token: JOB_TOKEN, user: 'root' }] }] }),
    ],
  });
  return {
    ...base,
    now: undefined,
    users: [
      ...(base.users ?? []),
      { username: 'forgewarden', tokens: [{ token: EXPIRING, name: 'daemon', expires_at: 'now+20d' }] },
    ],
  };
}

describe('the daemon’s own token’s expiry', () => {
  const forge = useSandboxClients(world);

  async function daemon(token: string) {
    const httpPort = await freePort();
    const prefix = `it-own-token-expiry-${httpPort}`;
    const config = parseConfig(
      [
        'version: 1',
        `gitlab: { url: "${forge.sandbox.url}", token: "${token}" }`,
        `redis: { url: "${process.env.REDIS_URL}", prefix: "${prefix}" }`,
        `http: { port: ${httpPort} }`,
      ].join('\n'),
      'test.yml',
      { policyTypes: POLICY_TYPES, env: {} },
    );
    const { app } = await createApp(config, 'test.yml', new AppLogger({ level: 'error', stream: new MemoryStream() }));
    const health = app.get(ForgeHealth);
    await health.check();
    health.watch();
    return {
      health,
      metrics: async () => (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text(),
      overview: async () => (await fetch(`http://127.0.0.1:${httpPort}/`)).text(),
      close: async () => {
        health.stopWatching();
        await app.close();
        await dropKeys(prefix);
      },
    };
  }

  it('exports when the token stops working, and shows it on the console as doctor judges it', async () => {
    const running = await daemon(EXPIRING);
    try {
      const expiry = forge.sandbox.state.accessTokens.byTokenValue(EXPIRING)!.expires_at!;
      await waitUntil('the expiry is exported', async () =>
        (await running.metrics()).includes('forgewarden_token_expires_at_seconds{token="active"}'),
      );
      expect(await running.metrics()).toContain(
        `forgewarden_token_expires_at_seconds{token="active"} ${Date.parse(`${expiry}T00:00:00Z`) / 1000}`,
      );
      await waitUntil('the console shows it', async () => (await running.overview()).includes('id="token-expiry"'));
      expect(await running.overview()).toMatch(
        new RegExp(
          `<span id="token-expiry" class="state partial">token expires on ${expiry}, in (19|20) days: rotate it before it lapses</span>`,
        ),
      );
      const self = forge.sandbox.state.requestLog.filter(
        (entry) => entry.path === '/api/v4/personal_access_tokens/self',
      );
      expect(self.length).toBeGreaterThanOrEqual(1);
    } finally {
      await running.close();
    }
  });

  it('exports nothing for a token that never expires, and says so on the console', async () => {
    const running = await daemon(ADMIN_TOKEN);
    try {
      await waitUntil('the console shows it', async () => (await running.overview()).includes('id="token-expiry"'));
      expect(await running.overview()).toContain('<span id="token-expiry">token does not expire</span>');
      expect(running.health.tokenExpiry()).toEqual({ state: 'never' });
      expect(await running.metrics()).not.toMatch(/^forgewarden_token_expires_at_seconds\{/m);
    } finally {
      await running.close();
    }
  });

  it('says why a token cannot read its own record, without failing', async () => {
    // A CI job token authenticates as its job: the forge does not let it read a personal access token's record.
    const job = await readTokenExpiry(forge.client(JOB_TOKEN, { tokenKind: 'job' }));
    expect(job).toEqual({
      state: 'unknown',
      reason:
        'GET /personal_access_tokens/self answered 401: this kind of token cannot read its own record (an OAuth or CI job token)',
    });
    // A forge before 15.5 has no `self`: a 404.
    await fetch(`${forge.sandbox.url}/__sandbox/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        method: 'GET',
        path: '/personal_access_tokens/self$',
        status: 404,
        body: { error: '404 Not Found' },
      }),
    });
    expect(await readTokenExpiry(forge.client(EXPIRING))).toMatchObject({
      state: 'unknown',
      reason: expect.stringContaining('a forge before GitLab 15.5') as string,
    });
    await fetch(`${forge.sandbox.url}/__sandbox/faults`, { method: 'DELETE' });
    await fetch(`${forge.sandbox.url}/__sandbox/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ method: 'GET', path: '/personal_access_tokens/self$', status: 503 }),
    });
    expect(await readTokenExpiry(forge.client(EXPIRING))).toMatchObject({ state: 'unknown', passing: true });
  });
});
