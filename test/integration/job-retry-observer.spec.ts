import type { PolicyContext } from '../../src/engine/policy';
import { decideJobRetries, type JobRetrySnapshot } from '../../src/policies/job-retry/job-retry.decide';
import {
  commitJobRetries,
  observeJobRetries,
  observeJobRetryEvent,
  watermarkKey,
} from '../../src/policies/job-retry/job-retry.observer';
import { jobRetryType } from '../../src/policies/job-retry/job-retry.type';
import type { JobRetryConfig } from '../../src/policies/job-retry/job-retry.schema';
import type { RequestLogEntry } from '../../src/sandbox/state';
import { aConfig } from '../support/builders/jobs';
import { usePolicySandbox } from '../support/policy-sandbox';
import { call } from '../support/sandbox-http';
import {
  aProject,
  baseWorld,
  type JobInput,
  type PipelineInput,
  type ProjectInput,
  USER_TOKEN,
} from '../support/world-builders';

const failed = (id: number, name: string, fields: Partial<JobInput> = {}): JobInput => ({
  id,
  name,
  stage: 'test',
  status: 'failed',
  finished_at: 'now-10m',
  log: `${name} failed: assertion failed\n`,
  ...fields,
});

const pipeline = (id: number, jobs: JobInput[], fields: Partial<PipelineInput> = {}): PipelineInput => ({
  id,
  jobs,
  ...fields,
});

