import type { ProjectRef } from '../../config/validators';
import type { ObserveContext, StepContext, UnsettledTarget } from '../../engine/policy';
import { NotFoundError } from '../../gitlab/transport/errors';
import type { Job } from '../../gitlab/types/jobs';
import {
  cheapSkipReason,
  type FailedJob,
  historySkipReason,
  type JobRetryCandidate,
  type JobRetryProjectSnapshot,
  type JobRetrySnapshot,
  nameMatched,
  needsLog,
  RETRY,
  type Watermark,
} from './job-retry.decide';
import { type RetryTarget, retryTarget } from './job-retry.params';
import { attemptsOf, pipelineReader, readJob, readPipeline, toFailedJob } from './job-retry.reads';
import type { JobRetryConfig } from './job-retry.schema';
import { selectProjects } from '../../engine/discovery';
import type { EventProject, ForgeEvent } from '../../engine/events';
import { mapLimited } from '../../engine/map-limited';
import { observeTargets } from '../../engine/observe-targets';
import { readJsonObject } from '../../engine/json';
import type { ActionRecord } from '../../engine/policy';
import { stormPlanFor } from './job-retry.decide';
import { RETRY_STORM } from './job-retry.measures';
import { type ProbeView, signatureOf, slotOf, stormEnds, type StormView, withRetriesMade } from './job-retry.storm';
import { type StormRecord, StormRecords } from './job-retry.storm-record';

/**
 * Reading what the job_retry rules need, and no more: one page of a project's failed jobs when nothing is new, a
 * pipeline's jobs only for a job that passed the cheap rules, a log only for a job that could still be retried.
 */

/**
 * Jobs are listed by id, but a job with a smaller id can fail after one with a larger id (it ran longer), so the
 * listing goes on past the watermark until jobs finished this long before it. The engine's ledger makes a job seen
 * twice harmless.
 */
export const WATERMARK_MARGIN_MS = 60 * 60 * 1000;

/** Extra reads (pipeline jobs, logs) in flight at once per project, so a burst of failures does not flood the forge. */
export const READ_CONCURRENCY = 4;

/** Watermarks written to Redis at once by commit: one connection takes them in order, without a round trip each. */
const WRITE_CONCURRENCY = 32;

export function watermarkKey(project: ProjectRef): string {
  return `watermark:${project}`;
}

export async function observeJobRetries(config: JobRetryConfig, context: ObserveContext): Promise<JobRetrySnapshot> {
  const open = openRetries(context.unsettled);
  const storm = config.storm.enabled ? await observeStorm(config, context) : undefined;
  // The pass that ends a storm reads every held job again, as an open retry: decide then retries them (stormEnds
  // answers decide the same).
  if (storm && stormEnds(config.storm, storm.record, storm.probe, context.now.getTime()) !== undefined) {
    for (const held of storm.record.held) {
      const target: RetryTarget = {
        project: held.project,
        jobId: held.job_id,
        pipelineId: held.pipeline_id,
        jobName: held.job_name,
        source: held.source,
      };
      open.set(held.source, [...(open.get(held.source) ?? []).filter((known) => known.jobId !== held.job_id), target]);
    }
  }
  // Several projects at once, in the order configured: a poll of thousands of projects is bound by the forge's
  // latency, not its throughput, and the client's concurrency cap and budget still hold every request. A scheduled
  // pass spreads them over half its interval instead of bursting at the tick (see TargetPace).
  const selected = await selectProjects(context, config.projects, config.include_archived);
  // Every project's watermark in a few round trips before the reads start, not one Redis read each.
  const stored = await context.state.getMany(selected.map(watermarkKey));
  const watermarks = new Map(selected.map((project, index) => [project, stored[index]] as const));
  // Each project on its own: one the token may no longer read (or archived, deleted, moved) is recorded against that
  // project and the others go on. Its watermark stays, and its open retries are kept for the pass that reads it.
  const projects = await observeTargets(
    context,
    selected,
    (project) => ({ target: `project ${project}`, listed: config.projects.names(project) }),
    (project) => observeProject(config, project, context, open.get(String(project)) ?? [], watermarks.get(project)),
  );
  return {
    projects: projects.filter((project): project is JobRetryProjectSnapshot => project !== undefined),
    ...(storm ? { storm } : {}),
  };
}

