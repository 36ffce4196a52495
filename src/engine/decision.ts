/**
 * What a policy decides and what becomes of it: the records that travel between decide, the executor, the queue, the
 * ledger, the unsettled targets and the audit trail. Plain data, no behaviour.
 */

/** A value that survives JSON.stringify and JSON.parse unchanged. */
export type JsonValue = string | number | boolean | null | readonly JsonValue[] | { readonly [key: string]: JsonValue };

/**
 * Values a decision carries to its action: plain JSON (lists and objects too), so a delayed action survives the
 * queue, the ledger and the unsettled targets. Each action reads them back through its zod schema (defineAction).
 */
export type ActionParams = Readonly<Record<string, JsonValue>>;

/** What a policy decided for one target: an action, or a skip, always with a human reason. */
export interface Decision {
  /** The action's name (`retry`, `delete_tags`, `approve`...) or `skip`. */
  readonly action: string;
  /** What the decision is about, for people: `acme/api job 812 (test-unit)`. */
  readonly target: string;
  /**
   * The action's identity: the engine acts on one key at most once per policy, across passes, replicas, restarts and
   * repeated queue deliveries. For a skip it still names the target.
   */
  readonly key: string;
  /** Why: `retry 2 of 2: log matched "connection reset"`, `skip: stage deploy not matched`. */
  readonly reason: string;
  /** Wait this long before acting (a retry `delay`). */
  readonly delayMs?: number;
  /** What the action needs (ids); shown by `plan --json`. */
  readonly params: ActionParams;
  /** Lines `plan` prints under the decision, such as the tags one bulk deletion would remove. */
  readonly details?: readonly string[];
  /**
   * The kind of the bot's own harm this decision mends (a branch left unprotected by a cut reprotect), one the policy
   * type declares in `harms`: it runs first, is never parked or capped, and is tried again within the pass.
   */
  readonly repairs?: string;
}

export const SKIP = 'skip';

/**
 * A target an earlier acting pass left open (its action failed, may have acted, was deferred or waits), as the
 * engine keeps it between passes. Observe must look at each again, wherever the policy's progress marks stand: a
 * policy that reads everything every pass does so by itself, one with watermarks (job_retry) reads these too.
 */
export interface UnsettledTarget {
  /** The decision's key. */
  readonly key: string;
  readonly action: string;
  readonly target: string;
  readonly params: ActionParams;
  /** What happened last: failed, refused, uncertain, deferred, scheduled, rate_limited, in_progress, paused. */
  readonly outcome: string;
  /** When the target was first left open, ISO 8601. */
  readonly since: string;
  /** What the last attempt said (the forge's answer, why it waits), as the audit trail has it. */
  readonly detail?: string;
  /** With `refused`: what the forge said and when the target is looked at again. */
  readonly refusal?: Refusal;
}

/**
 * What became of one decision in an acting pass. skipped: decided not to act · would_act: dry run · done ·
 * duplicate: settled already (by this or another replica) · gone: the target no longer exists (someone else handled
 * it) · stale: the forge state the decision rested on no longer holds when re-read just before acting (a person
 * changed it); nothing was sent and the next pass decides afresh · failed · refused: the forge refused for good (403,
 * a 400 saying it will not do it); the target is parked and looked at again with backoff · scheduled: queued to run
 * after its delay · deferred: over `max_actions_per_run`, decided again next pass · rate_limited: the forge refused
 * for now and did nothing · in_progress: another replica is acting on it right now · uncertain: an earlier attempt
 * may have acted, and the forge has not been looked at since; the next pass decides · paused: the policy is paused
 * (`forgewarden pause`); nothing was sent, and the target stays open until it is resumed.
 */
export type Outcome =
  | 'skipped'
  | 'would_act'
  | 'done'
  | 'duplicate'
  | 'gone'
  | 'stale'
  | 'failed'
  | 'refused'
  | 'scheduled'
  | 'deferred'
  | 'paused'
  | 'rate_limited'
  | 'in_progress'
  | 'uncertain';

/**
 * A final refusal of the forge for one decision's key: what it said, since when, and when the target is looked at
 * again (1 h after the first refusal, doubling to a day). Kept with the unsettled targets.
 */
export interface Refusal {
  /** When the forge first refused, ISO 8601. */
  readonly since: string;
  /** The forge's answer: `POST projects/7/jobs/812/retry → 403: 403 Forbidden`. */
  readonly message: string;
  /** Refusals in a row. */
  readonly count: number;
  /** No attempt before this time, ISO 8601, unless the decision changes. */
  readonly retry_at: string;
  /** The decision refused (its action and params): a different decision for the same key is tried at once. */
  readonly fingerprint: string;
}

export interface ActionRecord {
  readonly decision: Decision;
  readonly outcome: Outcome;
  readonly detail?: string;
  /** What a done action could not do (the projects a backup set lacks): the pass is partial, and names them. */
  readonly incomplete?: readonly string[];
  /** The bot's own harm the action left when it failed half-way (see HarmLeftError): open until a repair mends it. */
  readonly leftHarm?: { readonly kind: string; readonly what: string };
  /** With `refused`: the refusal, as the unsettled targets keep it. */
  readonly refusal?: Refusal;
}

/**
 * A target a pass could not read (a project the token may not see, one deleted since discovery, an answer without a
 * field the policy needs): recorded against that target, while the pass goes on with the others and ends `partial`.
 */
export interface UnobservedTarget {
  /** For people: `project acme/web`. */
  readonly target: string;
  /** What the forge answered: `GET projects/acme%2Fweb/jobs → 403: 403 Forbidden`. */
  readonly reason: string;
}

/** Where observe records the targets it could not read; the engine reports them with the pass. */
export interface UnobservedTargets {
  record(target: string, error: unknown): void;
  list(): readonly UnobservedTarget[];
}
