import { randomUUID } from 'node:crypto';
import {
  PROJECT_HOOK_EVENT_FLAGS,
  type BranchFilterStrategy,
  type HookAlertStatus,
  type ProjectHookEventFlag,
} from '../gitlab/types/hooks';
import type { JobStatus } from '../gitlab/types/jobs';
import { SANDBOX_VERSION } from './version';
import type { JobRecord } from './ci-state';
import { HookDeliveryClient } from './hook-delivery';
import { type HookedState, HookPayloads } from './hook-payloads';
import type { SeededProject } from './namespaces-state';
import type { WorldSeeding } from './seeding';
import type { ParsedWorld, WorldHook } from './world';

/**
 * Project webhooks and their deliveries, posted by `hook-delivery.ts` one after another per hook in event order, as
 * the forge does: no retries, GitLab's auto-disabling (see src/sandbox/README.md, "Webhook deliveries").
 */

export type HookEvent = 'Job Hook' | 'Pipeline Hook';

export interface HookRecord {
  id: number;
  project_id: number;
  url: string;
  name: string | null;
  description: string | null;
  /** Write-only: sent as `X-Gitlab-Token`, never shown by the API nor the state dump. */
  token: string | null;
  created_at: string;
  events: Record<ProjectHookEventFlag, boolean>;
  push_events_branch_filter: string | null;
  branch_filter_strategy: BranchFilterStrategy;
  enable_ssl_verification: boolean;
  custom_webhook_template: string | null;
  /** Sent with every delivery; the API shows the names only. */
  custom_headers: Record<string, string>;
  /** `{name}` in `url` is replaced by these when delivering; the API shows the names only. */
  url_variables: Record<string, string>;
  /** Consecutive failed deliveries (the forge's `recent_failures`, at most 40). */
  recent_failures: number;
  disabled_until: string | null;
}

export interface HookDeliveryRecord {
  id: number;
  hook_id: number;
  project_id: number;
  event: HookEvent;
  /** The forge's name of the hook kind (`job_hooks`, `pipeline_hooks`), as in its webhook logs. */
  trigger: 'job_hooks' | 'pipeline_hooks';
  /** `X-Gitlab-Event-UUID`: one per event, shared by every hook the event goes to. */
  event_uuid: string;
  /** `X-Gitlab-Webhook-UUID`: one per request. */
  webhook_uuid: string;
  /** `Idempotency-Key`: one per event and hook. */
  idempotency_key: string;
  /** The hook's URL as configured (URL variables not filled in, so their values stay out). */
  url: string;
  /** Sandbox clock when the request went out. */
  time: string;
  /** As sent, with `X-Gitlab-Token` and custom header values `[REDACTED]` (as in the forge's webhook logs). */
  request_headers: Record<string, string>;
  request_body: Record<string, unknown>;
  /** The receiver's status; null when no answer came. */
  status: number | null;
  /** Why no answer came (refused, reset, timed out). */
  error: string | null;
  /** `ok` for a 2xx or 3xx answer, as the forge counts it. */
  result: 'ok' | 'error';
  response_body: string;
  duration_ms: number;
}

/** `WebHooks::AutoDisabling`: failures tolerated before a backoff, and before the hook is disabled for good. */
export const TEMPORARILY_DISABLED_FAILURE_THRESHOLD = 3;
export const PERMANENTLY_DISABLED_FAILURE_THRESHOLD = 39;
const INITIAL_BACKOFF_MS = 60_000;
const MAX_BACKOFF_MS = 24 * 60 * 60_000;
const BACKOFF_GROWTH_FACTOR = 2;
/** `gitlab.webhook_timeout`'s default. */
export const DEFAULT_HOOK_TIMEOUT_MS = 10_000;
/** The forge's URL variable reference, `{name}` (`WebHooks::Hook::VARIABLE_REFERENCE_RE`). */
export const HOOK_URL_VARIABLE = /\{([A-Za-z]+[0-9]*(?:[._-][A-Za-z0-9]+)*)\}/g;

type HookFields = Omit<HookRecord, 'id' | 'project_id' | 'created_at' | 'recent_failures' | 'disabled_until'>;

export class HooksState {
  readonly hooks = new Map<number, HookRecord>();
  readonly deliveries: HookDeliveryRecord[] = [];
  /** `X-Gitlab-Instance` and the addresses in payloads; startSandbox sets it once it listens. */
  instanceUrl = 'http://sandbox.invalid';
  timeoutMs = DEFAULT_HOOK_TIMEOUT_MS;