/**
 * The storm record, and the probe in flight as its pipeline shows it now (the newest attempt of its name): one read of
 * Redis, and one pipeline (and perhaps one log) while a storm lasts.
 */
async function observeStorm(config: JobRetryConfig, context: StepContext): Promise<StormView> {
  const record = await new StormRecords(context.state).read();
  const probe = record.storm?.probe;
  if (!probe) return { record };
  return { record, probe: await readProbe(config, record, probe, context) };
}

async function readProbe(
  config: JobRetryConfig,
  record: StormRecord,
  probe: { slot: string; job: number },
  context: StepContext,
): Promise<ProbeView> {
  const held = record.held.find((job) => slotOf(job.project, job.pipeline_id, job.job_name) === probe.slot);
  if (!held) return { state: 'gone' };
  const jobs = await readPipeline(context, held.project, held.pipeline_id);
  const attempts = (jobs ?? []).filter((job) => job.name === held.job_name && job.pipeline.id === held.pipeline_id);
  const newest = attempts.reduce<Job | undefined>(
    (found, job) => (found === undefined || job.id > found.id ? job : found),
    undefined,
  );
  if (!jobs || !newest) return { state: 'gone' };
  // The retry's new attempt not listed yet: it is on its way.
  if (newest.id <= probe.job) return { state: 'running' };
  if (newest.status === 'success') return { state: 'succeeded', job: newest.id };
  if (newest.status !== 'failed')
    return newest.status === 'canceled' || newest.status === 'skipped' ? { state: 'gone' } : { state: 'running' };
  let matched: string | undefined;
  const patterns = config.match.failure_log;
  if (patterns) {
    const tail = await context.client.jobs.traceTail(held.project, newest.id, config.log_tail);
    matched = tail.found ? patterns.find((pattern) => pattern.test(tail.text))?.source : undefined;
  }
  return { state: 'failed', job: newest.id, sig: signatureOf(newest.failure_reason, matched) };
}

/**
 * A webhook's failed job (or a failed pipeline's failed jobs) in a project the policy covers: the same candidate a poll
 * would build for it (the job read back with its pipeline's attempts, its log tail), without the listing and without a
 * watermark, so the poll later finds it already handled by the ledger. Undefined when the project is not covered.
 */
export async function observeJobRetryEvent(
  config: JobRetryConfig,
  event: ForgeEvent,
  context: ObserveContext,
): Promise<JobRetrySnapshot | undefined> {
  const project = await coveringRef(config, event.project, context);
  if (project === undefined) return undefined;
  const pipelineJobs = pipelineReader(context, project);
  let failed: Job[];
  if (event.kind === 'job') {
    // Read back (the delivery may be late or repeated, the job retried or deleted since) in its pipeline, which decide
    // needs for the attempts anyway; alone when its name already rules it out, as a pipeline may be pages long.
    const job = !nameMatched(config, event.jobName)
      ? await readJob(context, { project, jobId: event.jobId })
      : (await pipelineJobs(event.pipelineId))?.find((listed) => listed.id === event.jobId);
    failed = job?.status === 'failed' ? [job] : [];
  } else {
    const jobs = (await pipelineJobs(event.pipelineId)) ?? [];
    const wanted = new Set(event.failedJobIds);
    failed = jobs.filter(
      (job) =>
        job.status === 'failed' && job.pipeline.id === event.pipelineId && (wanted.size === 0 || wanted.has(job.id)),
    );
  }
  const candidates = await mapLimited(failed.map(toFailedJob), READ_CONCURRENCY, (job) =>
    observeCandidate(config, project, job, context, pipelineJobs),
  );
  const storm = config.storm.enabled
    ? { record: await new StormRecords(context.state).read(), event: true as const }
    : undefined;
  return {
    projects: [{ project, projectId: event.project.id, candidates, watermark: undefined }],
    ...(storm ? { storm } : {}),
  };
}

