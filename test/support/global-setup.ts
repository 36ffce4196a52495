import { redisAnswers, redisServerInstalled, startRedisServer } from './redis-server';

/**
 * Tests need a real Redis. An explicit REDIS_URL is used as given; otherwise a throwaway redis-server is started on a
 * free port (so the tests never touch a Redis someone else relies on); failing that, the default local one is tried.
 */
export default async function globalSetup(): Promise<void> {
  const explicit = process.env.REDIS_URL;
  if (explicit) {
    if (!(await redisAnswers(explicit))) throw new Error(`tests need Redis, but none answers at REDIS_URL=${explicit}`);
    return;
  }
  if (redisServerInstalled()) {
    const redis = await startRedisServer();
    process.env.REDIS_URL = redis.url;
    (globalThis as { __throwawayRedis?: typeof redis }).__throwawayRedis = redis;
    return;
  }
  const fallback = 'redis://127.0.0.1:6379';
  if (!(await redisAnswers(fallback))) {
    throw new Error('tests need Redis: set REDIS_URL, install redis-server, or start one on 127.0.0.1:6379');
  }
  process.env.REDIS_URL = fallback;
}
