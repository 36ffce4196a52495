import type { ProjectRef } from '../../config/validators';
import { firstPositions } from '../../engine/order';
import { type Decision, SKIP } from '../../engine/policy';
import { retryParams } from './job-retry.params';
import type { JobRetryConfig } from './job-retry.schema';
import type { FreeRetries } from './job-retry.storm-record';
import {
  type LaterAttempt,
  planStorm,
  signatureOf,
  slotOf,
  type StormPlan,
  stormFree,
  type StormView,
  type WouldRetry,
} from './job-retry.storm';

/**
 * Deciding which failed jobs to retry: pure, no I/O, no clock. The observer reuses the predicates below to decide
 * what is worth reading (a pipeline's jobs, a log), so each rule is written once, here.
 */

/** The fields of a failed job the rules look at. */
export interface FailedJob {
  readonly id: number;
  readonly name: string;
  readonly stage: string;
  /** Branch or tag name. */
  readonly ref: string;
  /** True when the pipeline ran for a tag. */
  readonly tag: boolean;
  readonly allow_failure: boolean;
  readonly pipeline_id: number;
  /** The project's numeric id, as the job's pipeline names it. */
  readonly project_id: number;
  readonly finished_at: string | null;
  /** The forge's failure_reason (`runner_system_failure`), part of the failure's storm signature; null when not sent. */
  readonly failure_reason: string | null;
}

/** The end of a job's log, as far as the observer read it. */
export type JobLog =
  { readonly state: 'not_fetched' } | { readonly state: 'gone' } | { readonly state: 'found'; readonly text: string };

export interface JobRetryCandidate {
  readonly job: FailedJob;
  /**
   * Jobs with this name in the job's pipeline, retried ones included (`include_retried=true`), whoever retried them.
   * Undefined when the pipeline's jobs were not read: the job failed a cheaper check, or the pipeline is gone.
   */
  readonly attempts?: number;
  /** The highest job id with this name in the pipeline; undefined when `attempts` is. */
  readonly newestAttemptId?: number;
  readonly log: JobLog;
}

/** Where the observer stopped in a project's failed jobs: the newest id and latest finish it has seen. */
export interface Watermark {
  readonly id: number;
  readonly finished_at: string;
}

export interface JobRetryProjectSnapshot {
  /** The project as configured (`acme/api` or `42`). */
  readonly project: ProjectRef;
  /**
   * The numeric id: the configured one, else the `pipeline.project_id` of a listed job. Undefined only for a project
   * configured by path that has no failed job to look at, where no decision needs it.
   */
  readonly projectId: number | undefined;
  /** The failed jobs that are new since the last acting pass, newest first. */
  readonly candidates: readonly JobRetryCandidate[];
  /** What `commit` stores after an acting pass; undefined when nothing has been seen yet. */
  readonly watermark: Watermark | undefined;
  /** The watermark is the one already stored (nothing new): commit has nothing to write. */
  readonly unmoved?: true;
}

export interface JobRetrySnapshot {
  /** In the configured order. */
  readonly projects: readonly JobRetryProjectSnapshot[];
  /** The storm record and the probe as read now; absent when storm control is off. */
  readonly storm?: StormView;
}

export const RETRY = 'retry';

/** Rule 2 alone, which a webhook's job name answers before anything is read. */
export function nameMatched(config: JobRetryConfig, name: string): boolean {
  return config.match.job_names?.some((pattern) => pattern.test(name)) ?? true;
}

/**
 * Rules 1 to 5, which need nothing but the job itself: the skip reason, or undefined when the job passes. The
 * observer reads nothing more for a job that fails them.
 */
export function cheapSkipReason(config: JobRetryConfig, job: FailedJob): string | undefined {
  const { match } = config;
  // A job allowed to fail does not fail its pipeline: retrying it would spend runner time for nothing by default.
  if (job.allow_failure && !match.allow_failure) return 'skip: allowed to fail';
  if (!nameMatched(config, job.name)) return `skip: job name "${job.name}" not matched`;
  if (match.stages && !match.stages.some((p) => p.test(job.stage))) return `skip: stage ${job.stage} not matched`;
  if (match.refs && !match.refs.some((p) => p.test(job.ref))) return `skip: ref ${job.ref} not matched`;
  if (match.tag !== undefined && match.tag !== job.tag) {
    return job.tag ? 'skip: tag pipeline not matched' : 'skip: branch pipeline not matched';
  }
  return undefined;
}

