import type { Logger } from '@nestjs/common';
import type { PolicyConfig, PolicyTypeDefinition } from '../config/policy-type';
import type { GroupSelection, ProjectSelection } from '../config/project-selection';
import type { ForgeEvent } from './events';
import type { TargetPace } from './pace';
import type { GroupRef, ProjectRef } from '../config/validators';
import type { GitlabClient } from '../gitlab/client';
import type { LocalFiles } from '../effects/local-files';
import type { ActionParams, ActionRecord, Decision, UnobservedTargets, UnsettledTarget } from './decision';
import type { PolicyMeasure } from '../metrics/policy-measure';

export type { PolicyMeasure };
export type {
  ActionParams,
  ActionRecord,
  Decision,
  JsonValue,
  Outcome,
  Refusal,
  UnobservedTarget,
  UnobservedTargets,
  UnsettledTarget,
} from './decision';
export { SKIP } from './decision';

/**
 * The contract between the engine and a policy type. Every policy runs the same steps:
 * trigger → observe (read the forge through the client) → decide (pure) → act (the engine's executor, which calls
 * the policy's action effects). A policy folder holds its schema, observer, pure decide function and runner;
 * policies/index.ts lists the runners.
 */

/** Small per-policy state kept in Redis between passes (watermarks, caches), namespaced by the engine. */
export interface PolicyState {
  get(key: string): Promise<string | undefined>;
  /** Several values at once, in the order asked (a watermark per project of thousands): few round trips, not one each. */
  getMany(keys: readonly string[]): Promise<Array<string | undefined>>;
  set(key: string, value: string, ttlMs?: number): Promise<void>;
  /**
   * Sets a value that guards an action about to be sent (the record that keeps a bulk deletion to one an hour): it
   * returns once the replicas `redis.min_replicas_acked` asks for hold it, and throws ReplicationUnconfirmedError
   * otherwise; the executor then reports the action deferred.
   */
  setGuard(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
}

/** Where a policy publishes the measures its runner declares. */
export interface PolicyMeasures {
  /** Sets a gauge; a cluster-wide one is kept in Redis too. */
  set(measure: PolicyMeasure, labels: Readonly<Record<string, string>>, value: number): Promise<void>;
  /** Adds to a counter of this replica. */
  add(measure: PolicyMeasure, labels: Readonly<Record<string, string>>, amount: number): void;
}

/** One of the forge's per-user limits of an endpoint, such as its 6 project export requests a minute. */
export interface ForgeLimit {
  /** Names the counter: every policy and replica taking the same name shares it. */
  readonly name: string;
  readonly perMinute: number;
}

/** A request of a forge limit, taken (`waitMs` 0) or not yet (the milliseconds until the last minute has room). */
export interface ForgeSlot {
  readonly waitMs: number;
  /**
   * Says when the forge answered the request taken: its minute counts from then. The forge counts from when the request
   * arrived, at or before its answer and perhaps well after it was taken (a slow network, a busy forge), so counting from
   * the answer never lets the next request in before the forge's minute has passed. A no-op for a slot not taken.
   */
  answered(at: Date): Promise<void>;
}

/** The forge's per-user endpoint limits, counted for every replica (see RedisForgeLimits). */
export interface ForgeLimits {
  /**
   * Takes one request of `limit` at `now` when the last minute has room for it; otherwise answers how long until it
   * has, taking nothing. A request taken is counted whether or not it is then sent.
   */
  take(limit: ForgeLimit, now: Date): Promise<ForgeSlot>;
}

/** What resolves a policy's `projects:` and `groups:` to what they cover now (the engine's ProjectDiscovery). */
export interface ProjectDiscoverer {
  select(selection: ProjectSelection, includeArchived: boolean): Promise<ProjectRef[]>;
  selectGroups(selection: GroupSelection): Promise<GroupRef[]>;
}

export type PassOccasion = 'schedule' | 'command' | 'event';

/** A change of a policy's own state worth an operator's eye (a retry storm entered or left), for the audit trail. */
export interface PolicyNote {
  /** What it is about, for people: `retry storm`. */
  readonly target: string;
  /** `storm`. */
  readonly action: string;
  readonly reason: string;
  /** `entered`, `left`. */
  readonly outcome: string;
  readonly detail?: string;
}

/** The engine's clock as a policy sees it: time read afresh, and a wait that moves with the engine's time in tests. */
export interface PolicyClock {
  now(): Date;
  sleep(ms: number): Promise<void>;
}

/**
 * What every step of a policy is handed, observing or acting. Contexts built by hand (a test, a benchmark) fill in
 * the plain members (`handContext` in engine/hand-context.ts).
 */
export interface StepContext {
  readonly client: GitlabClient;
  /**
   * The policy's configuration as the file says it now: what a precondition applies its rules with, and what an action
   * needs that its params must not carry (a secret: params are printed by `plan --json` and kept in Redis).
   */
  readonly policy: PolicyConfig;
  readonly state: PolicyState;
  readonly logger: Logger;
  /** The pass's clock reading (an action's: when it began); decide receives the same instant. */
  readonly now: Date;
  /** `plan` observes without committing anything; `act` may commit watermarks after the pass. */
  readonly mode: 'plan' | 'act';
  /** What started the pass: its schedule (ticks and follow-ups), a person's command (`plan`, `once`), or a webhook. */
  readonly occasion: PassOccasion;
  /** Where a policy publishes the measures its runner declares (`PolicyType.measures`). */
  readonly measures: PolicyMeasures;
  /** The local disk (backups written and read back): a policy reads and writes files through it, never `node:fs`. */
  readonly files: LocalFiles;
  /** Records a change of the policy's own state in the audit trail (a retry storm entered or left); nothing in `plan`. */
  readonly note: (entry: PolicyNote) => Promise<void>;
  /**
   * When the records were last dropped for describing another forge, or this one before it was reset: what a policy
   * left outside Redis before then (a key file) was made for that forge, not this one.
   */
  readonly forgeChangedAt?: Date;
}

/** What observe and commit are handed: a step's context, and what reading many targets needs. */
export interface ObserveContext extends StepContext {
  /** Reports progress of a long read (thousands of tags) to a person watching; a no-op when nobody is. */
  readonly progress: (message: string) => void;
  /** The targets earlier acting passes left open; observe looks at them again (see UnsettledTarget). */
  readonly unsettled: readonly UnsettledTarget[];
  /** Where observe records a target it could not read (see observeTargets): the pass goes on with the others. */
  readonly unobserved: UnobservedTargets;
  /** How many targets observe reads at once: the client's `gitlab.concurrency`, whose cap still bounds the requests. */
  readonly concurrency: number;
  /** Resolves the policy file's project and group globs, shared by every policy and replica; see selectProjects. */
  readonly discovery: ProjectDiscoverer;
  /** When each of `count` targets may be read: a scheduled `every:` pass spreads them (see TargetPace). */
  readonly pace: (count: number) => TargetPace;
  /**
   * When a running daemon last found Redis without its data (restarted empty, failed over, flushed): a policy whose
   * forge-side limits it cannot observe (the hourly bulk deletion) assumes they may still hold.
   */
  readonly redisDataLostAt?: Date;
}

/** What an action's precondition and effect are handed: a step's context, and the effects that take time. */
export interface ActContext extends StepContext {
  /** The engine's clock, for an action that waits (an export being prepared) or records when something ended. */
  readonly clock: PolicyClock;
  /** The forge's per-user limits of some endpoints, for an action that paces its requests to them (exports). */
  readonly forgeLimits: ForgeLimits;
}

/** What the engine builds for a pass: both sides, each of which says which part it uses. */
export type PolicyContext = ObserveContext & ActContext;

/** What an action reports back for the audit trail (the new job's id, the number of tags deleted...). */
export interface ActionResult {
  readonly detail?: string;
  /**
   * `rate_limited`: the forge refused for now (the hourly bulk deletion limit) and did nothing; the policy has
   * recorded when to try again. Reported as such, not as a failure. `stale`: the action found, from the forge's answer
   * itself, that its decision no longer holds (a job someone else retried meanwhile) and did nothing; the detail says
   * what changed.
   */
  readonly outcome?: 'rate_limited' | 'stale';
  /** What the action could not do (a project missing from a backup set, and why): the pass is then partial. */
  readonly incomplete?: readonly string[];
}

export type ActionEffect = (params: ActionParams, context: ActContext) => Promise<ActionResult | void>;

/**
 * The forge state an action's decision rested on, read again just before the action is sent: undefined while it
 * still holds, or what changed (`new key 51 is gone from acme/web`), and then the action is not sent (`stale`).
 */
export type ActionPrecondition = (params: ActionParams, context: ActContext) => Promise<string | undefined>;

/**
 * One action of a policy type, as the executor runs it: its precondition, then its effect. Every action that removes,
 * revokes, deletes, prunes or grants has a precondition; one that changes nothing a person relies on (writing a
 * local file, reading) or whose forge call re-applies the rule itself (the bulk tag deletion evaluates keep_n when it
 * runs) says why it needs none (`unchecked`). See defineAction and docs/architecture.md.
 */
export interface PolicyAction {
  readonly precondition?: ActionPrecondition;
  /** Why the action needs no precondition; set exactly when `precondition` is not. */
  readonly unchecked?: string;
  readonly run: ActionEffect;
}

/**
 * A read that shows whether a policy's target exists and the token may work on it: the same listing the policy reads
 * each pass (which needs the same role as acting on it, on this forge). `doctor` runs them.
 */
export interface TargetProbe {
  /** For people: `project acme/api (jobs)`. */
  readonly target: string;
  /** What the token needs for it, said when the forge refuses: `Maintainer role`. */
  readonly needs: string;
  /** Throws what the forge refused; returns a warning when the target works but probably not as meant. */
  read(client: GitlabClient): Promise<void | string>;
}

/**
 * A state the bot itself can leave behind when a change made in two forge calls is cut in half (the first call made,
 * the second refused or never sent). Decisions that mend it name it in `repairs` (docs/architecture.md, "Own harm").
 */
export interface HarmKind {
  /** The `kind` label of `forgewarden_harm_open`: `branch_unprotected`. */
  readonly kind: string;
  /** What it is, for the metric's help, `doctor` and the console: `a declared branch left unprotected by a cut reprotect`. */
  readonly says: string;
}

/**
 * Thrown by an action that failed between its two calls and left the bot's own harm (a branch unprotected): the
 * executor judges `failure` as it would have judged it thrown alone, and shows the harm at once, before the repair's pass.
 */
export class HarmLeftError extends Error {
  constructor(
    readonly kind: string,
    /** What is left, for people: `main is unprotected`. */
    readonly what: string,
    readonly failure: unknown,
  ) {
    super(failure instanceof Error ? failure.message : String(failure));
  }
}

/** When a policy's passes run: every interval, or on a cron schedule (cluster-wide either way). */
export type Trigger = { readonly every: number } | { readonly cron: string; readonly timezone?: string };

/** The projects and groups a pass looked at where globs chose them, for `plan`; none where the file lists them. */
export interface Covered {
  readonly projects?: readonly string[];
  readonly groups?: readonly string[];
}

/** How much of a pass's work may run: actions per pass (`max_actions_per_run`), and how many side by side. */
export interface PassLimits {
  readonly actionsPerPass: number;
  /**
   * How many of a pass's actions may run side by side; one after the other when absent. For actions that mostly wait
   * on the forge (an export being prepared), not for writes the client spaces anyway. The per-pass cap then goes to
   * whichever actions reach it first, not to the first decisions: a type that orders its decisions for the cap
   * (unprotected branches first) runs them one after the other.
   */
  readonly sideBySide?: number;
}

/** A policy type that also acts on the forge's webhook events (a failed job), besides its polls. */
export interface PolicyEvents<Config extends PolicyConfig, Snapshot> {
  /**
   * The snapshot of just what the event concerns (the failed job, its pipeline's jobs, its log tail), for decide and
   * the executor as after a poll; undefined when the policy does not cover it. Such a pass commits nothing: the
   * poll's marks stay where they are, and the ledger keeps the poll from acting on the same target again.
   */
  observe(config: Config, event: ForgeEvent, context: ObserveContext): Promise<Snapshot | undefined>;
  /** The projects whose events it acts on: where `hooks install` registers the daemon's webhook. */
  projects(config: Config, context: ObserveContext): Promise<ProjectRef[]>;
}

/**
 * A policy type as the engine runs it. `Config` is the output of the type's own schema; the engine hands each
 * configured policy of this type to these functions. The required members are every policy's steps and reports;
 * the optional ones are capabilities only some types have.
 */
export interface PolicyType<Config extends PolicyConfig = PolicyConfig, Snapshot = unknown> {
  /**
   * The type as the policy file names it, its description and its schema: the policy file is validated against the
   * definitions of the runners the build has, so a type cannot be runnable without being valid, or the other way.
   */
  readonly definition: PolicyTypeDefinition;
  trigger(config: Config): Trigger;
  /** Reads what decide needs. Paginated reads stream; logs and details are fetched only when decide needs them. */
  observe(config: Config, context: ObserveContext): Promise<Snapshot>;
  /** Pure: no I/O, no clock, no Nest. Skips are decisions too. */
  decide(config: Config, snapshot: Snapshot, now: Date): Decision[];
  /**
   * Each action this policy decides, by action name: its precondition and effect (see defineAction); the executor is
   * the only caller, and checks the precondition after claiming the action's key, so one replica re-reads and acts.
   */
  readonly actions: Readonly<Record<string, PolicyAction>>;
  /** How many actions one pass may take, and how many side by side. */
  limits(config: Config): PassLimits;
  /**
   * Pure: what one pass looked at, for the one line every pass logs (`3 projects, 12 failed jobs`), given what it
   * decided (so it never decides again).
   */
  summarize(config: Config, snapshot: Snapshot, decisions: readonly Decision[]): string;
  /** Pure: the projects and groups a pass looked at where globs chose them, for `plan`. */
  covered(config: Config, snapshot: Snapshot): Covered;
  /** Pure: the reads that show each target exists and the token may work on it (`doctor`). */
  probes(config: Config): TargetProbe[];

