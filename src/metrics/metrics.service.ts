import { Inject, Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { APP_CONFIG } from '../config/config.module';
import type { AppConfig } from '../config/schema';
import type { PolicyMeasure } from './policy-measure';
import { VERSION } from '../version';

/**
 * The Prometheus registry of this process: Node's process metrics plus `forgewarden_*` ones. A registry of its own
 * (not prom-client's global one) so that two apps in one test process do not share counters.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  /** Every answer of the forge (or network failure), for error-rate and budget dashboards. */
  readonly apiRequests: Counter<'method' | 'status'>;
  readonly apiRequestDuration: Histogram<'method' | 'route'>;
  readonly decisions: Counter<'policy' | 'action' | 'outcome'>;
  readonly policyRunSeconds: Histogram<'policy'>;
  /** 1 while this replica's Redis connection answers; alert on 0. */
  readonly redisUp: Gauge;
  readonly redisNoEviction: Gauge;
  /** Times the primary this replica writes to was found to be another server (a Sentinel or Cluster failover). */
  readonly redisFailovers: Counter;
  /** Targets whose decision is still open after the last acting pass; alert when one stays open for long. */
  readonly unsettledTargets: Gauge<'policy'>;
  /** Cluster-wide, read from Redis: targets parked after a final refusal of the forge (403, "not retryable"...). */
  readonly targetsRefused: Gauge<'policy'>;
  /** Times the daemon found Redis without its data and set itself up again. */
  readonly redisDataLost: Counter;
  /**
   * Passes by result: `failed` when observing or deciding failed as a whole, `partial` when some targets could not be
   * read (the others were decided and acted on) or the forge refused an action for good (failed actions count in
   * decisions).
   */
  readonly passes: Counter<'policy' | 'result'>;
  /** Cluster-wide, read from Redis: absent until a policy's first successful pass. */
  readonly lastSuccessfulPass: Gauge<'policy'>;
  /** Cluster-wide, read from Redis when scraped: 1 while the policy is paused (`forgewarden pause`), else 0. */
  readonly policyPaused: Gauge<'policy'>;
  readonly harmOpen: Gauge<'policy' | 'kind'>;
  /** The interval, or the longest gap between two runs of a cron schedule: "no pass for 3 intervals" alerts on it. */
  readonly policyInterval: Gauge<'policy'>;
  /** 1 while the forge accepted the token at the last check. */
  readonly forgeUp: Gauge;
  /**
   * When the daemon's own token stops working (`active`; with a rotating pair also `spare`); absent while it never
   * expires or its expiry cannot be read, so an alert on it never fires on a zero.
   */
  readonly tokenExpiresAt: Gauge<'token'>;
  /** 1 while a rotation of the daemon's own token is sent and its answer not yet written: the bot's own harm to repair. */
  readonly tokenRotationPending: Gauge;
  /**
   * 1 when the last load of the policy file (at start or on SIGHUP) was taken, 0 when a reload was refused and the
   * previous policies still run. Per replica: each reloads its own file.
   */
  readonly configLastReloadSuccessful: Gauge;
  /** When the policy file was last taken, at start or on SIGHUP. */
  readonly configLastReloadSuccessTimestamp: Gauge;
  /**
   * Webhook deliveries by event (`job`, `pipeline`, `other`) and result: `accepted` (queued), `duplicate`, `ignored`
   * (another kind, or no failure), `unauthorized`, `rejected` (bad body), `unavailable` (Redis down: the forge sends it
   * again); then, once handled, `acted` (a policy covered it) or `not_covered`, or `failed`.
   */
  readonly webhookDeliveries: Counter<'event' | 'result'>;
  /** From a job's failure (`build_finished_at`) to the action a webhook led to, per policy. */
  readonly failureToAction: Histogram<'policy'>;
  private readonly policies: Gauge<'type' | 'mode'>;
  private readonly measures = new Map<string, Gauge | Counter>();
  /** Read what Redis holds before a scrape is answered (see `beforeScrape`). */
  private readonly scrapeReaders: Array<() => Promise<void>> = [];

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    collectDefaultMetrics({ register: this.registry });
    this.apiRequests = new Counter({
      name: 'forgewarden_api_requests_total',
      help: 'Requests to the forge by method and answer status (network_error when none came).',
      labelNames: ['method', 'status'],
      registers: [this.registry],
    });
    this.apiRequestDuration = new Histogram({
      name: 'forgewarden_api_request_duration_seconds',
      help: 'Time to a complete answer from the forge, by method and route template.',
      labelNames: ['method', 'route'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [this.registry],
    });
    this.decisions = new Counter({
      name: 'forgewarden_decisions_total',
      help: 'Decisions by policy, action (skip included) and outcome.',
      labelNames: ['policy', 'action', 'outcome'],
      registers: [this.registry],
    });
    this.policyRunSeconds = new Histogram({
      name: 'forgewarden_policy_run_seconds',
      help: 'Duration of one pass of a policy: observe, decide and act.',
      labelNames: ['policy'],
      buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers: [this.registry],
    });
    this.redisUp = new Gauge({
      name: 'forgewarden_redis_up',
      help: '1 while Redis answered the last check (every 10 s), else 0.',
      registers: [this.registry],
    });
    this.redisNoEviction = new Gauge({
      name: 'forgewarden_redis_noeviction',
      help: "1 while Redis's maxmemory-policy is noeviction, 0 while another policy may evict the daemon's ledgers (an evicted ledger key is an action done twice); absent when Redis does not say.",
      registers: [this.registry],
    });
    this.redisFailovers = new Counter({
      name: 'forgewarden_redis_failovers_total',
      help: 'Times this replica found its Redis primary replaced by another server (a Sentinel or Cluster failover) and went on with the new one.',
      registers: [this.registry],
    });
    this.unsettledTargets = new Gauge({
      name: 'forgewarden_unsettled_targets',
      help: 'Targets whose action failed, may have acted, waits or was deferred after the last acting pass; looked at again next pass.',
      labelNames: ['policy'],
      registers: [this.registry],
    });
    this.targetsRefused = new Gauge({
      name: 'forgewarden_targets_refused',
      help: 'Targets parked after a final refusal of the forge (403, a job not retryable, an archived project); looked at again after 1 h, doubling to a day.',
      labelNames: ['policy'],
      registers: [this.registry],
    });
    this.webhookDeliveries = new Counter({
      name: 'forgewarden_webhook_deliveries_total',
      help: 'Webhook deliveries by event and result (accepted, duplicate, ignored, unauthorized, rejected, unavailable; then acted, not_covered or failed).',
      labelNames: ['event', 'result'],
      registers: [this.registry],
    });
    this.failureToAction = new Histogram({
      name: 'forgewarden_webhook_failure_to_action_seconds',
      help: 'From a job failure on the forge to the action a webhook delivery led to (a retry), per policy.',
      labelNames: ['policy'],
      buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300],
      registers: [this.registry],
    });
    this.redisDataLost = new Counter({
      name: 'forgewarden_redis_data_lost_total',
      help: "Times Redis was found without the daemon's data (restarted empty, failed over, flushed); schedules were made again.",
      registers: [this.registry],
    });
    this.passes = new Counter({
      name: 'forgewarden_passes_total',
      help: 'Passes by policy and result: ok; partial when some targets could not be read or an action was refused for good (the rest went on); failed when observing or deciding failed as a whole (failed actions are counted in forgewarden_decisions_total).',
      labelNames: ['policy', 'result'],
      registers: [this.registry],
    });
    this.lastSuccessfulPass = new Gauge({
      name: 'forgewarden_last_successful_pass_timestamp_seconds',
      help: 'When the last successful pass of the policy ended, on any replica (read from Redis); absent until the first.',
      labelNames: ['policy'],
      registers: [this.registry],
    });
    this.policyPaused = new Gauge({
      name: 'forgewarden_policy_paused',
      help: '1 while the policy is paused (forgewarden pause, or the console): it decides but starts no action; 0 while it runs.',
      labelNames: ['policy'],
      registers: [this.registry],
    });
    this.harmOpen = new Gauge({
      name: 'forgewarden_harm_open',
      help: "Half-done changes of the bot's own (a branch left unprotected by a cut reprotect, a new key left where its old one was taken away) that the policy's last acting pass did not mend, by kind; mended first at every pass, never parked.",
      labelNames: ['policy', 'kind'],
      registers: [this.registry],
    });
    this.policyInterval = new Gauge({
      name: 'forgewarden_policy_interval_seconds',
      help: "The policy's interval, or the longest gap between two runs of its cron schedule.",
      labelNames: ['policy'],
      registers: [this.registry],
    });
    this.forgeUp = new Gauge({
      name: 'forgewarden_forge_up',
      help: '1 while the forge answered GET /user and accepted the token at the last check (every 30 s), else 0.',
      registers: [this.registry],
    });
    this.tokenExpiresAt = new Gauge({
      name: 'forgewarden_token_expires_at_seconds',
      help: "When the daemon's own token stops working (00:00 UTC of its expiry day), by token (active, and spare when it rotates a pair); absent while it never expires or its expiry cannot be read.",
      labelNames: ['token'],
      registers: [this.registry],
    });
    this.tokenRotationPending = new Gauge({
      name: 'forgewarden_token_rotation_pending',
      help: "1 while a rotation of the daemon's own token was sent and its answer is not written to gitlab.token_file (lost on the way, or the successor not found yet), else 0.",
      registers: [this.registry],
    });
    // Named as Prometheus names its own (prometheus_config_last_reload_successful, ..._success_timestamp_seconds), so
    // the alerts and panels operators already have for it read the same.
    this.configLastReloadSuccessful = new Gauge({
      name: 'forgewarden_config_last_reload_successful',
      help: 'Whether the last load of the policy file (at start or on SIGHUP) succeeded: 1, or 0 when it had problems and the previous policies still run.',
      registers: [this.registry],
    });
    this.configLastReloadSuccessTimestamp = new Gauge({
      name: 'forgewarden_config_last_reload_success_timestamp_seconds',
      help: 'When the policy file was last loaded successfully, at start or on SIGHUP.',
      registers: [this.registry],
    });
    new Gauge({
      name: 'forgewarden_api_request_budget_per_minute',
      help: 'Requests per minute all replicas may send together (gitlab.max_requests_per_minute).',
      registers: [this.registry],
    }).set(config.gitlab.max_requests_per_minute);
    new Gauge({
      name: 'forgewarden_build_info',
      help: 'Always 1; the labels tell which version runs.',
      labelNames: ['version'],
      registers: [this.registry],
    }).set({ version: VERSION }, 1);
    this.policies = new Gauge({
      name: 'forgewarden_policies',
      help: 'Configured policies by type and whether they act or only record what they would do.',
      labelNames: ['type', 'mode'],
      registers: [this.registry],
    });
    this.describePolicies(config);
  }

  /** The per-policy gauges of a configuration: at start, and again after a reload. */
  describePolicies(config: AppConfig, intervals: ReadonlyMap<string, number> = new Map()): void {
    this.policies.reset();
    for (const policy of config.policies) {
      this.policies.inc({ type: policy.type, mode: (policy.dry_run ?? config.dry_run) ? 'dry_run' : 'acting' });
    }
    this.policyInterval.reset();
    for (const [policy, seconds] of intervals) this.policyInterval.set({ policy }, seconds);
    // A removed policy's last pass is no longer news (an alert on it would never clear); the engine sets the
    // configured ones again from Redis within seconds.
    this.lastSuccessfulPass.reset();
    this.policyPaused.reset();
    this.harmOpen.reset();
  }

  /**
   * `read` runs before each scrape is answered, so a gauge that one replica's action changes cluster-wide (a pause) is
   * as fresh on every replica as Redis is. A failing read leaves the gauges as they were.
   */
  beforeScrape(read: () => Promise<void>): void {
    this.scrapeReaders.push(read);
  }

  /**
   * The metric of a measure a policy type declares (`PolicyType.measures`), made the first time it is asked for:
   * `forgewarden_<name>` with the labels `policy` and the measure's own. The engine names no policy or measure.
   */
  policyMeasure(measure: PolicyMeasure): Gauge | Counter {
    const name = `forgewarden_${measure.name}`;
    const known = this.measures.get(name);
    if (known) return known;
    const options = { name, help: measure.help, labelNames: ['policy', ...measure.labels], registers: [this.registry] };
    const made = measure.kind === 'gauge' ? new Gauge(options) : new Counter(options);
    this.measures.set(name, made);
    return made;
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  async render(): Promise<string> {
    await Promise.all(this.scrapeReaders.map((read) => read().catch(() => undefined)));
    return this.registry.metrics();
  }
}