describe('job_retry observer, against the sandbox forge', () => {
  // Each block below seeds its own projects.
  const forge = usePolicySandbox({ token: USER_TOKEN });
  /** Starts the sandbox with project acme/api (1) holding `pipelines`, and `others`. */
  const start = (pipelines: PipelineInput[], ...others: ProjectInput[]): Promise<void> =>
    forge.start(baseWorld({ projects: [aProject('api', { id: 1, pipelines }), ...others] }));
  const context = (mode: PolicyContext['mode'] = 'act'): PolicyContext => forge.context({ mode });

  /** One acting pass as the engine runs it: observe, then commit. */
  async function pass(config: JobRetryConfig): Promise<JobRetrySnapshot> {
    const ctx = context();
    const snapshot = await observeJobRetries(config, ctx);
    await commitJobRetries(config, snapshot, ctx);
    return snapshot;
  }

  const requests = (): RequestLogEntry[] => forge.sandbox.state.requestLog;
  const requested = (pattern: RegExp): string[] =>
    requests()
      .filter((r) => pattern.test(r.path))
      .map((r) => r.path);
  const tracesRequested = (): number[] =>
    requested(/\/trace$/)
      .map((path) => Number(/jobs\/(\d+)\/trace$/.exec(path)?.[1]))
      .sort((a, b) => a - b);
  const pipelinesRequested = (): number[] =>
    requested(/\/pipelines\/\d+\/jobs$/)
      .map((path) => Number(/pipelines\/(\d+)\/jobs$/.exec(path)?.[1]))
      .sort((a, b) => a - b);
  const candidateIds = (snapshot: JobRetrySnapshot): number[][] =>
    snapshot.projects.map((p) => p.candidates.map((c) => c.job.id));
  const clearRequests = (): void => {
    forge.sandbox.state.requestLog.length = 0;
  };

  describe('a world with every kind of failure', () => {
    const fields = {
      projects: ['acme/api', 2],
      match: { job_names: ['^test'], failure_log: ['(?i)connection reset', 'ETIMEDOUT'] },
      max_retries: 2,
    };
    const config = aConfig(fields);

    beforeEach(async () => {
      await start(
        [
          pipeline(90, [failed(91, 'test-ancient', { finished_at: 'now-3h' })]),
          pipeline(100, [
            { id: 101, name: 'build', stage: 'build', status: 'success', log: 'built\n' },
            failed(102, 'test-unit', { log: 'curl: (56) Connection reset by peer\n' }),
            failed(103, 'lint', { log: 'connection reset\n' }),
            failed(104, 'test-flaky', { allow_failure: true, log: 'connection reset\n' }),
          ]),
          // A child pipeline of 100 with a job of the same name: its own pipeline, not an attempt of job 102.
          pipeline(105, [{ id: 106, name: 'test-unit', status: 'success', log: 'ok\n' }], { parent_pipeline: 100 }),
          // Retried once by a person (alice): that retry counts.
          pipeline(110, [
            failed(111, 'test-e2e', { retried: true, finished_at: 'now-40m', log: 'ETIMEDOUT\n' }),
            failed(112, 'test-e2e', { user: 'alice', finished_at: 'now-20m', log: 'connect ETIMEDOUT\n' }),
          ]),
          // Retried twice already (by a person and before): nothing left.
          pipeline(120, [
            failed(121, 'test-int', { retried: true, finished_at: 'now-50m', log: 'ETIMEDOUT\n' }),
            failed(122, 'test-int', { retried: true, user: 'alice', finished_at: 'now-30m', log: 'ETIMEDOUT\n' }),
            failed(123, 'test-int', { user: 'alice', finished_at: 'now-15m', log: 'ETIMEDOUT\n' }),
          ]),
          pipeline(130, [
            failed(131, 'test-erased', { log: 'connection reset\n' }),
            failed(132, 'test-real-bug', { log: 'expected 1, got 2\n' }),
          ]),
        ],
        aProject('web', {
          id: 2,
          pipelines: [pipeline(200, [failed(201, 'test-web', { finished_at: 'now-5m', log: 'ETIMEDOUT\n' })])],
        }),
      );
      await forge.client.jobs.erase('acme/api', 131);
      clearRequests();
    });

    it('sees the failures within lookback, in the configured order, with the numeric project ids', async () => {
      const snapshot = await pass(config);
      expect(snapshot.projects.map((p) => [p.project, p.projectId])).toEqual([
        ['acme/api', 1],
        [2, 2],
      ]);
      expect(candidateIds(snapshot)).toEqual([[132, 131, 123, 122, 121, 112, 111, 104, 103, 102], [201]]);
    });

    it('looks further back with a longer lookback', async () => {
      const snapshot = await pass(aConfig({ ...fields, lookback: '4h' }));
      expect(candidateIds(snapshot)[0]).toContain(91);
    });

    it('reads pipelines only for jobs that passed the cheap checks, once each, and logs only for jobs that can still be retried', async () => {
      await pass(config);
      // 103 (lint: name not matched) and 104 (allowed to fail) cost nothing beyond the listing.
      expect(pipelinesRequested()).toEqual([100, 110, 120, 130, 200]);
      // 111, 121, 122 (newer attempts exist) and 123 (retries used up) get no log read either.
      expect(tracesRequested()).toEqual([102, 112, 131, 132, 201]);
      expect(requests().every((r) => r.method === 'GET')).toBe(true);
    });

    it('gives decide what it needs: attempts by anyone, newer attempts, gone and unmatched logs', async () => {
      const snapshot = await pass(config);
      const byId = new Map(snapshot.projects.flatMap((p) => p.candidates).map((c) => [c.job.id, c]));
      expect(byId.get(102)).toMatchObject({ attempts: 1, newestAttemptId: 102, log: { state: 'found' } });
      expect(byId.get(112)).toMatchObject({
        attempts: 2,
        newestAttemptId: 112,
        log: { state: 'found', text: 'connect ETIMEDOUT\n' },
      });
      expect(byId.get(111)).toMatchObject({ attempts: 2, newestAttemptId: 112, log: { state: 'not_fetched' } });
      expect(byId.get(123)).toMatchObject({ attempts: 3, newestAttemptId: 123, log: { state: 'not_fetched' } });
      expect(byId.get(131)).toMatchObject({ log: { state: 'gone' } });
      expect(byId.get(103)).toEqual({ job: expect.objectContaining({ id: 103 }), log: { state: 'not_fetched' } });

      const reasons = Object.fromEntries(decideJobRetries(config, snapshot, new Date()).map((d) => [d.key, d.reason]));
      expect(reasons).toEqual({
        '1:132': 'skip: log did not match',
        '1:131': 'skip: log is gone (erased or expired)',
        '1:123': 'skip: already retried 2 times',
        '1:122': 'skip: newer attempt 123 exists',
        '1:121': 'skip: newer attempt 123 exists',
        '1:112': 'retry 2 of 2: log matched "ETIMEDOUT"',
        '1:111': 'skip: newer attempt 112 exists',
        '1:104': 'skip: allowed to fail',
        '1:103': 'skip: job name "lint" not matched',
        '1:102': 'retry 1 of 2: log matched "(?i)connection reset"',
        '2:201': 'retry 1 of 2: log matched "ETIMEDOUT"',
      });
    });

    it('reports a pipeline deleted since the listing as gone, and reads no log for its jobs', async () => {
      const fault = await call(forge.sandbox.url, '/__sandbox/faults', {
        method: 'POST',
        body: { method: 'GET', path: '/pipelines/100/jobs$', status: 404, body: { message: '404 Not found' } },
      });
      expect(fault.status).toBe(201);
      const snapshot = await pass(config);
      const job102 = snapshot.projects[0].candidates.find((c) => c.job.id === 102);
      expect(job102).toEqual({ job: expect.objectContaining({ id: 102 }), log: { state: 'not_fetched' } });
      expect(tracesRequested()).not.toContain(102);
      expect(decideJobRetries(config, snapshot, new Date()).find((d) => d.key === '1:102')?.reason).toBe(
        'skip: pipeline is gone',
      );
    });

    it('reads no log at all without failure_log', async () => {
      await pass(aConfig({ projects: ['acme/api', 2], match: { job_names: ['^test'] } }));
      expect(tracesRequested()).toEqual([]);
    });

    it('costs exactly one request per project on a poll with nothing new', async () => {
      await pass(config);
      clearRequests();
      const snapshot = await pass(config);
      expect(requests().map((r) => `${r.method} ${r.path}`)).toEqual([
        'GET /api/v4/projects/acme%2Fapi/jobs',
        'GET /api/v4/projects/2/jobs',
      ]);
      expect(candidateIds(snapshot)).toEqual([[], []]);
    });

    it('stores the watermark only in an acting pass, and then the newest job seen', async () => {
      const plan = context('plan');
      await observeJobRetries(config, plan);
      expect(forge.state.values.size).toBe(0);

      await pass(config);
      expect(JSON.parse(forge.state.values.get(watermarkKey('acme/api')) ?? 'null')).toMatchObject({ id: 132 });
      expect(JSON.parse(forge.state.values.get(watermarkKey(2)) ?? 'null')).toMatchObject({ id: 201 });
    });
  });

  describe('after a retry', () => {
    const config = aConfig({ projects: ['acme/api'], match: { failure_log: ['(?i)connection reset'] } });

    // Job ids 1..3 without gaps: the sandbox gives a new job the lowest free id, and the forge's ids only grow.
    beforeEach(async () => {
      await start([
        pipeline(1, [
          { id: 1, name: 'build', stage: 'build', status: 'success', log: 'built\n' },
          failed(2, 'test-unit', { log: 'Connection reset by peer\n' }),
          failed(3, 'test-other', { log: 'assertion failed\n' }),
        ]),
      ]);
    });

    it('the retry action makes the new job, and a new failure of it is the next attempt', async () => {
      const first = await pass(config);
      const decisions = decideJobRetries(config, first, new Date());
      expect(decisions.map((d) => d.action)).toEqual(['skip', 'retry']);

      const retried = await jobRetryType.actions.retry.run(decisions[1].params, context());
      const newId = Number(/^new job (\d+)$/.exec(retried?.detail ?? '')?.[1]);
      expect(newId).toBeGreaterThan(3);
      expect(forge.sandbox.state.jobs.get(newId)).toMatchObject({
        name: 'test-unit',
        pipeline_id: 1,
        status: 'pending',
      });
      expect(forge.sandbox.state.jobs.get(2)?.retried).toBe(true);

      const moved = await call(forge.sandbox.url, `/__sandbox/jobs/${newId}`, {
        method: 'POST',
        body: { status: 'failed', log: 'connection reset\n' },
      });
      expect(moved.status).toBe(200);
      const snapshot = await pass(config);
      expect(candidateIds(snapshot)).toEqual([[newId]]);
      expect(decideJobRetries(config, snapshot, new Date())).toEqual([
        expect.objectContaining({
          action: 'retry',
          key: `1:${newId}`,
          reason: 'retry 2 of 2: log matched "(?i)connection reset"',
        }),
      ]);
    });
  });

  describe('the watermark', () => {
    const config = aConfig({ projects: ['acme/api'], match: { job_names: ['^test'] } });

    beforeEach(async () => {
      await start([
        pipeline(10, [failed(11, 'test-old', { finished_at: 'now-3h' })]),
        // A long job with a smaller id, still running when the newer job 31 fails.
        pipeline(20, [
          { id: 21, name: 'test-long', stage: 'test', status: 'running', started_at: 'now-2h', log: 'running\n' },
        ]),
        pipeline(30, [failed(31, 'test-unit', { finished_at: 'now-10m' })]),
      ]);
    });

    it('picks up a job with an older id that failed after the watermark, within the safety margin', async () => {
      expect(candidateIds(await pass(config))).toEqual([[31]]);

      await call(forge.sandbox.url, '/__sandbox/clock', { method: 'POST', body: { advance: '5m' } });
      const moved = await call(forge.sandbox.url, '/__sandbox/jobs/21', { method: 'POST', body: { status: 'failed' } });
      expect(moved.status).toBe(200);
      clearRequests();

      const snapshot = await pass(config);
      // 21 is listed after 31 (ids descending) and is new; 31 was seen; 11 is far behind the margin.
      expect(candidateIds(snapshot)).toEqual([[21]]);
      expect(requested(/\/projects\/acme%2Fapi\/jobs$/)).toHaveLength(1);
      expect(JSON.parse(forge.state.values.get(watermarkKey('acme/api')) ?? 'null')).toEqual({
        id: 31,
        finished_at: forge.sandbox.state.jobs.get(21)?.finished_at,
      });
    });

    it('treats a damaged watermark as none: the next poll is a first poll', async () => {
      await forge.state.set(watermarkKey('acme/api'), 'not json');
      expect(candidateIds(await pass(config))).toEqual([[31]]);
    });

    it('moves past every job, and reads a job an earlier pass left open again by id, however old', async () => {
      const first = await pass(config);
      expect(candidateIds(first)).toEqual([[31]]);
      expect(JSON.parse(forge.state.values.get(watermarkKey('acme/api')) ?? 'null')).toMatchObject({ id: 31 });
      clearRequests();

      // Job 31's retry failed (or was deferred): the engine hands it back as unsettled, with the decision's params.
      const [decision] = decideJobRetries(config, first, new Date());
      const ctx = {
        ...context(),
        unsettled: [
          {
            key: decision.key,
            action: decision.action,
            target: decision.target,
            params: decision.params,
            outcome: 'failed',
            since: '',
          },
        ],
      };
      const again = await observeJobRetries(config, ctx);
      expect(candidateIds(again)).toEqual([[31]]);
      expect(requested(/\/projects\/1\/jobs\/31$/)).toHaveLength(1);
      expect(decideJobRetries(config, again, new Date())).toEqual([
        expect.objectContaining({ action: 'retry', key: '1:31' }),
      ]);
    });

    it('drops an open job that is gone or no longer failed, and one of a project the policy no longer covers', async () => {
      const [decision] = decideJobRetries(config, await pass(config), new Date());
      const open = (params: Record<string, string | number>) => ({
        key: 'k',
        action: 'retry',
        target: 't',
        params: { ...decision.params, ...params },
        outcome: 'failed',
        since: '',
      });
      const ctx = {
        ...context(),
        unsettled: [open({ job_id: 999 }), open({ job_id: 21 }), open({ source: 'acme/elsewhere' })],
      };
      // 999 does not exist; 21 is still running; the third belongs to a project not listed any more.
      expect(candidateIds(await observeJobRetries(config, ctx))).toEqual([[]]);
    });
  });

  describe("a webhook's job event", () => {
    beforeEach(() =>
      start([pipeline(40, [failed(41, 'test-unit', { log: 'connection reset\n' }), failed(42, 'lint')])]),
    );
    const event = (jobId: number, jobName: string) =>
      ({
        kind: 'job',
        project: { id: 1, path: 'acme/api' },
        jobId,
        jobName,
        status: 'failed',
        pipelineId: 40,
      }) as const;
    const config = aConfig({
      projects: ['acme/api'],
      match: { job_names: ['^test'], failure_log: ['(?i)connection reset'] },
    });

    it('reads the job back in its pipeline, which decide needs for its attempts: never the job alone', async () => {
      const snapshot = await observeJobRetryEvent(config, event(41, 'test-unit'), context());
      expect(snapshot && candidateIds(snapshot)).toEqual([[41]]);
      expect(pipelinesRequested()).toEqual([40]);
      expect(requested(/\/jobs\/41$/)).toEqual([]);
      expect(decideJobRetries(config, snapshot!, new Date())).toEqual([
        expect.objectContaining({ action: 'retry', key: '1:41' }),
      ]);
    });

    it('reads the job alone when its name already rules it out, as its pipeline may be pages long', async () => {
      const snapshot = await observeJobRetryEvent(config, event(42, 'lint'), context());
      expect(snapshot && candidateIds(snapshot)).toEqual([[42]]);
      expect(requested(/\/jobs\/42$/)).toHaveLength(1);
      expect(pipelinesRequested()).toEqual([]);
      expect(decideJobRetries(config, snapshot!, new Date())).toEqual([
        expect.objectContaining({ action: 'skip', reason: 'skip: job name "lint" not matched' }),
      ]);
    });
  });
});
