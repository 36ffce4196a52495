import type { JobRecord, PipelineRecord, UserRecord } from '../state';
import { Presenter } from './presenter';

/** Jobs, bridges and the pipelines they belong to, as the forge's Jobs API shows them. */
export class JobPresenter extends Presenter {
  job(job: JobRecord): Record<string, unknown> {
    if (job.kind === 'bridge') return this.bridge(job);
    const archive = job.artifacts.find((a) => a.file_type === 'archive');
    return {
      ...this.jobCommon(job),
      pipeline: this.pipelineBrief(job.pipeline_id),
      artifacts: job.artifacts,
      ...(archive ? { artifacts_file: { filename: archive.filename, size: archive.size } } : {}),
      ...(job.artifacts_expire_at !== null ? { artifacts_expire_at: job.artifacts_expire_at } : {}),
      tag_list: job.tag_list,
      runner: null,
    };
  }

  bridge(job: JobRecord): Record<string, unknown> {
    const downstream =
      job.downstream_pipeline_id !== null ? this.state.pipelines.get(job.downstream_pipeline_id) : undefined;
    return {
      ...this.jobCommon(job),
      pipeline: this.pipelineFull(job.pipeline_id),
      downstream_pipeline: downstream
        ? {
            id: downstream.id,
            sha: downstream.sha,
            ref: downstream.ref,
            status: this.state.pipelineStatus(downstream),
            created_at: downstream.created_at,
            updated_at: downstream.updated_at,
            web_url: this.pipelineWebUrl(downstream),
          }
        : null,
    };
  }

  pipelineFull(pipelineId: number): Record<string, unknown> | null {
    const pipeline = this.state.pipelines.get(pipelineId);
    if (!pipeline) return null;
    return {
      ...this.pipelineBrief(pipelineId),
      created_at: pipeline.created_at,
      updated_at: pipeline.updated_at,
      web_url: this.pipelineWebUrl(pipeline),
    };
  }

  private jobCommon(job: JobRecord): Record<string, unknown> {
    const project = this.state.projects.get(job.project_id);
    const pipeline = this.state.pipelines.get(job.pipeline_id);
    const user = job.user_id !== null ? this.state.users.get(job.user_id) : undefined;
    const now = this.state.clock.now();
    const started = job.started_at !== null ? Date.parse(job.started_at) : null;
    const finished = job.finished_at !== null ? Date.parse(job.finished_at) : null;
    const created = Date.parse(job.created_at);
    const duration =
      started === null ? null : ((finished ?? (job.status === 'running' ? now : started)) - started) / 1000;
    const queued =
      started !== null ? (started - created) / 1000 : job.status === 'pending' ? (now - created) / 1000 : null;
    return {
      id: job.id,
      status: job.status,
      stage: job.stage,
      name: job.name,
      ref: job.ref,
      tag: job.tag,
      coverage: job.coverage,
      allow_failure: job.allow_failure,
      created_at: job.created_at,
      started_at: job.started_at,
      finished_at: job.finished_at,
      erased_at: job.erased_at,
      duration,
      queued_duration: queued,
      user: user ? this.jobUser(user) : null,
      commit: pipeline
        ? {
            id: pipeline.sha,
            short_id: pipeline.sha.slice(0, 8),
            created_at: pipeline.created_at,
            title: pipeline.commit.title,
            message: pipeline.commit.message,
            author_name: pipeline.commit.author_name,
            author_email: pipeline.commit.author_email,
          }
        : null,
      ...(job.status === 'failed' && job.failure_reason !== null ? { failure_reason: job.failure_reason } : {}),
      web_url: project ? `${this.baseUrl}/${this.state.projectFullPath(project)}/-/jobs/${job.id}` : null,
      archived: false,
    };
  }

  /** The user who triggered a job: the summary with the public profile. */
  private jobUser(user: UserRecord): Record<string, unknown> {
    return {
      ...this.userSummary(user),
      created_at: user.created_at,
      bio: user.bio,
      location: user.location,
      public_email: user.public_email,
      skype: user.skype,
      linkedin: user.linkedin,
      twitter: user.twitter,
      website_url: user.website_url,
      organization: user.organization,
    };
  }

  private pipelineBrief(pipelineId: number): Record<string, unknown> | null {
    const pipeline = this.state.pipelines.get(pipelineId);
    if (!pipeline) return null;
    return {
      id: pipeline.id,
      project_id: pipeline.project_id,
      ref: pipeline.ref,
      sha: pipeline.sha,
      status: this.state.pipelineStatus(pipeline),
    };
  }

  private pipelineWebUrl(pipeline: PipelineRecord): string | null {
    const project = this.state.projects.get(pipeline.project_id);
    return project ? `${this.baseUrl}/${this.state.projectFullPath(project)}/-/pipelines/${pipeline.id}` : null;
  }
}