  private lastId = 0;
  private lastDeliveryId = 0;
  /** Last statuses seen of the jobs and pipelines of projects with hooks: a change against them is an event. */
  private readonly watchedProjects = new Set<number>();
  private readonly jobStatuses = new Map<number, JobStatus>();
  private readonly pipelineStatuses = new Map<number, JobStatus>();
  /** Per hook, the tail of its delivery queue. */
  private readonly queues = new Map<number, Promise<void>>();
  private pending = 0;
  private settleWaiters: (() => void)[] = [];
  private client: HookDeliveryClient | undefined;
  private closed = false;

  constructor(private readonly state: HookedState) {}

  // ---- records ------------------------------------------------------------------------------------------------

  /** A project's hooks, oldest first (the forge's listing order). */
  of(projectId: number): HookRecord[] {
    return [...this.hooks.values()].filter((h) => h.project_id === projectId).sort((a, b) => a.id - b.id);
  }

  create(projectId: number, fields: HookFields): HookRecord {
    const record: HookRecord = {
      ...fields,
      id: ++this.lastId,
      project_id: projectId,
      created_at: this.state.nowIso(),
      recent_failures: 0,
      disabled_until: null,
    };
    this.hooks.set(record.id, record);
    this.watch(projectId);
    return record;
  }

  remove(hook: HookRecord): void {
    this.hooks.delete(hook.id);
  }

  /**
   * A deleted project: its hooks go, and so does what was remembered of its jobs' and pipelines' statuses (call it
   * before they are removed). Deliveries already made stay in the record, like the request log.
   */
  forgetProject(projectId: number): void {
    for (const hook of this.of(projectId)) this.hooks.delete(hook.id);
    this.watchedProjects.delete(projectId);
    for (const job of this.state.jobs.values()) if (job.project_id === projectId) this.jobStatuses.delete(job.id);
    for (const pipeline of this.state.pipelines.values()) {
      if (pipeline.project_id === projectId) this.pipelineStatuses.delete(pipeline.id);
    }
  }

  /** `executable`, `temporarily_disabled` or `disabled` at the sandbox clock (`WebHooks::AutoDisabling#alert_status`). */
  alertStatus(hook: HookRecord): HookAlertStatus {
    if (this.temporarilyDisabled(hook)) return 'temporarily_disabled';
    if (hook.recent_failures > PERMANENTLY_DISABLED_FAILURE_THRESHOLD) return 'disabled';
    return 'executable';
  }

  // ---- events -------------------------------------------------------------------------------------------------

  /**
   * A job of the pipeline changed (or a job was added to it, as a retry does): jobs whose status differs from the
   * last one seen are job events, and the pipeline's status too when it changed. Only projects with hooks are watched.
   */
  pipelineChanged(pipelineId: number): void {
    const pipeline = this.state.pipelines.get(pipelineId);
    if (!pipeline || !this.watchedProjects.has(pipeline.project_id)) return;
    const changedJobs: JobRecord[] = [];
    for (const job of this.state.jobs.values()) {
      // Bridges fire no job hooks on the forge (`BuildHooksWorker` runs for `Ci::Build` only).
      if (job.pipeline_id !== pipelineId || job.kind !== 'build') continue;
      if (this.jobStatuses.get(job.id) !== job.status) changedJobs.push(job);
      this.jobStatuses.set(job.id, job.status);
    }
    const status = this.state.pipelineStatus(pipeline);
    const pipelineStatusChanged = this.pipelineStatuses.get(pipelineId) !== status;
    this.pipelineStatuses.set(pipelineId, status);

    const hooks = this.of(pipeline.project_id);
    const payloads = new HookPayloads(this.state, this.instanceUrl);
    for (const job of changedJobs.sort((a, b) => a.id - b.id)) {
      this.dispatch(hooks, 'job_events', 'Job Hook', () => payloads.job(job));
    }
    if (pipelineStatusChanged)
      this.dispatch(hooks, 'pipeline_events', 'Pipeline Hook', () => payloads.pipeline(pipeline));
  }

