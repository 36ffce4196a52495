import { hostname } from 'node:os';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '../../config/config.module';
import type { AppConfig } from '../../config/schema';
import { REDIS, type RedisConnection } from '../../redis/redis.module';
import { VERSION } from '../../version';
import { EngineKeys } from './keys';

/** A replica not seen for this long is forgotten. */
const FORGOTTEN_AFTER_MS = 24 * 60 * 60_000;

/** A replica seen within this long counts as running (it says so every 5 s). */
export const RUNNING_IF_SEEN_MS = 60_000;

/** This process, as the console names it. */
export const THIS_REPLICA = `${hostname()}:${process.pid}`;

export interface ReplicaSeen {
  readonly name: string;
  readonly version: string;
  /** When it started, ISO 8601. */
  readonly started: string;
  /** When it was last seen, epoch ms. */
  readonly seenMs: number;
}

/** The daemons that run against this Redis: each says it is there every few seconds, so the console can count them. */
@Injectable()
export class ReplicaPresence {
  private readonly key: string;
  private readonly started = new Date().toISOString();

  constructor(
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.key = EngineKeys.of(config).replicas();
  }

  async beat(nowMs: number): Promise<void> {
    const seen: Omit<ReplicaSeen, 'name'> = { version: VERSION, started: this.started, seenMs: nowMs };
    await this.redis.hset(this.key, THIS_REPLICA, JSON.stringify(seen));
  }

  /** A replica that stops says so: it no longer counts as running. */
  async leave(): Promise<void> {
    await this.redis.hdel(this.key, THIS_REPLICA);
  }

  /** The replicas seen since `sinceMs`; those not seen for a day are forgotten on the way. */
  async seenSince(sinceMs: number, nowMs: number): Promise<ReplicaSeen[]> {
    const fields = await this.redis.hgetall(this.key);
    const seen: ReplicaSeen[] = [];
    const forgotten: string[] = [];
    for (const [name, text] of Object.entries(fields)) {
      const replica = readReplica(name, text);
      if (!replica || replica.seenMs < nowMs - FORGOTTEN_AFTER_MS) forgotten.push(name);
      else if (replica.seenMs >= sinceMs) seen.push(replica);
    }
    if (forgotten.length > 0) await this.redis.hdel(this.key, ...forgotten);
    return seen.sort((a, b) => a.name.localeCompare(b.name));
  }
}

function readReplica(name: string, text: string): ReplicaSeen | undefined {
  try {
    const raw = JSON.parse(text) as Partial<ReplicaSeen>;
    if (typeof raw.seenMs !== 'number') return undefined;
    return { name, version: String(raw.version ?? ''), started: String(raw.started ?? ''), seenMs: raw.seenMs };
  } catch {
    return undefined;
  }
}
