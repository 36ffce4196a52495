import { ApiError, NotFoundError } from '../gitlab/transport/errors';
import { mapTargets } from './map-limited';
import type { ObserveContext, UnobservedTarget, UnobservedTargets } from './policy';

/**
 * Observing target by target: one project the token may not read, one group deleted since discovery, one answer
 * without a field the policy needs, is that target's problem and not the pass's. The pass goes on with the others
 * and ends `partial`, naming the target and the forge's answer.
 */

/** How a target of a pass is named, and whether the policy file names it itself (by id or path) or a glob found it. */
export interface TargetLabel {
  /** For people: `project acme/web`, `group acme/tools`. */
  readonly target: string;
  /** Named in the file: its absence is an error for it. Found by a glob: one gone since discovery just drops out. */
  readonly listed: boolean;
}

/**
 * `read` over the targets of a pass, as mapTargets does (the pass's concurrency and pace, results in order), each on
 * its own: a target whose read the forge refuses or answers oddly is recorded in `context.unobserved` and comes back
 * undefined, and a target a glob found that is gone since discovery (404) drops out with one line. Anything that is
 * not the forge's answer (Redis away, a bug) still fails the pass: it is no one target's problem.
 */
export async function observeTargets<T, R>(
  context: Pick<ObserveContext, 'concurrency' | 'pace' | 'unobserved' | 'logger'>,
  items: readonly T[],
  label: (item: T) => TargetLabel,
  read: (item: T) => Promise<R>,
): Promise<Array<R | undefined>> {
  return mapTargets(context, items, async (item) => {
    try {
      return await read(item);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      const { target, listed } = label(item);
      if (error instanceof NotFoundError && !listed) {
        // Found again under its new path when moved; nothing to report when deleted.
        context.logger.warn(`${target} is gone (deleted or moved since discovery); left out of this pass`);
        return undefined;
      }
      // Said once: the engine logs and audits the pass's unread targets (plan prints them).
      context.unobserved.record(target, error);
      context.logger.debug(`${target} could not be read (${error.summary}); the other targets go on`);
      return undefined;
    }
  });
}

/** One pass's unobserved targets, each once, in the order met. */
export class UnobservedList implements UnobservedTargets {
  private readonly targets = new Map<string, UnobservedTarget>();

  record(target: string, error: unknown): void {
    if (this.targets.has(target)) return;
    const reason = error instanceof ApiError ? error.summary : error instanceof Error ? error.message : String(error);
    this.targets.set(target, { target, reason });
  }

  list(): readonly UnobservedTarget[] {
    return [...this.targets.values()];
  }
}