  /** Resolves once no delivery is queued or in flight. */
  settled(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.settleWaiters.push(resolve));
  }

  /** Drops queued deliveries and aborts those in flight (the sandbox is closing). */
  close(): void {
    this.closed = true;
    const client = this.client;
    this.client = undefined;
    if (client) void client.close();
  }

  // ---- seeding and dump ---------------------------------------------------------------------------------------

  /** The world's hooks; explicit ids are kept, omitted ones fill the gaps in file order. */
  seed(world: ParsedWorld, projects: SeededProject[], seeding: WorldSeeding): void {
    this.timeoutMs = world.settings.hook_timeout_ms ?? DEFAULT_HOOK_TIMEOUT_MS;
    const taken = new Set(
      projects.flatMap(({ world }) => world.hooks.map((h) => h.id)).filter((id) => id !== undefined),
    );
    let cursor = 0;
    for (const { world, record: project } of projects) {
      for (const hook of world.hooks) {
        let id = hook.id;
        if (id === undefined) {
          do cursor += 1;
          while (taken.has(cursor));
          id = cursor;
        }
        this.hooks.set(id, this.seeded(hook, id, project.id, seeding));
        this.lastId = Math.max(this.lastId, id);
      }
      if (world.hooks.length > 0) this.watch(project.id);
    }
  }

  /** Hooks without their token and header values, and the deliveries (`GET /__sandbox/state`). */
  dump(): Record<string, unknown> {
    return {
      hooks: [...this.hooks.values()].map((hook) => {
        const { token, custom_headers, url_variables, ...rest } = hook;
        return {
          ...rest,
          token_set: token !== null,
          custom_headers: Object.keys(custom_headers),
          url_variables: Object.keys(url_variables),
          alert_status: this.alertStatus(hook),
        };
      }),
      hook_deliveries: this.deliveries,
    };
  }

  // ---- delivery -----------------------------------------------------------------------------------------------

  private dispatch(
    hooks: HookRecord[],
    flag: ProjectHookEventFlag,
    event: HookEvent,
    build: () => Record<string, unknown>,
  ): void {
    const subscribed = hooks.filter((h) => h.events[flag]);
    if (subscribed.length === 0 || this.closed) return;
    // Built when the event happens, as the forge serialises it before queueing.
    const payload = build();
    const eventUuid = randomUUID();
    for (const hook of subscribed) this.enqueue(hook.id, event, payload, eventUuid);
  }

  private enqueue(hookId: number, event: HookEvent, payload: Record<string, unknown>, eventUuid: string): void {
    const idempotencyKey = randomUUID();
    this.pending += 1;
    const previous = this.queues.get(hookId) ?? Promise.resolve();
    const next: Promise<void> = previous
      .then(() => this.deliver(hookId, event, payload, eventUuid, idempotencyKey))
      .catch((error: unknown) => {
        process.stderr.write(`sandbox: webhook delivery failed unexpectedly: ${String(error)}\n`);
      })
      .finally(() => {
        if (this.queues.get(hookId) === next) this.queues.delete(hookId);
        this.pending -= 1;
        if (this.pending === 0) this.releaseSettleWaiters();
      });
    this.queues.set(hookId, next);
  }

  private async deliver(
    hookId: number,
    event: HookEvent,
    payload: Record<string, unknown>,
    eventUuid: string,
    idempotencyKey: string,
  ): Promise<void> {
    const hook = this.hooks.get(hookId);
    // Deleted meanwhile, or disabled: the forge's WebHookService answers "Hook disabled" and logs nothing.
    if (!hook || this.closed || !this.executable(hook)) return;
    const webhookUuid = randomUUID();
    // Custom headers first: the forge merges its own over them (`build_custom_headers.merge(build_headers)`).
    const headers: Record<string, string> = {
      ...hook.custom_headers,
      'Content-Type': 'application/json',
      'User-Agent': `GitLab/${SANDBOX_VERSION.version}`,
      'Idempotency-Key': idempotencyKey,
      'X-Gitlab-Event': event,
      'X-Gitlab-Webhook-UUID': webhookUuid,
      'X-Gitlab-Instance': this.instanceUrl,
      'X-Gitlab-Event-UUID': eventUuid,
    };
    if (hook.token !== null && hook.token !== '') headers['X-Gitlab-Token'] = hook.token.replace(/[\r\n]/g, '');
    const time = this.state.nowIso();
    this.client ??= new HookDeliveryClient();
    const outcome = await this.client.post({
      url: interpolateHookUrl(hook.url, hook.url_variables),
      headers,
      body: JSON.stringify(payload),
      timeoutMs: this.timeoutMs,
      verifyTls: hook.enable_ssl_verification,
    });
    if (this.closed) return;
    const ok = outcome.status !== null && outcome.status >= 200 && outcome.status < 400;
    // The hook may have been deleted while the request was out; its counters go with it.
    if (this.hooks.get(hookId) === hook) {
      if (ok) this.enable(hook);
      else this.backoff(hook);
    }
    this.deliveries.push({
      id: ++this.lastDeliveryId,
      hook_id: hook.id,
      project_id: hook.project_id,
      event,
      trigger: event === 'Job Hook' ? 'job_hooks' : 'pipeline_hooks',
      event_uuid: eventUuid,
      webhook_uuid: webhookUuid,
      idempotency_key: idempotencyKey,
      url: hook.url,
      time,
      request_headers: redactedHeaders(headers, hook),
      request_body: payload,
      status: outcome.status,
      error: outcome.error,
      result: ok ? 'ok' : 'error',
      response_body: outcome.responseBody,
      duration_ms: outcome.durationMs,
    });
  }

  // ---- auto-disabling (WebHooks::AutoDisabling) ---------------------------------------------------------------

  private executable(hook: HookRecord): boolean {
    return !this.temporarilyDisabled(hook) && hook.recent_failures <= PERMANENTLY_DISABLED_FAILURE_THRESHOLD;
  }

  private temporarilyDisabled(hook: HookRecord): boolean {
    return (
      hook.disabled_until !== null &&
      Date.parse(hook.disabled_until) >= this.state.clock.now() &&
      hook.recent_failures > TEMPORARILY_DISABLED_FAILURE_THRESHOLD &&
      hook.recent_failures <= PERMANENTLY_DISABLED_FAILURE_THRESHOLD
    );
  }

  /** `backoff!`: one more failure; past the grace of 3, disabled for a backoff that doubles up to a day. */
  private backoff(hook: HookRecord): void {
    if (!this.executable(hook)) return;
    const before = hook.recent_failures;
    hook.recent_failures = Math.min(Math.max(before + 1, 1), PERMANENTLY_DISABLED_FAILURE_THRESHOLD + 1);
    if (hook.recent_failures > TEMPORARILY_DISABLED_FAILURE_THRESHOLD) {
      const backoffMs = INITIAL_BACKOFF_MS * BACKOFF_GROWTH_FACTOR ** (before - TEMPORARILY_DISABLED_FAILURE_THRESHOLD);
      const clamped = Math.min(Math.max(backoffMs, INITIAL_BACKOFF_MS), MAX_BACKOFF_MS);
      hook.disabled_until = new Date(this.state.clock.now() + clamped).toISOString();
    }
  }

  /** `enable!`: a success clears the failures. */
  private enable(hook: HookRecord): void {
    hook.recent_failures = 0;
    hook.disabled_until = null;
  }

  // ---- helpers ------------------------------------------------------------------------------------------------

  /** Remembers the current statuses of a project's jobs and pipelines, so later changes are events. */
  private watch(projectId: number): void {
    if (this.watchedProjects.has(projectId)) return;
    this.watchedProjects.add(projectId);
    for (const pipeline of this.state.pipelines.values()) {
      if (pipeline.project_id === projectId)
        this.pipelineStatuses.set(pipeline.id, this.state.pipelineStatus(pipeline));
    }
    for (const job of this.state.jobs.values()) {
      if (job.project_id === projectId && job.kind === 'build') this.jobStatuses.set(job.id, job.status);
    }
  }

  private seeded(hook: WorldHook, id: number, projectId: number, seeding: WorldSeeding): HookRecord {
    const events = Object.fromEntries(PROJECT_HOOK_EVENT_FLAGS.map((flag) => [flag, hook[flag]])) as Record<
      ProjectHookEventFlag,
      boolean
    >;
    return {
      id,
      project_id: projectId,
      url: hook.url,
      name: hook.name,
      description: hook.description,
      token: hook.token ?? null,
      created_at: hook.created_at ? seeding.time(hook.created_at) : seeding.now(),
      events,
      push_events_branch_filter: hook.push_events_branch_filter,
      branch_filter_strategy: 'wildcard',
      enable_ssl_verification: hook.enable_ssl_verification,
      custom_webhook_template: null,
      custom_headers: { ...hook.custom_headers },
      url_variables: {},
      recent_failures: 0,
      disabled_until: null,
    };
  }

  private releaseSettleWaiters(): void {
    const waiters = this.settleWaiters;
    this.settleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

/** `{name}` references filled in from the hook's URL variables (`WebHooks::Hook#interpolated_url`). */
export function interpolateHookUrl(url: string, variables: Record<string, string>): string {
  return url.replace(HOOK_URL_VARIABLE, (match, name: string) => variables[name] ?? match);
}

function redactedHeaders(headers: Record<string, string>, hook: HookRecord): Record<string, string> {
  const custom = new Set(Object.keys(hook.custom_headers).map((k) => k.toLowerCase()));
  return Object.fromEntries(
    Object.entries(headers).map(([name, value]) =>
      name === 'X-Gitlab-Token' || (custom.has(name.toLowerCase()) && value === hook.custom_headers[name])
        ? [name, '[REDACTED]']
        : [name, value],
    ),
  );
}
