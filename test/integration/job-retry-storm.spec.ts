import type { INestApplicationContext } from '@nestjs/common';
import { ConsoleReader } from '../../src/console/console-reader';
import { AuditTrail } from '../../src/engine/stores/audit';
import { MetricsService } from '../../src/metrics/metrics.service';
import { POLICY_TYPES } from '../../src/policies';
import type { World } from '../../src/sandbox';
import { baseWorld, type JobInput, type ProjectInput } from '../support/world-builders';
import { waitUntil } from '../support/cli';
import { useEngineHarness } from '../support/engine-harness';

const PROJECTS = 30;
const JOBS_PER_PROJECT = 10;
const OUTAGE_LOG = 'Running on runner-7...\nERROR: Job failed (system failure): no space left on device\n';

/** 30 projects, each with one pipeline of 10 jobs that failed a couple of minutes ago with the same signature. */
function world(): World {
  const projects: ProjectInput[] = Array.from({ length: PROJECTS }, (_, p) => {
    const index = p + 1;
    const jobs: JobInput[] = Array.from({ length: JOBS_PER_PROJECT }, (_, n) => ({
      id: index * 1000 + n,
      name: `test-${n}`,
      stage: 'test',
      status: 'failed',
      failure_reason: 'runner_system_failure',
      finished_at: 'now-2m',
      log: OUTAGE_LOG,
    }));
    return { id: index, path: `svc-${index}`, namespace: 'acme', pipelines: [{ id: index * 100, ref: 'main', jobs }] };
  });
  // No fixed `now`: the engine reads the real clock, so the sandbox must too.
  return { ...baseWorld({ projects }), now: undefined };
}

/** One pipeline and job name: what max_retries counts for, and what must end in one successful attempt. */
const slot = (project: number, n: number) => `${project}:${project * 100}:test-${n}`;

describe('job_retry storm control against the sandbox with a real Redis', () => {
  const harness = useEngineHarness({ name: 'job-retry-storm', world, policyTypes: POLICY_TYPES });

  function app(): Promise<INestApplicationContext> {
    return harness.app({
      gitlab: 'max_requests_per_minute: 100000, timeout: 30s',
      policies: [
        '  - name: storm',
        '    type: job_retry',
        '    projects: ["acme/*"]',
        '    interval: 1m',
        '    match: { failure_log: ["no space left on device", "(?i)connection reset"] }',
        '    max_retries: 1',
        '    max_actions_per_run: 500',
        // Probes a second or two apart, so the test sees several while the runners are down.
        '    storm: { probe_backoff: 1s, probe_backoff_max: 2s }',
      ],
    });
  }

  const retried = () =>
    harness.sandbox.state.requestLog
      .filter((entry) => entry.method === 'POST' && entry.path.endsWith('/retry'))
      .map((entry) => Number(/jobs\/(\d+)\/retry$/.exec(entry.path)?.[1]));
  const slotOfJob = (jobId: number) => {
    const job = harness.sandbox.state.jobs.get(jobId);
    return job ? `${job.project_id}:${job.pipeline_id}:${job.name}` : `gone ${jobId}`;
  };
  const gauge = async (engineApp: INestApplicationContext) => {
    const line = /^forgewarden_retry_storm\{policy="storm"\} (\d+)$/m.exec(
      await engineApp.get(MetricsService).render(),
    );
    return line ? Number(line[1]) : undefined;
  };

  it('holds 300 failures of a runner outage, spends a handful of probes while it lasts, then retries each once', async () => {
    harness.sandbox.state.runners.state = 'down';
    const engineApp = await app();
    const gauges: Array<number | undefined> = [];

    const first = await harness.pass(engineApp, 'storm');
    gauges.push(await gauge(engineApp));
    expect(first.decisions[0]).toMatchObject({ key: 'storm', action: 'skip' });
    expect(first.decisions[0]?.reason).toMatch(
      /^storm entered on runner_system_failure \/ log "no space left on device" \(300 failures .* over 30 projects\); 300 held/,
    );
    expect(first.records.filter((record) => record.outcome === 'done')).toHaveLength(1);
    expect(retried()).toHaveLength(1);
    const notices = async () =>
      (await engineApp.get(ConsoleReader).overview()).policies.find((row) => row.name === 'storm')?.notices;
    expect(await notices()).toEqual([
      'in a retry storm: failed jobs are held, not retried, while one probe job at a time is',
    ]);

    // While the runners stay down: probes only, one at a time, each after its backoff, all on the same job's slot.
    await waitUntil(
      'three probes failed while the runners are down',
      async () => {
        await harness.pass(engineApp, 'storm');
        gauges.push(await gauge(engineApp));
        return retried().length >= 3;
      },
      60_000,
    );
    const whileDown = retried();
    expect(whileDown).toHaveLength(3);
    expect(new Set(whileDown.map(slotOfJob)).size).toBe(1);
    for (const jobId of whileDown) expect(harness.sandbox.state.jobs.get(jobId)?.retried).toBe(true);

    // `plan` shows the storm, the jobs held and why.
    const plan = await harness.pass(engineApp, 'storm', 'plan');
    expect(plan.decisions[0]?.reason).toMatch(
      /^storm since .* on runner_system_failure .*; 300 held, no retries spent on them/,
    );

    harness.sandbox.state.runners.state = 'up';
    await waitUntil(
      'every held job was retried once the runners were back',
      async () => {
        await harness.pass(engineApp, 'storm');
        gauges.push(await gauge(engineApp));
        return retried().length >= whileDown.length + PROJECTS * JOBS_PER_PROJECT;
      },
      120_000,
    );
    // One more pass: nothing is left to retry, and the storm stays over.
    const after = await harness.pass(engineApp, 'storm');
    gauges.push(await gauge(engineApp));
    expect(after.records.filter((record) => record.outcome === 'done')).toHaveLength(0);
    expect(await notices()).toEqual([]);

    const all = retried();
    // No job retried twice, and every one of the 300 ends in a successful retry.
    expect(new Set(all).size).toBe(all.length);
    expect(all).toHaveLength(whileDown.length + PROJECTS * JOBS_PER_PROJECT);
    const jobs = [...harness.sandbox.state.jobs.values()];
    for (let project = 1; project <= PROJECTS; project += 1) {
      for (let n = 0; n < JOBS_PER_PROJECT; n += 1) {
        const attempts = jobs.filter((job) => `${job.project_id}:${job.pipeline_id}:${job.name}` === slot(project, n));
        const newest = attempts.reduce((a, b) => (b.id > a.id ? b : a));
        expect({ slot: slot(project, n), status: newest.status }).toEqual({
          slot: slot(project, n),
          status: 'success',
        });
        // The probe's slot carries the outage's failed attempts; every other slot was retried exactly once.
        if (slot(project, n) !== slotOfJob(whileDown[0])) expect(attempts).toHaveLength(2);
      }
    }

    // The gauge went 1 while the storm lasted, then 0; the audit trail says when it began and ended.
    expect(gauges[0]).toBe(1);
    expect(gauges.at(-1)).toBe(0);
    expect(gauges.indexOf(0)).toBeGreaterThan(gauges.lastIndexOf(1));
    const storms = (await engineApp.get(AuditTrail).read(0)).filter((entry) => entry.action === 'storm');
    expect(storms.map((entry) => entry.outcome)).toEqual(['entered', 'left']);
    expect(storms[1]?.reason).toMatch(/^probe job \d+ succeeded$/);
  }, 240_000);
});
