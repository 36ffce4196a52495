import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { APP_CONFIG } from '../config/config.module';
import { formatDuration } from '../config/duration';
import type { AppConfig } from '../config/schema';
import { redisKeyPrefix, type RedisClient } from './connection';
import { REDIS } from './redis-token';
import { infoField, serverOf } from './topology';

/**
 * A write that guards an action could not be confirmed on enough replicas: the action is not sent this pass. Thrown
 * by guarded writes of policy state; the executor reports the action as deferred, not failed.
 */
export class ReplicationUnconfirmedError extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'ReplicationUnconfirmedError';
  }
}

/**
 * Confirms that a write which guards an action (a ledger claim, the record of a bulk deletion) reached
 * `redis.min_replicas_acked` replicas before the action is sent. Replication is asynchronous: a write the primary
 * answered may be lost when a replica is promoted a moment later, and a claim lost that way lets a second replica act
 * again. Redis' WAIT blocks until the replicas hold every write this connection sent, or a timeout.
 */
@Injectable()
export class ReplicaAcks implements OnApplicationBootstrap {
  private readonly logger = new Logger('Redis');
  /** Replicas a guarding write must reach; 0 turns confirmation off. */
  private required = 0;
  /** Set after a confirmation failed: the next one asks how many replicas are connected before blocking on WAIT. */
  private degraded = false;

  constructor(
    @Inject(REDIS) private readonly redis: RedisClient,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.required = await this.requiredAcks();
    if (this.required > 0)
      this.logger.log(
        `claims wait for ${this.required} replica(s) to hold them before an action is sent (redis.min_replicas_acked)`,
      );
  }

  /**
   * Undefined when the writes sent so far on the connection that holds `key` are on enough replicas and
   * `stillHolds` (a read of the write, made after the WAIT) finds it; else why not. The read matters: a connection
   * that failed over between the write and the WAIT sends the WAIT to the new primary, which confirms nothing about a
   * write that stayed on the old one.
   */
  async confirm(key: string, stillHolds: () => Promise<boolean>): Promise<string | undefined> {
    if (this.required === 0) return undefined;
    const timeoutMs = this.config.redis.replica_ack_timeout;
    try {
      const server = await serverOf(this.redis, key);
      if (this.degraded) {
        const connected = await connectedReplicas(this.redis, key);
        if (connected < this.required) return this.shortOf(connected, 'connected');
      }
      const acked = Number(await server.wait(this.required, timeoutMs));
      if (acked < this.required) return this.shortOf(acked, `confirmed within ${formatDuration(timeoutMs)}`);
      if (!(await stillHolds()))
        return this.fail('the claim was gone when read back after WAIT (a failover under way)');
      this.degraded = false;
      return undefined;
    } catch (error) {
      return this.fail(
        `its replication could not be confirmed: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }

  /** Like `confirm`, but throws ReplicationUnconfirmedError; for policy state written before an action. */
  async require(key: string, stillHolds: () => Promise<boolean>): Promise<void> {
    const reason = await this.confirm(key, stillHolds);
    if (reason !== undefined) throw new ReplicationUnconfirmedError(reason);
  }

  private shortOf(replicas: number, how: string): string {
    return this.fail(`${replicas} of ${this.required} replica(s) ${how} (redis.min_replicas_acked)`);
  }

  private fail(reason: string): string {
    this.degraded = true;
    return reason;
  }

  private async requiredAcks(): Promise<number> {
    let connected = 0;
    try {
      connected = await connectedReplicas(this.redis, `${redisKeyPrefix(this.config.redis)}:marker`);
    } catch {
      // INFO denied, or no answer yet: only the file and the topology decide.
    }
    return requiredReplicaAcks(this.config.redis, connected);
  }
}

/**
 * The file's `min_replicas_acked`, or by default 1 where there are replicas to wait for: always behind sentinels
 * (they fail over to a replica), and otherwise when the primary has one connected at startup.
 */
export function requiredReplicaAcks(
  settings: Pick<AppConfig['redis'], 'min_replicas_acked' | 'sentinels'>,
  connected: number,
): number {
  if (settings.min_replicas_acked !== undefined) return settings.min_replicas_acked;
  if (settings.sentinels) return 1;
  return connected > 0 ? 1 : 0;
}

/** Replicas connected to the primary that holds `key`, as it says (INFO replication). */
export async function connectedReplicas(client: RedisClient, key: string): Promise<number> {
  return Number((await infoField(await serverOf(client, key), 'replication', 'connected_slaves')) ?? 0);
}
