/**
 * A kind of background job: its name in the queue and, through the type parameter, the shape of its payload.
 * Jobs are defined once, next to the code that handles them, and enqueued and handled only through their
 * definition, so a payload cannot drift from its handler.
 */
export interface JobDefinition<Payload> {
  readonly name: string;
  /** Carries the payload type; never set at run time. */
  readonly payloadType?: Payload;
}

const definedJobs = new Set<string>();

export function defineJob<Payload extends object>(name: string): JobDefinition<Payload> {
  if (definedJobs.has(name)) throw new Error(`job "${name}" is defined twice`);
  definedJobs.add(name);
  return { name };
}

/** Every job name defined in this process, so the worker can refuse to start with one that has no handler. */
export function definedJobNames(): readonly string[] {
  return [...definedJobs];
}

export interface JobContext {
  readonly jobId: string;
  /** 1 on the first delivery; Bull delivers at least once, so handlers are idempotent. */
  readonly attempt: number;
}

export type JobHandler<Payload> = (payload: Payload, context: JobContext) => Promise<void>;

export interface EnqueueOptions {
  /** Deduplicates: a job with the same id is not added again while it is kept. */
  readonly jobId?: string;
  readonly delayMs?: number;
  readonly attempts?: number;
}

/** A repeating job: every N ms, or on a cron expression in a time zone. */
export type Repeat = { readonly every: number } | { readonly cron: string; readonly timezone?: string };

export interface ScheduleEntry<Payload> {
  /** Identifies the schedule across restarts and replicas (a policy's name). */
  readonly id: string;
  readonly payload: Payload;
  readonly repeat: Repeat;
}