/** The project as the policy names it, when the policy covers the event's project; undefined otherwise. */
async function coveringRef(
  config: JobRetryConfig,
  project: EventProject,
  context: ObserveContext,
): Promise<ProjectRef | undefined> {
  const selected = await selectProjects(context, config.projects, config.include_archived);
  const byId = selected.find((ref) => ref === project.id || String(ref) === String(project.id));
  if (byId !== undefined) return byId;
  let path = project.path;
  if (path === undefined && selected.some((ref) => typeof ref === 'string')) {
    // An older forge sends no path: one read tells it, for a policy that names its projects by path.
    try {
      path = (await context.client.projects.show(project.id)).path_with_namespace;
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }
  const lower = path?.toLowerCase();
  return lower === undefined ? undefined : selected.find((ref) => String(ref).toLowerCase() === lower);
}

/**
 * Stores the storm record and each project's new watermark after an acting, non-dry pass. The watermark may move past
 * jobs whose retry failed, waits or was deferred: the engine keeps those as unsettled targets, and the next observe reads
 * them again. The storm record goes first: a job it holds is past the watermark, and a crash in between only lists it
 * again.
 */
export async function commitJobRetries(
  config: JobRetryConfig,
  snapshot: JobRetrySnapshot,
  context: ObserveContext,
  records: readonly ActionRecord[] = [],
): Promise<void> {
  const plan = stormPlanFor(config, snapshot, context.now);
  if (plan) {
    // The probe counts as sent when the ledger has its retry done (by this pass, or one cut off before its commit), and
    // when the forge already shows a newer attempt (stale: an earlier try whose answer was lost made it): that attempt
    // is the probe's news, where deciding the probe again would meet the same newer attempt at every pass.
    const probeKey = plan.probe && `${plan.probe.project}:${plan.probe.job_id}`;
    const sent = (record: ActionRecord) =>
      record.outcome === 'done' ||
      record.outcome === 'scheduled' ||
      record.outcome === 'duplicate' ||
      (record.outcome === 'stale' && record.decision.key === probeKey);
    const made = records
      .filter((record) => record.decision.action === RETRY && sent(record))
      .flatMap((record) => {
        const target = retryTarget(record.decision.params);
        return [
          {
            key: record.decision.key,
            slot: slotOf(target.project, target.pipelineId, target.jobName),
            job: target.jobId,
          },
        ];
      });
    await new StormRecords(context.state).write(withRetriesMade(plan, made, context.now));
    if (plan.entered) {
      await context.note({
        target: `retry storm (${plan.entered.signature})`,
        action: 'storm',
        outcome: 'entered',
        reason: plan.entered.why,
        detail: `${plan.record.held.length} failed jobs held; one probe job at a time`,
      });
    }
    if (plan.left) {
      const { storm, why } = plan.left;
      await context.note({
        target: `retry storm (${storm.signature})`,
        action: 'storm',
        outcome: 'left',
        reason: why,
        detail: `since ${new Date(storm.since).toISOString()}, ${storm.probes} probes; held jobs retried`,
      });
    }
  }
  await context.measures.set(RETRY_STORM, {}, plan?.storm ? 1 : 0);
  // Only the marks that moved: a poll of thousands of projects where little failed writes little.
  const moved = snapshot.projects.filter((project) => project.watermark && !project.unmoved);
  await mapLimited(moved, WRITE_CONCURRENCY, (project) =>
    context.state.set(watermarkKey(project.project), JSON.stringify(project.watermark)),
  );
}

/** The retries earlier passes left open, by the project as the policy lists it. */
function openRetries(unsettled: readonly UnsettledTarget[]): Map<string, RetryTarget[]> {
  const bySource = new Map<string, RetryTarget[]>();
  for (const entry of unsettled) {
    if (entry.action !== RETRY) continue;
    let target: RetryTarget;
    try {
      target = retryTarget(entry.params);
    } catch {
      continue; // damaged: the job is found again by the listing if it still fails within reach
    }
    bySource.set(target.source, [...(bySource.get(target.source) ?? []), target]);
  }
  return bySource;
}

async function observeProject(
  config: JobRetryConfig,
  project: ProjectRef,
  context: StepContext,
  open: readonly RetryTarget[],
  storedWatermark: string | undefined,
): Promise<JobRetryProjectSnapshot> {
  const previous = parseWatermark(storedWatermark);
  const now = context.now.getTime();
  // First poll: look back `lookback`; later polls: everything not seen before. The listing stops a margin later
  // than that in both cases, for the long jobs with smaller ids that failed late.
  const since = previous ? Date.parse(previous.finished_at) : now - config.lookback;
  const stopBefore = since - WATERMARK_MARGIN_MS;
  const stop = (job: Job): boolean => (previous === undefined || job.id <= previous.id) && finishedMs(job) < stopBefore;

  const fresh: FailedJob[] = [];
  let projectId = typeof project === 'number' ? project : undefined;
  let newest: { id: number; finishedMs: number } | undefined = previous
    ? { id: previous.id, finishedMs: Date.parse(previous.finished_at) }
    : undefined;
  for await (const job of context.client.jobs.all(project, { scope: ['failed'] }, { until: stop })) {
    // The list holds only this project's jobs; its pipeline names the numeric id, which keys every decision.
    projectId ??= job.pipeline.project_id;
    const finished = finishedMs(job);
    newest = { id: Math.max(newest?.id ?? 0, job.id), finishedMs: Math.max(newest?.finishedMs ?? 0, finished) };
    // Left out: on a later poll, a job an earlier pass listed already (an id no larger and a finish no later than it
    // saw), so a poll with nothing new reads nothing more; on the first poll, a job that finished before `lookback`.
    const known = previous ? job.id <= previous.id && finished <= since : finished < since;
    if (!known) fresh.push(toFailedJob(job));
  }
  // Jobs an earlier pass left open (the retry failed or may have acted, waits, was deferred) are read again by id,
  // however far behind the watermark they are. One that is gone or no longer failed needs nothing and drops out.
  const listed = new Set(fresh.map((job) => job.id));
  const reread = await mapLimited(
    open.filter((target) => !listed.has(target.jobId)),
    READ_CONCURRENCY,
    (target) => readJob(context, target),
  );
  for (const job of reread) {
    if (job?.status !== 'failed') continue;
    projectId ??= job.pipeline.project_id;
    fresh.push(toFailedJob(job));
  }

  const pipelineJobs = pipelineReader(context, project);
  const candidates = await mapLimited(fresh, READ_CONCURRENCY, (job) =>
    observeCandidate(config, project, job, context, pipelineJobs),
  );

  const watermark = newest && { id: newest.id, finished_at: new Date(newest.finishedMs).toISOString() };
  // Unmoved (nothing new failed): nothing for commit to write.
  const moved =
    watermark !== undefined &&
    (previous === undefined || watermark.id !== previous.id || watermark.finished_at !== previous.finished_at);
  return { project, projectId, candidates, watermark, ...(moved ? {} : { unmoved: true as const }) };
}

async function observeCandidate(
  config: JobRetryConfig,
  project: ProjectRef,
  job: FailedJob,
  context: StepContext,
  pipelineJobs: (pipelineId: number) => Promise<readonly Job[] | undefined>,
): Promise<JobRetryCandidate> {
  const notFetched = { state: 'not_fetched' } as const;
  if (cheapSkipReason(config, job)) return { job, log: notFetched };

  const jobs = await pipelineJobs(job.pipeline_id);
  const history = jobs && attemptsOf(job, jobs);
  const withHistory = { job, ...history };
  if (historySkipReason(config, withHistory) || !needsLog(config)) return { ...withHistory, log: notFetched };

  const tail = await context.client.jobs.traceTail(project, job.id, config.log_tail);
  return { ...withHistory, log: tail.found ? { state: 'found', text: tail.text } : { state: 'gone' } };
}

/** A failed job always has finished_at on the forge; should one lack it, its creation is the best bound we have. */
function finishedMs(job: Pick<Job, 'finished_at' | 'created_at'>): number {
  return Date.parse(job.finished_at ?? job.created_at);
}

function parseWatermark(text: string | undefined): Watermark | undefined {
  // A damaged watermark is treated as none, i.e. the next poll is a first poll again.
  const { id, finished_at } = readJsonObject(text) ?? {};
  if (typeof id === 'number' && typeof finished_at === 'string' && !Number.isNaN(Date.parse(finished_at))) {
    return { id, finished_at };
  }
  return undefined;
}