/**
 * Rules 6 and 7, which need the pipeline's jobs: the skip reason, or undefined when this is the newest attempt and
 * retries are left. The observer reads no log for a job that fails them.
 */
export function historySkipReason(
  config: JobRetryConfig,
  candidate: { readonly job: Pick<FailedJob, 'id'>; readonly attempts?: number; readonly newestAttemptId?: number },
  free = 0,
): string | undefined {
  const { attempts, newestAttemptId } = candidate;
  if (attempts === undefined || newestAttemptId === undefined) return 'skip: pipeline is gone';
  // Someone (a person or this policy) retried it already, or a later attempt failed and is judged on its own.
  if (newestAttemptId > candidate.job.id) return `skip: newer attempt ${newestAttemptId} exists`;
  // A storm's retries that failed again with its signature were spent on the outage, not on the job (see job-retry.storm.ts).
  const retried = Math.max(0, attempts - 1 - free);
  const uncounted = free > 0 ? ` (and ${free} in a retry storm, not counted)` : '';
  if (retried >= config.max_retries)
    return `skip: already retried ${retried} ${retried === 1 ? 'time' : 'times'}${uncounted}`;
  return undefined;
}

/** Whether rule 8 applies, i.e. whether the observer must read the end of a candidate's log. */
export function needsLog(config: JobRetryConfig): boolean {
  return config.match.failure_log !== undefined;
}

/** Rule 8: the skip reason, or the source of the first `failure_log` pattern that matched. */
function logVerdict(config: JobRetryConfig, log: JobLog): { skip: string } | { matched: string } | undefined {
  const patterns = config.match.failure_log;
  if (!patterns) return undefined;
  switch (log.state) {
    case 'gone':
      return { skip: 'skip: log is gone (erased or expired)' };
    case 'not_fetched':
      // Only an observer that skipped a read it owed gets here; never retry on a log nobody looked at.
      return { skip: 'skip: log not read' };
    case 'found': {
      const matched = patterns.find((p) => p.test(log.text));
      return matched ? { matched: matched.source } : { skip: 'skip: log did not match' };
    }
  }
}

/** One candidate's decision, with its storm signature when it would be retried. */
interface Decided {
  readonly decision: Decision;
  readonly project: ProjectRef;
  readonly projectId: number;
  readonly candidate: JobRetryCandidate;
  readonly sig: string | undefined;
}

function decideOne(
  config: JobRetryConfig,
  project: ProjectRef,
  projectId: number,
  candidate: JobRetryCandidate,
  free: number,
): Decided {
  const { job } = candidate;
  const base = {
    target: `${project} job ${job.id} (${job.name})`,
    // The same failure always has the same key, so the engine retries it at most once however often it is seen.
    key: `${projectId}:${job.id}`,
    params: retryParams({
      project: projectId,
      jobId: job.id,
      pipelineId: job.pipeline_id,
      jobName: job.name,
      source: String(project),
      freeRetries: free,
    }),
  };
  const decided = (decision: Decision, sig?: string): Decided => ({ decision, project, projectId, candidate, sig });
  const skip = (reason: string): Decided => decided({ ...base, action: SKIP, reason });

  const cheap = cheapSkipReason(config, job);
  if (cheap) return skip(cheap);
  const history = historySkipReason(config, candidate, free);
  if (history) return skip(history);
  const verdict = logVerdict(config, candidate.log);
  if (verdict && 'skip' in verdict) return skip(verdict.skip);

  // attempts is known here: historySkipReason passed.
  const counter = `retry ${(candidate.attempts ?? 1) - free} of ${config.max_retries}`;
  const why = verdict ? `log matched "${verdict.matched}"` : `failed in stage ${job.stage}`;
  const decision: Decision = {
    ...base,
    action: RETRY,
    reason: `${counter}: ${why}`,
    ...(config.delay > 0 ? { delayMs: config.delay } : {}),
  };
  return decided(decision, signatureOf(job.failure_reason, verdict?.matched));
}

