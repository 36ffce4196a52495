import type { RedisConnection } from '../../redis/redis.module';
import { EngineKeys } from './keys';
import { Lease } from './lease';

/** A replica that has not said which generation it reads for this long is taken to be gone. */
const FORGOTTEN_AFTER_MS = 24 * 60 * 60_000;

export interface TokenFileReader {
  readonly replica: string;
  readonly generation: number;
  /** When it last read the file, epoch ms. */
  readonly seenMs: number;
}

/**
 * What rotating the daemon's own token needs of Redis: which generation of the token file each replica reads (a
 * token is rotated only once every replica has moved off it), and one rotation at a time across replicas.
 */
export class TokenFileReaders {
  private readonly keys: EngineKeys;

  constructor(
    private readonly redis: RedisConnection,
    prefix: string,
  ) {
    this.keys = new EngineKeys(prefix);
  }

  async say(replica: string, generation: number, nowMs: number): Promise<void> {
    await this.redis.hset(this.keys.tokenFileReaders(), replica, JSON.stringify({ generation, seenMs: nowMs }));
  }

  /** The replicas that read the file since `sinceMs`; those silent for a day are forgotten on the way. */
  async since(sinceMs: number, nowMs: number): Promise<TokenFileReader[]> {
    const fields = await this.redis.hgetall(this.keys.tokenFileReaders());
    const readers: TokenFileReader[] = [];
    const forgotten: string[] = [];
    for (const [replica, text] of Object.entries(fields)) {
      const reader = parse(replica, text);
      if (!reader || reader.seenMs < nowMs - FORGOTTEN_AFTER_MS) forgotten.push(replica);
      else if (reader.seenMs >= sinceMs) readers.push(reader);
    }
    if (forgotten.length > 0) await this.redis.hdel(this.keys.tokenFileReaders(), ...forgotten);
    return readers.sort((a, b) => a.replica.localeCompare(b.replica));
  }

  /** The rotation's lease, or undefined while another replica holds it. */
  lease(ttlMs: number): Promise<Lease | undefined> {
    return Lease.acquire(this.redis, this.keys.tokenRotationLease(), ttlMs);
  }
}

function parse(replica: string, text: string): TokenFileReader | undefined {
  try {
    const raw = JSON.parse(text) as Partial<TokenFileReader>;
    if (typeof raw.generation !== 'number' || typeof raw.seenMs !== 'number') return undefined;
    return { replica, generation: raw.generation, seenMs: raw.seenMs };
  } catch {
    return undefined;
  }
}
