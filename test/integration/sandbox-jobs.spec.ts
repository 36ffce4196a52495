import { startSandbox, type RunningSandbox } from '../../src/sandbox';
import { apiClient, call } from '../support/sandbox-http';
import { ADMIN_TOKEN, aProject, baseWorld, manyJobs, OUTSIDER_TOKEN, USER_TOKEN } from '../support/world-builders';

interface Job {
  id: number;
  name: string;
  status: string;
  started_at: string | null;
  finished_at: string | null;
  duration: number | null;
  erased_at: string | null;
  artifacts: unknown[];
  user: { username: string } | null;
  pipeline: { id: number; status: string };
}

describe('sandbox forge: jobs', () => {
  let sandbox: RunningSandbox;
  const user = (): ReturnType<typeof apiClient> => apiClient(sandbox.url, USER_TOKEN);

  beforeEach(async () => {
    sandbox = await startSandbox({
      world: baseWorld({
        projects: [
          aProject('api', {
            id: 1,
            pipelines: [
              {
                id: 100,
                jobs: [
                  {
                    id: 11,
                    name: 'build',
                    stage: 'build',
                    status: 'success',
                    log: 'built\n',
                    artifacts: [{ file_type: 'archive', size: 10, filename: 'a.zip', file_format: 'zip' }],
                  },
                  { id: 12, name: 'test', stage: 'test', status: 'failed', log: 'connection reset by peer\n' },
                  { id: 13, name: 'deploy', stage: 'deploy', status: 'manual' },
                  { id: 14, name: 'slow', stage: 'test', status: 'running', token: 'job-token-14', log: 'running\n' },
                  { id: 15, name: 'old-test', stage: 'test', status: 'failed', retried: true, log: 'x\n' },
                ],
                bridges: [{ id: 16, name: 'downstream', status: 'success', downstream_pipeline: 101 }],
              },
              { id: 101, parent_pipeline: 100, jobs: [{ id: 20, name: 'child', status: 'success', log: 'c\n' }] },
            ],
          }),
          aProject('bulk', { id: 2, pipelines: [{ id: 200, jobs: manyJobs(250) }] }),
        ],
      }),
    });
  });
  afterEach(() => sandbox.close());

  it('lists project jobs newest first, filtered by scope or scope[]', async () => {
    const all = await user()('/projects/1/jobs');
    expect((all.json as Job[]).map((j) => j.id)).toEqual([20, 15, 14, 13, 12, 11]);
    const failed = await user()('/projects/1/jobs?scope=failed');
    expect((failed.json as Job[]).map((j) => j.id)).toEqual([15, 12]);
    const several = await user()('/projects/1/jobs?scope[]=success&scope[]=manual');
    expect((several.json as Job[]).map((j) => j.id)).toEqual([20, 13, 11]);
  });

  it('pages through 250 jobs', async () => {
    const ids: number[] = [];
    for (let page = 1; page <= 3; page += 1) {
      const response = await user()(`/projects/2/jobs?per_page=100&page=${page}`);
      ids.push(...(response.json as Job[]).map((j) => j.id));
    }
    expect(ids).toHaveLength(250);
    expect(new Set(ids).size).toBe(250);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
  });

  it('lists pipeline jobs with child pipelines, without retried ones unless asked', async () => {
    const latest = await user()('/projects/1/pipelines/100/jobs');
    expect((latest.json as Job[]).map((j) => j.id)).toEqual([20, 14, 13, 12, 11]);
    const withRetried = await user()('/projects/1/pipelines/100/jobs?include_retried=true');
    expect((withRetried.json as Job[]).map((j) => j.id)).toEqual([20, 15, 14, 13, 12, 11]);
    const bridges = await user()('/projects/1/pipelines/100/bridges');
    expect(bridges.json).toMatchObject([{ id: 16, downstream_pipeline: { id: 101, status: 'success' } }]);
  });

  it('retry creates a new pending job; the old one then shows only with include_retried', async () => {
    const retry = await user()('/projects/1/jobs/12/retry', { method: 'POST' });
    expect(retry.status).toBe(200);
    const fresh = retry.json as Job;
    expect(fresh).toMatchObject({
      name: 'test',
      status: 'pending',
      started_at: null,
      finished_at: null,
      duration: null,
    });
    // Ids only grow on the forge, and pollers that read newest first rely on it.
    const others = [...sandbox.state.jobs.keys()].filter((id) => id !== fresh.id);
    expect(fresh.id).toBeGreaterThan(Math.max(...others));
    expect(fresh.user?.username).toBe('alice');

    const latest = ((await user()('/projects/1/pipelines/100/jobs')).json as Job[]).map((j) => j.id);
    expect(latest).toContain(fresh.id);
    expect(latest).not.toContain(12);
    const all = ((await user()('/projects/1/pipelines/100/jobs?include_retried=true')).json as Job[]).map((j) => j.id);
    expect(all).toEqual(expect.arrayContaining([fresh.id, 12]));
    expect(sandbox.state.jobs.get(12)?.retried).toBe(true);
    // Job 14 still runs, so the pipeline is running again rather than failed.
    expect(fresh.pipeline.status).toBe('running');
  });

  it('runners taken down fail retried jobs at once with one signature, and brought back run them to success', async () => {
    const down = await call(sandbox.url, '/__sandbox/runners', { method: 'POST', body: { state: 'down' } });
    expect(down.json).toEqual({
      state: 'down',
      failure_reason: 'runner_system_failure',
      log: 'ERROR: Job failed (system failure): no space left on device\n',
    });
    const failed = (await user()('/projects/1/jobs/12/retry', { method: 'POST' })).json as Job & {
      failure_reason: string;
    };
    expect(failed).toMatchObject({ status: 'failed', failure_reason: 'runner_system_failure' });
    expect(failed.finished_at).not.toBeNull();
    expect((await user()(`/projects/1/jobs/${failed.id}/trace`)).text).toContain('no space left on device');

    await call(sandbox.url, '/__sandbox/runners', { method: 'POST', body: { state: 'up' } });
    const succeeded = (await user()(`/projects/1/jobs/${failed.id}/retry`, { method: 'POST' })).json as Job;
    expect(succeeded).toMatchObject({ status: 'success' });
    expect(sandbox.state.jobs.get(succeeded.id)?.failure_reason).toBeNull();

    await call(sandbox.url, '/__sandbox/runners', { method: 'POST', body: { state: 'idle' } });
    expect((await user()(`/projects/1/jobs/15/retry`, { method: 'POST' })).status).toBe(403);
    const pending = (await user()(`/projects/1/jobs/${succeeded.id}/retry`, { method: 'POST' })).json as Job;
    expect(pending.status).toBe('pending');
    expect(
      (await call(sandbox.url, '/__sandbox/runners', { method: 'POST', body: { state: 'sideways' } })).status,
    ).toBe(400);
  });

  it('refuses to retry a job that is not finished', async () => {
    const response = await user()('/projects/1/jobs/14/retry', { method: 'POST' });
    expect(response).toMatchObject({ status: 403, json: { message: '403 Forbidden - Job is not retryable' } });
  });

  it('refuses to retry a job that was already retried, making no new job', async () => {
    const first = await user()('/projects/1/jobs/12/retry', { method: 'POST' });
    expect(first.status).toBe(200);
    const jobsAfterFirst = [...sandbox.state.jobs.keys()];

    const second = await user()('/projects/1/jobs/12/retry', { method: 'POST' });
    expect(second.status).toBe(403);
    expect(second.text).toBe('{"message":"403 Forbidden - Job is not retryable"}');
    expect([...sandbox.state.jobs.keys()]).toEqual(jobsAfterFirst);
    expect([...sandbox.state.jobs.values()].filter((j) => j.name === 'test').map((j) => j.id)).toEqual([
      12,
      (first.json as Job).id,
    ]);
    expect(sandbox.state.jobs.get(12)?.retried).toBe(true);
    // A job the world seeds as retried is refused the same way; its newer attempt is the one to retry.
    expect(await user()('/projects/1/jobs/15/retry', { method: 'POST' })).toMatchObject({
      status: 403,
      json: { message: '403 Forbidden - Job is not retryable' },
    });
    const fresh = (first.json as Job).id;
    await call(sandbox.url, `/__sandbox/jobs/${fresh}`, { method: 'POST', body: { status: 'failed' } });
    expect((await user()(`/projects/1/jobs/${fresh}/retry`, { method: 'POST' })).status).toBe(200);
  });

  it('erase removes log and artifacts but keeps the job', async () => {
    const erase = await user()('/projects/1/jobs/11/erase', { method: 'POST' });
    expect(erase.status).toBe(200);
    expect(erase.json).toMatchObject({ id: 11, status: 'success', artifacts: [], download_url: null });
    expect((erase.json as Job).erased_at).not.toBeNull();
    expect((await user()('/projects/1/jobs/11/trace')).status).toBe(404);
    expect((await user()('/projects/1/jobs/11')).json).toMatchObject({ id: 11, name: 'build' });
    // Nothing left to erase, and a running job cannot be erased.
    const again = await user()('/projects/1/jobs/11/erase', { method: 'POST' });
    expect(again).toMatchObject({ status: 403, json: { message: '403 Forbidden - Job is not erasable!' } });
    expect((await user()('/projects/1/jobs/14/erase', { method: 'POST' })).status).toBe(403);
  });

  it('play moves a manual job to pending; other jobs are unplayable', async () => {
    const play = await user()('/projects/1/jobs/13/play', { method: 'POST' });
    expect(play.json).toMatchObject({ id: 13, status: 'pending', started_at: null, finished_at: null, duration: null });
    expect(sandbox.state.jobs.get(13)?.status).toBe('pending');
    const again = await user()('/projects/1/jobs/13/play', { method: 'POST' });
    expect(again).toMatchObject({ status: 400, json: { message: '400 Bad request - Unplayable Job' } });
  });

  it('cancel stops an active job and leaves a finished one unchanged', async () => {
    const cancel = await user()('/projects/1/jobs/14/cancel', { method: 'POST' });
    expect(cancel.json).toMatchObject({ id: 14, status: 'canceled' });
    const finished = await user()('/projects/1/jobs/11/cancel', { method: 'POST' });
    expect(finished).toMatchObject({ status: 200, json: { id: 11, status: 'success' } });
  });

  it('needs a developer to act on jobs', async () => {
    await sandbox.close();
    sandbox = await startSandbox({
      world: baseWorld({
        projects: [
          aProject('pub', {
            id: 1,
            visibility: 'public',
            pipelines: [{ jobs: [{ id: 1, name: 't', status: 'failed' }] }],
          }),
        ],
      }),
    });
    const outsider = apiClient(sandbox.url, OUTSIDER_TOKEN);
    expect((await outsider('/projects/1/jobs/1')).status).toBe(200);
    expect(await outsider('/projects/1/jobs/1/retry', { method: 'POST' })).toMatchObject({ status: 403 });
  });

  it('serves the log as plain text', async () => {
    const trace = await user()('/projects/acme%2Fapi/jobs/12/trace');
    expect(trace.status).toBe(200);
    expect(trace.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(trace.text).toBe('connection reset by peer\n');
  });

  it('finds the job of a running job token, and refuses other tokens', async () => {
    const job = await call(sandbox.url, '/api/v4/job', { headers: { 'JOB-TOKEN': 'job-token-14' } });
    expect(job.json).toMatchObject({ id: 14, name: 'slow', status: 'running' });
    const byQuery = await call(sandbox.url, '/api/v4/job?job_token=job-token-14');
    expect(byQuery.status).toBe(200);
    const agents = await call(sandbox.url, '/api/v4/job/allowed_agents', { headers: { 'JOB-TOKEN': 'job-token-14' } });
    expect(agents.json).toMatchObject({ allowed_agents: [], job: { id: 14, project_id: 1 }, project: { id: 1 } });
    expect((await call(sandbox.url, '/api/v4/job', { headers: { 'JOB-TOKEN': 'nope' } })).status).toBe(401);
    expect(await apiClient(sandbox.url, ADMIN_TOKEN)('/job')).toMatchObject({
      status: 404,
      json: { message: '404 Job Not Found' },
    });
    // Once the job stops, its token no longer authenticates.
    await user()('/projects/1/jobs/14/cancel', { method: 'POST' });
    expect((await call(sandbox.url, '/api/v4/job', { headers: { 'JOB-TOKEN': 'job-token-14' } })).status).toBe(401);
  });
});

describe('job ids', () => {
  it('gives a retried job an id above every existing one, even when the world leaves gaps', async () => {
    const sandbox = await startSandbox({
      world: baseWorld({
        projects: [
          aProject('api', { id: 1, pipelines: [{ id: 7, jobs: [{ id: 500, name: 'test', status: 'failed' }] }] }),
        ],
      }),
    });
    try {
      const retry = await apiClient(sandbox.url, USER_TOKEN)('/projects/1/jobs/500/retry', { method: 'POST' });
      expect(retry.status).toBe(200);
      expect((retry.json as { id: number }).id).toBe(501);
    } finally {
      await sandbox.close();
    }
  });
});
