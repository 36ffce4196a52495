import type { INestApplicationContext } from '@nestjs/common';
import { EngineService } from '../../src/engine/engine.service';
import { AuditTrail } from '../../src/engine/stores/audit';
import { UnsettledTargets } from '../../src/engine/stores/unsettled';
import { MetricsService } from '../../src/metrics/metrics.service';
import { POLICY_TYPES } from '../../src/policies';
import { childEnv, runCli, writeTempFile } from '../support/cli';
import { useEngineHarness } from '../support/engine-harness';
import { ADMIN_TOKEN, baseWorld } from '../support/world-builders';

const RESET = 'Error: read ECONNRESET: connection reset by peer\n';

/** Two failed jobs the policy retries. */
const world = () => ({
  ...baseWorld({
    projects: [
      {
        id: 1,
        path: 'svc',
        namespace: 'acme',
        pipelines: [
          {
            id: 10,
            ref: 'main',
            jobs: [1, 2].map((n) => ({
              id: n,
              name: `flaky-${n}`,
              stage: 'test',
              status: 'failed' as const,
              finished_at: 'now-5m',
              log: RESET,
            })),
          },
        ],
      },
    ],
  }),
  now: undefined,
});

const POLICIES = [
  '  - name: flaky',
  '    type: job_retry',
  '    projects: [acme/svc]',
  '    interval: 1m',
  '    match: { failure_log: ["(?i)connection reset"] }',
];

describe('pause and resume: `forgewarden pause` holds every replica back from acting, until resumed', () => {
  const harness = useEngineHarness({ name: 'pause', world, policyTypes: POLICY_TYPES });
  const app = () => harness.app({ policies: POLICIES });
  const retries = () =>
    harness.sandbox.state.requestLog
      .filter((entry) => entry.method === 'POST' && entry.path.endsWith('/retry'))
      .map((entry) => entry.path);
  /** The same Redis and prefix as the harness's daemons, as an operator's copy of the file would have. */
  const policyFile = () =>
    writeTempFile(
      'pause.yml',
      [
        'version: 1',
        `gitlab: { url: "${harness.sandbox.url}", token: "${ADMIN_TOKEN}" }`,
        `redis: { url: "${process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'}", prefix: "${harness.prefix}" }`,
        'policies:',
        ...POLICIES,
      ].join('\n'),
    );
  const pass = (daemon: INestApplicationContext) => daemon.get(EngineService).runPass('flaky', 'act');

  it('paused: passes decide but send nothing and keep the targets open; across a restart; resumed: each retried once', async () => {
    const file = policyFile();
    const paused = await runCli(
      ['pause', 'flaky', '-c', file, '--reason', 'incident 4711: the runners are being replaced'],
      childEnv(),
    );
    expect(paused.code).toBe(0);
    expect(paused.stdout).toContain('flaky paused');

    // doctor says so, without failing for it.
    const doctor = await runCli(['doctor', '-c', file], childEnv());
    expect(doctor.code).toBe(0);
    expect(doctor.stdout).toMatch(
      /^! policy flaky: paused since \S+ by .+ \(command line\): incident 4711: the runners are being replaced; it acts again after "forgewarden resume flaky"$/m,
    );

    let daemon = await app();
    // `plan` and the console's explain say so.
    const planned = await daemon.get(EngineService).runPass('flaky', 'plan');
    expect(planned.paused).toMatchObject({ reason: 'incident 4711: the runners are being replaced' });
    expect(planned.decisions.map((decision) => decision.action)).toEqual(['retry', 'retry']);
    const first = await pass(daemon);
    expect(first.error).toBeUndefined();
    expect(first.records.map((record) => record.outcome)).toEqual(['paused', 'paused']);
    expect(first.records[0].detail).toMatch(
      /^paused since .* \(incident 4711: the runners are being replaced\): would retry acme\/svc job 2 \(flaky-2\)$/,
    );
    expect(retries()).toEqual([]);
    // Open, so that resuming takes them up whatever the policy's marks say.
    expect((await daemon.get(UnsettledTargets).read('flaky')).map((target) => target.outcome)).toEqual([
      'paused',
      'paused',
    ]);
    expect(await daemon.get(MetricsService).render()).toContain('forgewarden_policy_paused{policy="flaky"} 1');

    // A restart does not end the pause.
    await harness.close(daemon);
    daemon = await app();
    await pass(daemon);
    expect(retries()).toEqual([]);

    const resumed = await runCli(['resume', 'flaky', '-c', file], childEnv());
    expect(resumed).toMatchObject({ code: 0 });
    expect(resumed.stdout).toContain('flaky resumed (it was paused since');
    const after = await pass(daemon);
    expect(after.records.map((record) => record.outcome)).toEqual(['done', 'done']);
    await pass(daemon);
    expect(retries().sort()).toEqual(['/api/v4/projects/1/jobs/1/retry', '/api/v4/projects/1/jobs/2/retry']);
    expect(await daemon.get(MetricsService).render()).toContain('forgewarden_policy_paused{policy="flaky"} 0');

    // Both changes are in the audit trail, with who and why.
    const trail = (await daemon.get(AuditTrail).read(0)).filter(
      (entry) => entry.action === 'pause' || entry.action === 'resume',
    );
    expect(trail.map((entry) => [entry.action, entry.policy, entry.reason])).toEqual([
      ['pause', 'flaky', 'incident 4711: the runners are being replaced'],
      ['resume', 'flaky', 'resumed'],
    ]);
    expect(trail[0].detail).toMatch(/^by .+ \(command line\)$/);
  });

  it('a pause made while a pass runs holds from its next action on', async () => {
    const daemon = await app();
    // The sandbox holds the pass's first retry until the pause is made, then lets it go: the second is then not sent.
    const engine = daemon.get(EngineService);
    const file = policyFile();
    harness.sandbox.state.requestLog.length = 0;
    const holds = harness.sandbox.state.holds;
    const { id } = holds.add({ method: 'POST', path: '/retry$' });
    const running = engine.runPass('flaky', 'act');
    await holds.reached(id);
    expect((await runCli(['pause', 'flaky', '-c', file, '--reason', 'stop now'], childEnv())).code).toBe(0);
    holds.release(id);
    const result = await running;
    expect(result.records.map((record) => record.outcome)).toEqual(['done', 'paused']);
    expect(retries()).toHaveLength(1);
  });

  it('says what is wrong with the command: no reason, an unknown policy; resuming a running policy says so', async () => {
    const file = policyFile();
    const noReason = await runCli(['pause', 'flaky', '-c', file], childEnv());
    expect(noReason.code).toBe(2);
    expect(noReason.stderr).toContain('say why with --reason TEXT');
    const unknown = await runCli(['pause', 'nope', '-c', file, '--reason', 'x'], childEnv());
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no policy named "nope"; configured: flaky');
    const notPaused = await runCli(['resume', 'flaky', '-c', file], childEnv());
    expect(notPaused).toMatchObject({ code: 0, stdout: 'flaky was not paused\n' });
    expect(await harness.redis.hlen(`${harness.prefix}:paused`)).toBe(0);
  });
});
