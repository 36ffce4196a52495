import { oneTryOptions, openRedis, type RedisClient, type RedisTarget } from './connection';

/** The connection of a one-shot check, for code outside src/redis that only hands it on. */
export type CheckConnection = RedisClient;

/** A connection for a one-shot check (`doctor`): it gives up at once instead of reconnecting. */
export function openCheckConnection(target: RedisTarget, timeoutMs: number): CheckConnection {
  const connection = openRedis(target, oneTryOptions(timeoutMs));
  connection.on('error', () => undefined);
  return connection;
}

/**
 * Whether Redis takes a write and gives it back (a read-only replica, or a full disk, refuses writes): undefined when
 * it does, else what went wrong.
 */
export async function writeProblem(connection: RedisClient, key: string): Promise<string | undefined> {
  try {
    const written = `doctor ${Date.now()}`;
    await connection.set(key, written, 'PX', 10_000);
    const read = await connection.get(key);
    await connection.del(key);
    return read === written ? undefined : 'answers, but a value written could not be read back';
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const hint = /READONLY/.test(message)
      ? ' (a read-only replica? point redis.url at the primary, or use redis.sentinels)'
      : '';
    return `answers, but refuses writes: ${message}${hint}`;
  }
}
