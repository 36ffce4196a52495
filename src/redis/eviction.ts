import type Redis from 'ioredis';

/** The one `maxmemory-policy` under which Redis never drops a key to make room: it refuses the write instead. */
export const SAFE_EVICTION_POLICY = 'noeviction';

/**
 * What Redis does when it reaches `maxmemory`, from `INFO memory` (managed services that rename or deny CONFIG still
 * answer INFO); undefined when it does not say.
 */
export async function evictionPolicy(redis: Pick<Redis, 'info'>): Promise<string | undefined> {
  const info = await redis.info('memory');
  return /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
}

/**
 * Why a policy other than `noeviction` is a risk, or undefined for `noeviction`. Under any other policy Redis may drop
 * a ledger, a claim or a rotation's record when memory runs short, and a dropped ledger key is an action done twice.
 */
export function evictionRisk(policy: string): string | undefined {
  if (policy === SAFE_EVICTION_POLICY) return undefined;
  return `maxmemory-policy is ${policy}: Redis may evict a ledger or claim key when memory runs short, and an evicted ledger key is an action done twice; set maxmemory-policy ${SAFE_EVICTION_POLICY}`;
}