/** The signature a failed job's log and failure_reason give, whatever the rules decided (for a retry that failed again). */
function candidateSignature(config: JobRetryConfig, candidate: JobRetryCandidate): string {
  const verdict = logVerdict(config, candidate.log);
  return signatureOf(candidate.job.failure_reason, verdict && 'matched' in verdict ? verdict.matched : undefined);
}

/**
 * One decision per candidate, retry or skip, each with its reason. Ordered by project as configured, then newest job
 * first, so a pass capped by `max_actions_per_run` retries the freshest failures first and `plan` reads the same
 * every time.
 */
export function decideJobRetries(config: JobRetryConfig, snapshot: JobRetrySnapshot, now: Date): Decision[] {
  const { decided, free } = decideCandidates(config, snapshot, now);
  if (!config.storm.enabled || !snapshot.storm) return decided.map((entry) => entry.decision);
  return withStorm(decided, stormPlanOf(config, snapshot, decided, free, now), free);
}

/**
 * The storm's plan for this pass, from what decide made of each candidate: exported for commit, which keeps the
 * record it returns (with the retries the pass made) instead of deciding anything again.
 */
export function stormPlanFor(config: JobRetryConfig, snapshot: JobRetrySnapshot, now: Date): StormPlan | undefined {
  if (!config.storm.enabled || !snapshot.storm) return undefined;
  const { decided, free } = decideCandidates(config, snapshot, now);
  return stormPlanOf(config, snapshot, decided, free, now);
}

/** Every candidate decided by the rules alone, in decide's order, with the storm's free retries counted. */
function decideCandidates(
  config: JobRetryConfig,
  snapshot: JobRetrySnapshot,
  now: Date,
): { decided: Decided[]; free: Readonly<Record<string, FreeRetries>> } {
  // The selection's order, whatever order the snapshot lists things in: listed projects as written, then the ones
  // globs found, by path. Positions are looked up in a map: a policy may cover thousands of projects.
  const positions = firstPositions(
    config.projects.explicit.map((item) => String(item.kind === 'id' ? item.id : item.path)),
  );
  const listedFirst = (a: ProjectRef, b: ProjectRef): number => {
    const [pa, pb] = [positions.get(String(a)) ?? Infinity, positions.get(String(b)) ?? Infinity];
    if (pa !== pb) return pa < pb ? -1 : 1;
    return String(a).toLowerCase() < String(b).toLowerCase()
      ? -1
      : String(a).toLowerCase() > String(b).toLowerCase()
        ? 1
        : 0;
  };
  const projects = [...snapshot.projects].sort((a, b) => listedFirst(a.project, b.project));

  const free = config.storm.enabled && snapshot.storm ? stormFree(config.storm, snapshot.storm, now) : {};
  const decided: Decided[] = [];
  for (const p of projects) {
    const candidates = [...p.candidates].sort((a, b) => b.job.id - a.job.id);
    for (const candidate of candidates) {
      const projectId = p.projectId ?? candidate.job.project_id;
      const slot = slotOf(projectId, candidate.job.pipeline_id, candidate.job.name);
      decided.push(decideOne(config, p.project, projectId, candidate, free[slot]?.n ?? 0));
    }
  }
  return { decided, free };
}

function stormPlanOf(
  config: JobRetryConfig,
  snapshot: JobRetrySnapshot,
  decided: readonly Decided[],
  free: Readonly<Record<string, FreeRetries>>,
  now: Date,
): StormPlan {
  const view = snapshot.storm as StormView;
  const wouldRetry: WouldRetry[] = [];
  const later: LaterAttempt[] = [];
  for (const { decision, projectId, candidate, sig, project } of decided) {
    const { job } = candidate;
    if (decision.action === RETRY && sig !== undefined) {
      const finished = Date.parse(job.finished_at ?? '');
      wouldRetry.push({
        key: decision.key,
        project: projectId,
        source: String(project),
        job_id: job.id,
        pipeline_id: job.pipeline_id,
        job_name: job.name,
        finished_at: Number.isNaN(finished) ? now.getTime() : finished,
        sig,
      });
    }
    if ((candidate.attempts ?? 1) > 1)
      later.push({
        slot: slotOf(projectId, job.pipeline_id, job.name),
        job_id: job.id,
        sig: candidateSignature(config, candidate),
      });
  }
  return planStorm(config.storm, view, wouldRetry, later, free, now);
}

