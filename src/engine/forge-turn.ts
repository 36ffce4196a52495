import type { ForgeLimit, ForgeLimits, ForgeSlot, PolicyClock } from './policy';

/**
 * Waits until a request of `limit` is within the forge's limit (counted for every replica) and takes it: for a request
 * that must not be refused, such as an upload a 429's retry would send whole again. `waiting` hears each wait first.
 */
export async function forgeTurn(
  limits: ForgeLimits,
  limit: ForgeLimit,
  clock: PolicyClock,
  waiting?: (waitMs: number) => void,
): Promise<ForgeSlot> {
  for (;;) {
    const slot = await limits.take(limit, clock.now());
    if (slot.waitMs === 0) return slot;
    waiting?.(slot.waitMs);
    await clock.sleep(slot.waitMs);
  }
}
