import type { AppConfig } from '../../config/schema';
import { redisKeyPrefix } from '../../redis/connection';

/** Every Redis key of the engine, under the configured prefix so deployments can share a Redis. */
export class EngineKeys {
  constructor(private readonly prefix: string) {}

  static of(config: AppConfig): EngineKeys {
    return new EngineKeys(redisKeyPrefix(config.redis));
  }

  ledger(policy: string, key: string): string {
    return `${this.prefix}:ledger:${policy}:${key}`;
  }

  state(policy: string, key: string): string {
    return `${this.prefix}:state:${policy}:${key}`;
  }

  /** The lease of a claimed action: it exists while the claimer lives and works. */
  claimLease(policy: string, key: string): string {
    return `${this.prefix}:lease:claim:${policy}:${key}`;
  }

  /** A policy's targets whose decision is not settled yet (failed, deferred, waiting), kept for the next pass. */
  unsettled(policy: string): string {
    return `${this.prefix}:unsettled:${policy}`;
  }

  /**
   * Written when the daemon starts and checked while it runs: when it is missing, Redis lost its data (a restart
   * without persistence, a failover, FLUSHDB) and the daemon must set itself up again.
   */
  marker(): string {
    return `${this.prefix}:marker`;
  }

  /** Which forge the records under this prefix were made against (see RecordedForge). */
  recordedForge(): string {
    return `${this.prefix}:forge`;
  }

  /** When each policy's last successful pass ended (epoch seconds), by policy: one hash every replica reports. */
  lastSuccessfulPasses(): string {
    return `${this.prefix}:passes:last_ok`;
  }

  /** The cluster-wide gauges policies publish (PolicyType.measures), by policy, measure and labels. */
  policyMeasures(): string {
    return `${this.prefix}:measures`;
  }

  /**
   * Acting passes that began and have not ended, by policy (when they began): one killed with its process is run again
   * when a daemon starts, even for a cron policy whose next run is a day away.
   */
  passesRunning(): string {
    return `${this.prefix}:passes:running`;
  }

  /** Scheduled passes that failed in a row, by policy: how far the next extra pass after a failure backs off. */
  passFailures(): string {
    return `${this.prefix}:passes:failed`;
  }

  passLock(policy: string): string {
    return `${this.prefix}:lock:pass:${policy}`;
  }

  /** A webhook delivery seen (by a hash of its Idempotency-Key, X-Gitlab-Event-UUID or body), for a day. */
  webhookDelivery(id: string): string {
    return `${this.prefix}:webhook:seen:${id}`;
  }

  /** What discovery found of a group or a listed project, shared by every policy and replica. */
  discovery(key: string): string {
    return `${this.prefix}:discovery:${key}`;
  }

  /** Held by the replica that lists `key` again once it is stale. */
  discoveryClaim(key: string): string {
    return `${this.prefix}:lock:discovery:${key}`;
  }

  audit(): string {
    return `${this.prefix}:audit`;
  }

  /** The bot's own harm each policy's last acting pass left open (see OwnHarm), by policy. */
  ownHarm(): string {
    return `${this.prefix}:harm`;
  }

  /** Paused policies (field: the policy, value: who paused it, when and why): every replica reads it before acting. */
  pauses(): string {
    return `${this.prefix}:paused`;
  }

  /** The last passes of a policy, newest first, as the console shows them. */
  passLog(policy: string): string {
    return `${this.prefix}:passes:log:${policy}`;
  }

  /** The replicas that ran lately (field: host and process), each with when it was last seen. */
  replicas(): string {
    return `${this.prefix}:replicas`;
  }

  /** What the last look at the forge found, whichever replica looked. */
  forgeStatus(): string {
    return `${this.prefix}:forge:status`;
  }

  /** Held while the console explains a policy: one explain at a time per policy, cluster-wide. */
  explainLock(policy: string): string {
    return `${this.prefix}:lock:explain:${policy}`;
  }

  /** The requests of one of the forge's per-user limits made in the last minute (see RedisForgeLimits). */
  forgeLimit(name: string): string {
    return `${this.prefix}:forge:limit:${name}`;
  }

  /** Which generation of gitlab.token_file each replica read last (field: host and process), with when. */
  tokenFileReaders(): string {
    return `${this.prefix}:token:readers`;
  }

  /** Held while one replica rotates the daemon's own token: one rotation at a time, cluster-wide. */
  tokenRotationLease(): string {
    return `${this.prefix}:lock:token-rotation`;
  }
}