  /**
   * After an acting pass that was not a dry run: remember what was seen, e.g. advance watermarks. `records` say what
   * became of each decision, so commit never decides again. Marks may move past every target the pass decided on: the
   * engine keeps the unsettled ones itself and hands them to the next observe.
   */
  commit?(config: Config, snapshot: Snapshot, context: ObserveContext, records: readonly ActionRecord[]): Promise<void>;
  /**
   * Pure: when the next pass should run sooner than the trigger would (a follow-up after the forge's hourly limit, a
   * grace period ending), or undefined, given what the pass decided. The engine queues one extra pass for that time,
   * once however many replicas ask.
   */
  nextPass?(config: Config, snapshot: Snapshot, now: Date, decisions: readonly Decision[]): Date | undefined;
  /** Webhook events the type acts on, besides its polls. */
  readonly events?: PolicyEvents<Config, Snapshot>;
  /**
   * Pure: the secret values the policy's settings hold (an integration's password), which the console shows as
   * `(secret)` wherever they appear. Settings under secret-sounding keys are hidden anyway.
   */
  secrets?(config: Config): string[];
  /** Pure: why this policy needs an administrator's token, or undefined; said at start when the token is not one. */
  needsAdministrator?(config: Config): string | undefined;
  /** The figures the type publishes through `context.measures`, exported with the policy's label. */
  readonly measures?: readonly PolicyMeasure[];
  /** The kinds of its own harm the type's repairs mend (Decision.repairs names one). */
  readonly harms?: readonly HarmKind[];
  /**
   * The same configuration with each local folder the policy reads or writes (its secrets_dir, a backup destination)
   * replaced by `folder(key)`: how `forgewarden test` runs it on empty folders of its own, whatever machine it runs on.
   * A type without local folders leaves it out.
   */
  withFolders?(config: Config, folder: (key: string) => string): Config;
}
