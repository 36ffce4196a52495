import { defineJob } from '../queue/jobs';

/**
 * What the forge told the daemon through a webhook, reduced to what a policy acts on. The payloads are the forge's
 * own (GitLab's "Webhook events" documentation: `Job Hook` with `object_kind: build`, `Pipeline Hook` with
 * `object_kind: pipeline`); the same reader takes the sandbox's deliveries and a real forge's.
 */
export type ForgeEvent = JobEvent | PipelineEvent;

export interface EventProject {
  readonly id: number;
  /** `project.path_with_namespace` where the payload has it (GitLab 15.x and later); older forges send only the id. */
  readonly path?: string;
}

/** A job changed state (`Job Hook`). */
export interface JobEvent {
  readonly kind: 'job';
  readonly project: EventProject;
  readonly jobId: number;
  readonly jobName: string;
  readonly status: string;
  readonly pipelineId: number;
  /** `build_finished_at`, as an ISO time, when the job has finished. */
  readonly finishedAt?: string;
}

/** A pipeline changed state (`Pipeline Hook`), with the jobs that failed in it. */
export interface PipelineEvent {
  readonly kind: 'pipeline';
  readonly project: EventProject;
  readonly pipelineId: number;
  readonly status: string;
  readonly failedJobIds: readonly number[];
}

/** The queued job that carries an accepted delivery from the HTTP receiver to the engine. */
export const forgeEventJob = defineJob<{ event: ForgeEvent; receivedAt: number }>('forge.event');

/** The event kinds the daemon acts on, by `X-Gitlab-Event`; anything else is answered and counted, not queued. */
export const EVENT_LABELS: Readonly<Record<string, 'job' | 'pipeline'>> = {
  'Job Hook': 'job',
  'Pipeline Hook': 'pipeline',
};

/** Why a delivery is not acted on, for the answer and the metric; or the event. */
export type ReadEvent = { readonly event: ForgeEvent } | { readonly ignored: string };

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const id = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : undefined;
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/**
 * The event in a delivery's JSON body, or why it is ignored. Only failures are events here: a job or pipeline that
 * started, passed or was cancelled needs nothing from any policy, and is answered without being queued.
 */
export function readForgeEvent(body: unknown): ReadEvent {
  if (!isObject(body)) return { ignored: 'the body is no JSON object' };
  const kind = body.object_kind;
  if (kind === 'build') return readJobEvent(body);
  if (kind === 'pipeline') return readPipelineEvent(body);
  return { ignored: `object_kind ${typeof kind === 'string' ? kind : 'missing'} is not acted on` };
}

function readProject(body: Json, fallbackId: unknown): EventProject | undefined {
  const project = isObject(body.project) ? body.project : undefined;
  const projectId = id(project?.id) ?? id(fallbackId);
  if (projectId === undefined) return undefined;
  const path = text(project?.path_with_namespace);
  return path ? { id: projectId, path } : { id: projectId };
}

function readJobEvent(body: Json): ReadEvent {
  const project = readProject(body, body.project_id);
  const jobId = id(body.build_id);
  const pipelineId = id(body.pipeline_id);
  const status = text(body.build_status);
  const jobName = text(body.build_name);
  if (!project || jobId === undefined || pipelineId === undefined || !status || jobName === undefined) {
    return { ignored: 'a job event without project_id, build_id, build_name, build_status or pipeline_id' };
  }
  if (status !== 'failed') return { ignored: `job ${status}, not failed` };
  const finished = text(body.build_finished_at);
  const finishedAt =
    finished && !Number.isNaN(Date.parse(finished)) ? new Date(Date.parse(finished)).toISOString() : undefined;
  return { event: { kind: 'job', project, jobId, jobName, status, pipelineId, ...(finishedAt ? { finishedAt } : {}) } };
}

function readPipelineEvent(body: Json): ReadEvent {
  const attributes = isObject(body.object_attributes) ? body.object_attributes : undefined;
  const project = readProject(body, undefined);
  const pipelineId = id(attributes?.id);
  const status = text(attributes?.status);
  if (!project || pipelineId === undefined || !status)
    return { ignored: 'a pipeline event without project.id, object_attributes.id or status' };
  if (status !== 'failed') return { ignored: `pipeline ${status}, not failed` };
  const builds = Array.isArray(body.builds) ? body.builds : [];
  const failedJobIds = builds.flatMap((build) =>
    isObject(build) && build.status === 'failed' && id(build.id) !== undefined ? [id(build.id) as number] : [],
  );
  return { event: { kind: 'pipeline', project, pipelineId, status, failedJobIds } };
}
