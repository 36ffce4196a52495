import type { ThrowawayRedis } from './redis-server';

export default async function globalTeardown(): Promise<void> {
  const holder = globalThis as { __throwawayRedis?: ThrowawayRedis };
  const redis = holder.__throwawayRedis;
  delete holder.__throwawayRedis;
  if (redis) await redis.stop();
}
