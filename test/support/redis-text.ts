import type Redis from 'ioredis';

/** Every key under `prefix` and its value, whatever its Redis type: what a test searches for a secret that must not be kept. */
export async function redisText(redis: Redis, prefix: string): Promise<string> {
  const parts: string[] = [];
  for (const key of await redis.keys(`${prefix}:*`)) {
    const type = await redis.type(key);
    parts.push(key);
    if (type === 'string') parts.push((await redis.get(key)) ?? '');
    else if (type === 'hash') parts.push(JSON.stringify(await redis.hgetall(key)));
    else if (type === 'list') parts.push(JSON.stringify(await redis.lrange(key, 0, -1)));
    else if (type === 'set') parts.push(JSON.stringify(await redis.smembers(key)));
    else if (type === 'zset') parts.push(JSON.stringify(await redis.zrange(key, 0, -1)));
    else if (type === 'stream') parts.push(JSON.stringify(await redis.xrange(key, '-', '+')));
    else parts.push(`(${type})`);
  }
  return parts.join('\n');
}
