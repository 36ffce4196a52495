import { SKIP, type Decision } from '../../engine/policy';
import { aCandidate, aConfig, aProjectSnapshot, type CandidateFields } from '../../../test/support/builders/jobs';
import {
  decideJobRetries,
  type JobRetryCandidate,
  type JobRetrySnapshot,
  RETRY,
  stormPlanFor,
} from './job-retry.decide';
import { type ProbeView, slotOf, withRetriesMade } from './job-retry.storm';
import { EMPTY_STORM_RECORD, type HeldJob, type Storm, type StormRecord } from './job-retry.storm-record';

const NOW = new Date('2025-06-02T12:00:00.000Z');
const MIN = 60_000;
const at = (msAgo: number) => new Date(NOW.getTime() - msAgo).toISOString();
const DOWN = 'runner_system_failure';

/** `perProject` failed jobs in each of `projects` projects (ids 1..n), finished a minute ago, pipeline = project * 100. */
function burst(projects: number, perProject: number, fields: CandidateFields = {}): JobRetrySnapshot['projects'] {
  return Array.from({ length: projects }, (_, p) => {
    const projectId = p + 1;
    const candidates: JobRetryCandidate[] = Array.from({ length: perProject }, (_, n) =>
      aCandidate({
        id: projectId * 1000 + n,
        name: `test-${n}`,
        pipeline_id: projectId * 100,
        project_id: projectId,
        finished_at: at(MIN),
        failure_reason: DOWN,
        ...fields,
      }),
    );
    return aProjectSnapshot(candidates, { project: `acme/p${projectId}`, projectId });
  });
}

const config = (storm: Record<string, unknown> = {}) => aConfig({ projects: ['acme/**'], storm });

function snapshot(
  projects: JobRetrySnapshot['projects'],
  record: StormRecord = EMPTY_STORM_RECORD,
  probe?: ProbeView,
): JobRetrySnapshot {
  return { projects, storm: { record, ...(probe ? { probe } : {}) } };
}

const retries = (decisions: readonly Decision[]) => decisions.filter((decision) => decision.action === RETRY);
const held = (decisions: readonly Decision[]) =>
  decisions.filter((decision) => decision.reason.startsWith('skip: held in the retry storm'));

function heldJob(project: number, n: number, fields: Partial<HeldJob> = {}): HeldJob {
  return {
    project,
    source: `acme/p${project}`,
    job_id: project * 1000 + n,
    pipeline_id: project * 100,
    job_name: `test-${n}`,
    sig: DOWN,
    since: NOW.getTime() - 10 * MIN,
    ...fields,
  };
}

function inStorm(storm: Partial<Storm>, heldJobs: HeldJob[], extra: Partial<StormRecord> = {}): StormRecord {
  return {
    ...EMPTY_STORM_RECORD,
    storm: {
      signature: DOWN,
      since: NOW.getTime() - 10 * MIN,
      why: 'test',
      probes: 1,
      next_probe_at: NOW.getTime() - MIN,
      last_failure_at: NOW.getTime() - 2 * MIN,
      ...storm,
    },
    held: heldJobs,
    ...extra,
  };
}

