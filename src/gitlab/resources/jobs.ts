import { endpoint, type ProjectId } from '../transport/endpoint';
import type { PageOptions, Paginated } from '../transport/pagination';
import { TailBuffer } from '../transport/tail-buffer';
import { NotFoundError } from '../transport/errors';
import type { Transport } from '../transport/transport';
import { jobShape, retriedJobShape } from './shapes';
import type { AllowedAgents, BridgeJob, Job, ListJobsParams, ListPipelineJobsParams, TraceTail } from '../types/jobs';

/** GitLab's "Jobs API". */
export class JobsResource {
  constructor(private readonly transport: Transport) {}

  /** Project jobs, newest first (sorted by id descending). */
  all(project: ProjectId, params: ListJobsParams = {}, page?: PageOptions<Job>): Paginated<Job> {
    return this.transport.paginate<Job>(
      { method: 'GET', endpoint: endpoint`projects/${project}/jobs`, query: { ...params }, shape: jobShape },
      page,
    );
  }

  /** Jobs of a pipeline and its child pipelines; retried jobs only with `include_retried`. */
  allForPipeline(
    project: ProjectId,
    pipelineId: number,
    params: ListPipelineJobsParams = {},
    page?: PageOptions<Job>,
  ): Paginated<Job> {
    return this.transport.paginate<Job>(
      {
        method: 'GET',
        endpoint: endpoint`projects/${project}/pipelines/${pipelineId}/jobs`,
        query: { ...params },
        shape: jobShape,
      },
      page,
    );
  }

  /** Trigger (bridge) jobs of a pipeline. */
  allBridges(
    project: ProjectId,
    pipelineId: number,
    params: ListJobsParams = {},
    page?: PageOptions<BridgeJob>,
  ): Paginated<BridgeJob> {
    return this.transport.paginate<BridgeJob>(
      { method: 'GET', endpoint: endpoint`projects/${project}/pipelines/${pipelineId}/bridges`, query: { ...params } },
      page,
    );
  }

  /** The job a job token belongs to (`GET /job`, JOB-TOKEN); defaults to the client's own token. */
  current(jobToken?: string): Promise<Job> {
    return this.transport.json<Job>({ method: 'GET', endpoint: endpoint`job`, auth: 'job', jobToken });
  }

  /** `GET /job/allowed_agents`, authenticated by the job token. */
  allowedAgents(jobToken?: string): Promise<AllowedAgents> {
    return this.transport.json<AllowedAgents>({
      method: 'GET',
      endpoint: endpoint`job/allowed_agents`,
      auth: 'job',
      jobToken,
    });
  }

  show(project: ProjectId, jobId: number): Promise<Job> {
    return this.transport.json<Job>({
      method: 'GET',
      endpoint: endpoint`projects/${project}/jobs/${jobId}`,
      shape: jobShape,
    });
  }

  /** The whole log as text. Prefer `traceTail` when only the end matters. 404 → NotFoundError. */
  async trace(project: ProjectId, jobId: number): Promise<string> {
    return this.transport.stream(
      { method: 'GET', endpoint: endpoint`projects/${project}/jobs/${jobId}/trace` },
      async (chunks) => {
        const parts: Buffer[] = [];
        for await (const chunk of chunks) parts.push(chunk);
        return Buffer.concat(parts).toString('utf8');
      },
    );
  }

  /**
   * The last `maxBytes` of the log, streamed so the whole log is never held. A job that does not exist or has no log
   * (404) gives `{found: false}` rather than an error: the log going away is an expected outcome.
   */
  async traceTail(project: ProjectId, jobId: number, maxBytes: number): Promise<TraceTail> {
    if (!Number.isSafeInteger(maxBytes) || maxBytes <= 0) throw new RangeError('maxBytes must be a positive integer');
    try {
      return await this.transport.stream(
        { method: 'GET', endpoint: endpoint`projects/${project}/jobs/${jobId}/trace` },
        async (chunks) => {
          const buffer = new TailBuffer(maxBytes); // fresh per attempt: a retry streams the log again
          for await (const chunk of chunks) buffer.push(chunk);
          return {
            found: true,
            text: buffer.text(),
            truncated: buffer.truncated,
            totalBytes: buffer.totalBytes,
          } as const;
        },
      );
    } catch (error) {
      if (error instanceof NotFoundError) return { found: false };
      throw error;
    }
  }

  cancel(project: ProjectId, jobId: number): Promise<Job> {
    return this.transport.json<Job>({ method: 'POST', endpoint: endpoint`projects/${project}/jobs/${jobId}/cancel` });
  }

  retry(project: ProjectId, jobId: number): Promise<Job> {
    return this.transport.json<Job>({
      method: 'POST',
      endpoint: endpoint`projects/${project}/jobs/${jobId}/retry`,
      shape: retriedJobShape,
    });
  }

  /** Removes artifacts and log; the job record remains and is returned. */
  erase(project: ProjectId, jobId: number): Promise<Job> {
    return this.transport.json<Job>({ method: 'POST', endpoint: endpoint`projects/${project}/jobs/${jobId}/erase` });
  }

  /** Starts a `manual` job. */
  play(project: ProjectId, jobId: number): Promise<Job> {
    return this.transport.json<Job>({ method: 'POST', endpoint: endpoint`projects/${project}/jobs/${jobId}/play` });
  }
}
