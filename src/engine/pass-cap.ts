import { type Decision, type Outcome, SKIP } from './decision';

/**
 * How many actions one pass may start (`max_actions_per_run`): places are taken as actions start, so actions running
 * side by side share them. Skips and actions answered without acting (settled, parked) take none.
 */
export class PassCap {
  private taken = 0;

  constructor(readonly size: number) {}

  /** Takes a place; false when none is left, and the action waits for the next pass (`deferred`). */
  take(): boolean {
    if (this.taken >= this.size) return false;
    this.taken += 1;
    return true;
  }
}

/**
 * What a dry run records for each decision, in order, when nothing was settled or parked before and the policy is not
 * paused (a pass with empty stores, as `forgewarden test` runs one): skips are skipped, the first `cap` actions would
 * act, the rest are deferred. The executor takes the same places as it goes.
 */
export function dryRunOutcomes(decisions: readonly Decision[], cap: number): Outcome[] {
  const places = new PassCap(cap);
  return decisions.map((decision) => (decision.action === SKIP ? 'skipped' : places.take() ? 'would_act' : 'deferred'));
}
