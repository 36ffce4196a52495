import { readForgeEvent } from './events';

/** A failed job's `Job Hook` body, trimmed to what is read (GitLab's webhook events documentation). */
const failedJob = {
  object_kind: 'build',
  build_id: 1977,
  build_name: 'test',
  build_stage: 'test',
  build_status: 'failed',
  build_finished_at: '2021-02-23 02:41:39 UTC',
  pipeline_id: 2366,
  project_id: 380,
  project_name: 'gitlab-org / gitlab-test',
  project: { id: 380, name: 'Gitlab Test', path_with_namespace: 'gitlab-org/gitlab-test' },
};

describe('readForgeEvent', () => {
  it('reads a failed job, with the project path where the forge sends it', () => {
    expect(readForgeEvent(failedJob)).toEqual({
      event: {
        kind: 'job',
        project: { id: 380, path: 'gitlab-org/gitlab-test' },
        jobId: 1977,
        jobName: 'test',
        status: 'failed',
        pipelineId: 2366,
        finishedAt: '2021-02-23T02:41:39.000Z',
      },
    });
  });

  it('takes the project id alone from an older forge', () => {
    const { project: _project, ...older } = failedJob;
    expect(readForgeEvent(older)).toMatchObject({ event: { project: { id: 380 } } });
  });

  it('ignores jobs that did not fail, other kinds and bodies missing what it needs, saying why', () => {
    expect(readForgeEvent({ ...failedJob, build_status: 'running' })).toEqual({ ignored: 'job running, not failed' });
    expect(readForgeEvent({ object_kind: 'push' })).toEqual({ ignored: 'object_kind push is not acted on' });
    expect(readForgeEvent([1, 2])).toEqual({ ignored: 'the body is no JSON object' });
    expect(readForgeEvent({ ...failedJob, build_id: '1977' })).toEqual({
      ignored: 'a job event without project_id, build_id, build_name, build_status or pipeline_id',
    });
  });

  it('reads a failed pipeline with the ids of its failed jobs', () => {
    const pipeline = {
      object_kind: 'pipeline',
      object_attributes: { id: 31, status: 'failed' },
      project: { id: 1, path_with_namespace: 'acme/api' },
      builds: [
        { id: 380, status: 'failed' },
        { id: 377, status: 'success' },
        { id: 'x', status: 'failed' },
      ],
    };
    expect(readForgeEvent(pipeline)).toEqual({
      event: {
        kind: 'pipeline',
        project: { id: 1, path: 'acme/api' },
        pipelineId: 31,
        status: 'failed',
        failedJobIds: [380],
      },
    });
    expect(readForgeEvent({ ...pipeline, object_attributes: { id: 31, status: 'success' } })).toEqual({
      ignored: 'pipeline success, not failed',
    });
  });
});