/**
 * The decisions as the storm changes them: a line saying the storm's state first (so `plan` and the pass's summary
 * say it), held retries as skips, the probe as a retry, and, in the pass that ends a storm, the retries round robin
 * across projects so a capped pass shares its retries fairly.
 */
function withStorm(
  decided: readonly Decided[],
  plan: StormPlan,
  free: Readonly<Record<string, FreeRetries>>,
): Decision[] {
  const storm = plan.storm;
  const probeKey = plan.probe && `${plan.probe.project}:${plan.probe.job_id}`;
  const since = (at: number) => new Date(at).toISOString();
  const decisions: Decision[] = decided.map(({ decision }) => {
    if (!storm || !plan.held.has(decision.key)) return decision;
    return {
      ...decision,
      action: SKIP,
      reason: `skip: held in the retry storm on ${storm.signature} (since ${since(storm.since)}); retried when it ends`,
    };
  });
  const byKey = new Map(decisions.map((decision, index) => [decision.key, index] as const));
  if (plan.probe && storm) {
    const { probe } = plan;
    const slot = slotOf(probe.project, probe.pipeline_id, probe.job_name);
    const n = free[slot]?.n ?? 0;
    const probeDecision: Decision = {
      action: RETRY,
      target: `${probe.source} job ${probe.job_id} (${probe.job_name})`,
      key: probeKey as string,
      reason: `probe ${storm.probes + 1} of the retry storm on ${storm.signature}: retried alone to see whether the failure is over${n > 0 ? ` (${n} failed probes not counted against max_retries)` : ''}`,
      params: retryParams({
        project: probe.project,
        jobId: probe.job_id,
        pipelineId: probe.pipeline_id,
        jobName: probe.job_name,
        source: probe.source,
        freeRetries: n,
      }),
    };
    const at = byKey.get(probeDecision.key);
    if (at !== undefined) decisions[at] = probeDecision;
    else decisions.push(probeDecision);
  }
  const status = stormStatus(plan, since);
  const ordered = plan.left ? roundRobin(decisions, decided) : decisions;
  return status ? [status, ...ordered] : ordered;
}

/** The storm's state as one skip decision: what `plan`, the pass log and the audit of its changes say. */
function stormStatus(plan: StormPlan, since: (at: number) => string): Decision | undefined {
  const line = (reason: string): Decision => ({
    action: SKIP,
    target: 'retry storm',
    key: 'storm',
    reason,
    params: {},
  });
  if (plan.left)
    return line(
      `storm on ${plan.left.storm.signature} over: ${plan.left.why}; its ${plan.left.storm.probes} probes done, held jobs retried now`,
    );
  const storm = plan.storm;
  if (!storm) return undefined;
  const held = plan.record.held.length;
  const probe = storm.probe
    ? `probe job ${storm.probe.job} running`
    : plan.probe
      ? 'a probe retried now'
      : `next probe after ${since(storm.next_probe_at)}`;
  const start = plan.entered ? 'storm entered' : `storm since ${since(storm.since)}`;
  return line(`${start} on ${storm.signature} (${storm.why}); ${held} held, no retries spent on them; ${probe}`);
}

/** Retries interleaved across projects (each project's newest first), skips after them in their order. */
function roundRobin(decisions: readonly Decision[], decided: readonly Decided[]): Decision[] {
  const byProject = new Map<string, Decision[]>();
  const rest: Decision[] = [];
  decisions.forEach((decision, index) => {
    if (decision.action !== RETRY) {
      rest.push(decision);
      return;
    }
    const project = String(decided[index]?.projectId ?? decision.params.project);
    byProject.set(project, [...(byProject.get(project) ?? []), decision]);
  });
  const queues = [...byProject.values()];
  const retries: Decision[] = [];
  for (let round = 0; retries.length < decisions.length - rest.length; round += 1) {
    for (const queue of queues) if (queue[round]) retries.push(queue[round]);
  }
  return [...retries, ...rest];
}
