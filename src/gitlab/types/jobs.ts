import type { Timestamp, UserState } from './common';

/** A job's `status` (GitLab's "Jobs API"). */
export const JOB_STATUSES = [
  'created',
  'pending',
  'running',
  'failed',
  'success',
  'canceled',
  'skipped',
  'manual',
] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/** User summary embedded in jobs. */
export interface JobUser {
  id: number;
  name: string;
  username: string;
  state: UserState;
  avatar_url: string;
  web_url: string;
  created_at: Timestamp;
  bio: string | null;
  location: string | null;
  /** May be empty strings. */
  public_email: string;
  skype: string;
  linkedin: string;
  twitter: string;
  website_url: string;
  organization: string;
}

export interface JobCommit {
  author_email: string;
  author_name: string;
  created_at: Timestamp;
  id: string;
  message: string;
  short_id: string;
  title: string;
}

export interface JobPipeline {
  id: number;
  project_id: number;
  ref: string;
  sha: string;
  /** Pipeline statuses are left open: the forge adds new ones. */
  status: string;
}

/** Values seen on the forge; others may appear. */
export type ArtifactFileType = 'archive' | 'metadata' | 'trace' | 'junit' | (string & {});
export type ArtifactFileFormat = 'zip' | 'gzip' | 'raw' | (string & {});

export interface JobArtifact {
  file_type: ArtifactFileType;
  size: number;
  filename: string;
  file_format: ArtifactFileFormat;
}

export interface Job {
  id: number;
  name: string;
  stage: string;
  /** Branch or tag name. */
  ref: string;
  tag: boolean;
  status: JobStatus;
  allow_failure: boolean;
  /**
   * Why a failed job failed (`script_failure`, `runner_system_failure`...): beyond the spec, sent by the forge on failed
   * jobs only. Absent on older forges and on jobs that did not fail.
   */
  failure_reason?: string;
  /** Often null; a number once coverage is reported. */
  coverage: number | null;
  created_at: Timestamp;
  started_at: Timestamp | null;
  finished_at: Timestamp | null;
  duration: number | null;
  queued_duration: number;
  commit: JobCommit;
  pipeline: JobPipeline;
  /** Empty when there are none. */
  artifacts: JobArtifact[];
  /** Present only on some jobs. */
  artifacts_file?: { filename: string; size: number };
  artifacts_expire_at?: Timestamp;
  tag_list?: string[];
  /** Null until a runner picks the job up; its fields are not relied on. */
  runner: Readonly<Record<string, unknown>> | null;
  web_url: string;
  user: JobUser | null;
  /** Appears in the erase response. */
  download_url?: string | null;
}

export interface BridgePipeline extends JobPipeline {
  created_at: Timestamp;
  updated_at: Timestamp;
  web_url: string;
}

export interface DownstreamPipeline {
  id: number;
  sha: string;
  ref: string;
  status: string;
  created_at: Timestamp;
  updated_at: Timestamp;
  web_url: string;
}

/** A trigger job: a job without artifacts and runner, pointing at the pipeline it started. */
export interface BridgeJob extends Omit<Job, 'artifacts' | 'artifacts_file' | 'runner' | 'pipeline'> {
  pipeline: BridgePipeline;
  downstream_pipeline: DownstreamPipeline;
}

export interface ProjectSummary {
  id: number;
  description: string | null;
  name: string;
  name_with_namespace: string;
  path: string;
  path_with_namespace: string;
  created_at: Timestamp;
}

/** `GET /job/allowed_agents`: the agents the job token may use. */
export interface AllowedAgents {
  allowed_agents: Array<{ id: number; config_project: ProjectSummary }>;
  job: { id: number; name: string; stage: string; project_id: number; project_name: string };
  pipeline: {
    id: number;
    project_id: number;
    sha: string;
    ref: string;
    status: string;
    created_at: Timestamp;
    updated_at: Timestamp;
    web_url: string;
  };
  project: ProjectSummary;
  user: { id: number; name: string; username: string; state: UserState; avatar_url: string; web_url: string };
}

export interface ListJobsParams {
  /** One status or several; all statuses when omitted. */
  scope?: JobStatus | readonly JobStatus[];
}

export interface ListPipelineJobsParams extends ListJobsParams {
  /** Default false: retried jobs are left out. */
  include_retried?: boolean;
}

/** The end of a job log, or the fact that there is none (404: no such job or no log). */
export type TraceTail =
  | {
      found: true;
      /** At most `maxBytes` of the log's end, decoded as UTF-8. */
      text: string;
      /** True when the log was longer than `maxBytes`. */
      truncated: boolean;
      totalBytes: number;
    }
  | { found: false };