describe('job_retry storm control (decide)', () => {
  it('enters a storm at 50 failures with one signature over 10 projects: one probe, the rest held, its state first', () => {
    const decisions = decideJobRetries(config(), snapshot(burst(10, 5)), NOW);
    expect(decisions[0]).toMatchObject({ key: 'storm', action: SKIP });
    expect(decisions[0]?.reason).toMatch(
      /^storm entered on runner_system_failure \(50 failures with runner_system_failure within 5m over 10 projects\); 50 held/,
    );
    expect(retries(decisions)).toEqual([
      expect.objectContaining({
        key: '1:1000',
        reason: expect.stringMatching(/^probe 1 of the retry storm on runner_system_failure/),
      }),
    ]);
    expect(held(decisions)).toHaveLength(49);
  });

  it.each<[string, number, number, Record<string, unknown>]>([
    ['49 failures', 7, 7, {}],
    ['50 failures over 9 projects', 9, 6, {}],
    ['storm control off', 10, 10, { enabled: false }],
  ])('retries everything with %s', (_title, projects, perProject, storm) => {
    const decisions = decideJobRetries(
      config(storm),
      snapshot(
        burst(projects, perProject).map((p, i) =>
          i === 0 && projects === 7 ? { ...p, candidates: p.candidates.slice(0, 7) } : p,
        ),
      ),
      NOW,
    );
    expect(decisions.some((decision) => decision.key === 'storm')).toBe(false);
    expect(held(decisions)).toHaveLength(0);
    expect(retries(decisions).length).toBe(decisions.length);
  });

  it('counts failures of earlier passes within the window, not older ones, and only jobs the rules would retry', () => {
    const earlier = Array.from({ length: 45 }, (_, n) => ({
      key: `9:${n}`,
      at: NOW.getTime() - 2 * MIN,
      project: 9 + (n % 10),
      sig: DOWN,
    }));
    const old = earlier.map((arrival) => ({ ...arrival, at: NOW.getTime() - 6 * MIN }));
    expect(
      decideJobRetries(config(), snapshot(burst(5, 1), { ...EMPTY_STORM_RECORD, arrivals: earlier }), NOW)[0]?.key,
    ).toBe('storm');
    expect(
      decideJobRetries(config(), snapshot(burst(5, 1), { ...EMPTY_STORM_RECORD, arrivals: old }), NOW)[0]?.key,
    ).not.toBe('storm');
    // Counted and retried already, with nothing of that signature failing now: nothing to hold, no storm.
    const enough = Array.from({ length: 60 }, (_, n) => ({
      key: `9:${n}`,
      at: NOW.getTime() - 2 * MIN,
      project: 9 + (n % 10),
      sig: DOWN,
    }));
    expect(
      decideJobRetries(
        config(),
        snapshot(burst(5, 1, { failure_reason: 'script_failure' }), { ...EMPTY_STORM_RECORD, arrivals: enough }),
        NOW,
      )[0]?.key,
    ).not.toBe('storm');
    // Failures another rule skips (a stage not matched) are no storm of this policy's.
    const skipped = burst(10, 5, { stage: 'deploy' });
    expect(
      decideJobRetries(aConfig({ projects: ['acme/**'], match: { stages: ['^test$'] } }), snapshot(skipped), NOW)[0]
        ?.key,
    ).not.toBe('storm');
  });

  it('tells signatures apart: the failure_reason and the failure_log expression that matched', () => {
    const half = (reason: string) => burst(10, 3, { failure_reason: reason });
    expect(
      decideJobRetries(
        config(),
        snapshot(
          [...half(DOWN), ...half('script_failure')].map((p, i) => ({ ...p, projectId: i + 1, project: `acme/q${i}` })),
        ),
        NOW,
      )[0]?.key,
    ).not.toBe('storm');
    const withLog = aConfig({ projects: ['acme/**'], match: { failure_log: ['no space left', 'ECONNRESET'] } });
    const decisions = decideJobRetries(withLog, snapshot(burst(10, 5, { log: 'write: no space left on device' })), NOW);
    expect(decisions[0]?.reason).toContain('storm entered on runner_system_failure / log "no space left"');
  });

  it('in a storm, holds new failures with its signature and retries others as usual', () => {
    const record = inStorm({ probe: { slot: slotOf(1, 100, 'test-0'), job: 1000, at: NOW.getTime() - MIN } }, [
      heldJob(1, 0),
    ]);
    const projects = [
      aProjectSnapshot(
        [
          aCandidate({ id: 2001, pipeline_id: 200, project_id: 2, finished_at: at(MIN), failure_reason: DOWN }),
          aCandidate({
            id: 2002,
            name: 'lint',
            pipeline_id: 200,
            project_id: 2,
            finished_at: at(MIN),
            failure_reason: 'script_failure',
          }),
        ],
        { project: 'acme/p2', projectId: 2 },
      ),
    ];
    const decisions = decideJobRetries(config(), snapshot(projects, record, { state: 'running' }), NOW);
    expect(held(decisions).map((decision) => decision.key)).toEqual(['2:2001']);
    expect(retries(decisions).map((decision) => decision.key)).toEqual(['2:2002']);
    expect(decisions[0]?.reason).toMatch(/2 held, no retries spent on them; probe job 1000 running$/);
  });

  it('a probe that failed again with the signature is not counted, and the next waits for the backoff, on the same job', () => {
    const slot = slotOf(1, 100, 'test-0');
    const record = inStorm({ probes: 2, probe: { slot, job: 1000, at: NOW.getTime() - MIN } }, [
      heldJob(1, 0),
      heldJob(2, 0),
    ]);
    const view = snapshot([], record, { state: 'failed', job: 1005, sig: DOWN });
    const plan = stormPlanFor(config(), view, NOW);
    expect(plan?.storm).toMatchObject({
      last_failure_at: NOW.getTime(),
      next_probe_at: NOW.getTime() + 2 * MIN,
      last_probe: slot,
    });
    expect(plan?.storm?.probe).toBeUndefined();
    expect(plan?.record.free[slot]).toEqual({ n: 1, at: NOW.getTime() });
    expect(plan?.record.held.find((job) => job.project === 1)?.job_id).toBe(1005);
    expect(retries(decideJobRetries(config(), view, NOW))).toHaveLength(0);

    // Once the backoff is over, the same slot is probed again, its failed probe not counted against max_retries.
    const later = new Date(NOW.getTime() + 2 * MIN);
    const next = { ...view, storm: { record: plan?.record as StormRecord } };
    const probe = retries(decideJobRetries(aConfig({ projects: ['acme/**'], max_retries: 1 }), next, later));
    expect(probe).toEqual([
      expect.objectContaining({ key: '1:1005', params: expect.objectContaining({ free_retries: 1 }) }),
    ]);
  });

  it('ends when the probe succeeds: every held job read again is retried, round robin across projects', () => {
    const record = inStorm({ probe: { slot: slotOf(1, 100, 'test-0'), job: 1000, at: NOW.getTime() - MIN } }, [
      heldJob(1, 0),
      ...[1, 2, 3].flatMap((p) => [1, 2].map((n) => heldJob(p, n))),
    ]);
    const decisions = decideJobRetries(
      config(),
      snapshot(
        burst(3, 3).map((p) => ({ ...p, candidates: p.candidates.filter((c) => c.job.name !== 'test-0') })),
        record,
        { state: 'succeeded', job: 1009 },
      ),
      NOW,
    );
    expect(decisions[0]?.reason).toMatch(/^storm on runner_system_failure over: probe job 1009 succeeded/);
    expect(retries(decisions).map((decision) => decision.key)).toEqual([
      '1:1002',
      '2:2002',
      '3:3002',
      '1:1001',
      '2:2001',
      '3:3001',
    ]);
    const plan = stormPlanFor(config(), snapshot([], record, { state: 'succeeded', job: 1009 }), NOW);
    expect(plan?.record.storm).toBeUndefined();
    expect(plan?.record.held).toEqual([]);
  });

  it('never starts a second storm from the failures of one that ended, read again while they are retried', () => {
    const record = inStorm({ probe: { slot: slotOf(1, 100, 'test-0'), job: 1000, at: NOW.getTime() - MIN } }, [
      heldJob(1, 0),
    ]);
    const ended = stormPlanFor(config(), snapshot(burst(10, 5), record, { state: 'succeeded', job: 1009 }), NOW)
      ?.record as StormRecord;
    const later = new Date(NOW.getTime() + MIN);
    // The same 50 failures, deferred by the per-pass cap and read again: retried, no storm.
    const again = decideJobRetries(config(), snapshot(burst(10, 5), ended), later);
    expect(again.some((decision) => decision.key === 'storm')).toBe(false);
    expect(retries(again)).toHaveLength(50);
    // New failures after it ended count again.
    const fresh = burst(10, 5, { finished_at: new Date(later.getTime() - 1000).toISOString() }).map((p) => ({
      ...p,
      candidates: p.candidates.map((c) => ({ ...c, job: { ...c.job, id: c.job.id + 500 } })),
    }));
    expect(decideJobRetries(config(), snapshot(fresh, ended), later)[0]?.key).toBe('storm');
  });

  it('ends when its signature was not seen for calm_after, and not while probes fail', () => {
    const quiet = inStorm({ last_failure_at: NOW.getTime() - 16 * MIN }, [heldJob(1, 1)]);
    expect(stormPlanFor(config(), snapshot([], quiet), NOW)?.left?.why).toBe(
      'no failure with runner_system_failure for 15m',
    );
    const recent = inStorm({ last_failure_at: NOW.getTime() - 16 * MIN }, [heldJob(1, 1)], {
      arrivals: [{ key: '1:5', at: NOW.getTime() - 3 * MIN, project: 1, sig: DOWN }],
    });
    expect(stormPlanFor(config(), snapshot([], recent), NOW)?.left).toBeUndefined();
  });

  it('enters when most of its own recent retries failed again with one signature', () => {
    const made = Array.from({ length: 10 }, (_, n) => ({
      slot: slotOf(1, 100, `test-${n}`),
      job: 1000 + n,
      at: NOW.getTime() - 2 * MIN,
    }));
    const again = [
      aProjectSnapshot(
        Array.from({ length: 6 }, (_, n) =>
          aCandidate({
            id: 1100 + n,
            name: `test-${n}`,
            pipeline_id: 100,
            project_id: 1,
            attempts: 2,
            finished_at: at(MIN),
            failure_reason: DOWN,
          }),
        ),
        { project: 'acme/p1', projectId: 1 },
      ),
    ];
    const decisions = decideJobRetries(config(), snapshot(again, { ...EMPTY_STORM_RECORD, retries: made }), NOW);
    expect(decisions[0]?.reason).toContain('6 of the 10 retries within 5m failed again with runner_system_failure');
    const fewer = [aProjectSnapshot(again[0]?.candidates.slice(0, 5) ?? [], { project: 'acme/p1', projectId: 1 })];
    expect(decideJobRetries(config(), snapshot(fewer, { ...EMPTY_STORM_RECORD, retries: made }), NOW)[0]?.key).not.toBe(
      'storm',
    );
  });

  it('a webhook pass holds what the storm holds, and never starts one', () => {
    const record = inStorm({}, []);
    const event: JobRetrySnapshot = { projects: burst(1, 1), storm: { record, event: true } };
    expect(held(decideJobRetries(config(), event, NOW))).toHaveLength(1);
    const calm: JobRetrySnapshot = { projects: burst(20, 5), storm: { record: EMPTY_STORM_RECORD, event: true } };
    expect(held(decideJobRetries(config(), calm, NOW))).toHaveLength(0);
  });

  it('records the probe sent as in flight, and the other retries for the failed-again rule', () => {
    const plan = stormPlanFor(config(), snapshot(burst(10, 5)), NOW);
    expect(plan?.probe?.job_id).toBe(1000);
    const record = withRetriesMade(
      plan as NonNullable<typeof plan>,
      [{ key: '1:1000', slot: slotOf(1, 100, 'test-0'), job: 1000 }],
      NOW,
    );
    expect(record.storm).toMatchObject({ probes: 1, probe: { slot: slotOf(1, 100, 'test-0'), job: 1000 } });
    expect(record.held).toHaveLength(50);
    expect(record.retries).toEqual([]);
  });
});
