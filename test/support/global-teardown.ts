import type { ThrowawayRedis } from './redis-server';

export default async function globalTeardown(): Promise<void> {
  const redis = (globalThis as { __throwawayRedis?: ThrowawayRedis }).__throwawayRedis;
  if (redis) await redis.stop();
}
