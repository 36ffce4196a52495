import { GitlabClient } from '../../src/gitlab';
import { createApp } from '../../src/bootstrap';
import { parseConfig } from '../../src/config/load';
import { AppLogger } from '../../src/logging/logger';
import { POLICY_TYPES } from '../../src/policies';
import { startSandbox, type RunningSandbox } from '../../src/sandbox';
import { USER_TOKEN } from '../support/world-builders';
import { MemoryStream } from '../support/memory-stream';
import { freePort } from '../support/redis-server';

describe('the client as the daemon wires it', () => {
  let sandbox: RunningSandbox;

  beforeAll(async () => {
    sandbox = await startSandbox();
  });

  afterAll(async () => {
    await sandbox.close();
  });

  it('talks to the configured forge with the configured token and counts every answer in /metrics', async () => {
    const httpPort = await freePort();
    const config = parseConfig(
      [
        'version: 1',
        `gitlab: { url: "${sandbox.url}", token: "${USER_TOKEN}", max_requests_per_minute: 100 }`,
        `redis: { url: "${process.env.REDIS_URL}", prefix: "it-gitlab-${httpPort}" }`,
        `http: { port: ${httpPort} }`,
      ].join('\n'),
      'test.yml',
      { policyTypes: POLICY_TYPES, env: {} },
    );
    const { app } = await createApp(config, 'test.yml', new AppLogger({ level: 'error', stream: new MemoryStream() }));
    try {
      const client = app.get(GitlabClient);
      const me = await client.users.current();
      expect(me.username).toBe('alice');
      await expect(client.jobs.show('acme/api', 999_999)).rejects.toMatchObject({ name: 'NotFoundError', status: 404 });

      const seen = sandbox.state.requestLog.filter((entry) => entry.path.startsWith('/api/v4/'));
      expect(seen.map((entry) => `${entry.method} ${entry.path} ${entry.status}`)).toEqual([
        'GET /api/v4/user 200',
        'GET /api/v4/projects/acme%2Fapi/jobs/999999 404',
      ]);
      expect(seen[0]?.headers['private-token']).toBe('[redacted]');

      const metrics = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
      expect(metrics).toContain('forgewarden_api_requests_total{method="GET",status="200"} 1');
      expect(metrics).toContain('forgewarden_api_requests_total{method="GET",status="404"} 1');
      expect(metrics).toMatch(
        /forgewarden_api_request_duration_seconds_count\{method="GET",route="projects\/:param\/jobs\/:param"\} 1/,
      );
    } finally {
      await app.close();
    }
  });
});
