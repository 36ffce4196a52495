import { aConfig } from '../../../test/support/builders/jobs';
import type { PolicyContext } from '../../engine/policy';
import { jobRetryType } from './job-retry.type';
import { jobRetryPolicy } from './job-retry.schema';

describe('job_retry policy type', () => {
  it('runs every interval, with the schema and limit of the policy', () => {
    const config = aConfig({ interval: '5m', max_actions_per_run: 7 });
    expect(jobRetryType.definition).toBe(jobRetryPolicy);
    expect(jobRetryType.trigger(config)).toEqual({ every: 300_000 });
    expect(jobRetryType.limits(config).actionsPerPass).toBe(7);
    expect(Object.keys(jobRetryType.actions)).toEqual(['retry']);
  });

  it('retries the job named by the params and reports the new job', async () => {
    const calls: Array<[unknown, unknown]> = [];
    const context = {
      client: {
        jobs: { retry: async (project: unknown, jobId: unknown) => (calls.push([project, jobId]), { id: 913 }) },
      },
    } as unknown as PolicyContext;
    await expect(
      jobRetryType.actions.retry.run({ project: 1, job_id: 812, pipeline_id: 100, job_name: 'test-unit' }, context),
    ).resolves.toEqual({ detail: 'new job 913' });
    expect(calls).toEqual([[1, 812]]);
  });

  it('refuses params that do not name a job, before calling the forge', async () => {
    const context = {
      client: { jobs: { retry: () => Promise.reject(new Error('must not be called')) } },
    } as unknown as PolicyContext;
    await expect(
      jobRetryType.actions.retry.run({ project: 1, pipeline_id: 100, job_name: 'test-unit' }, context),
    ).rejects.toThrow('action parameter "job_id" must be an integer');
    await expect(
      jobRetryType.actions.retry.run(
        { project: 'acme/api', job_id: 1, pipeline_id: 100, job_name: 'test-unit' },
        context,
      ),
    ).rejects.toThrow(TypeError);
  });
});
