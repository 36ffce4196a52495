import { z } from 'zod';
import { inScope, requestScopeShape } from './request-scope';

/**
 * Requests held at the forge's door, for tests that play a person acting at an exact moment: between the bot's
 * observation and its action, between a precondition's read and the call. A hold matches a method and a path regex
 * (as a fault does); the next `times` matching API requests wait, before the forge looks at them, until the hold is
 * released. A test waits for a request to be held, changes the forge (as a person would), then releases it: no
 * sleep, no race with the machine's load.
 */

export const holdRuleSchema = z.strictObject({
  ...requestScopeShape,
  /** Holds only requests whose User-Agent starts with this (`forgewarden`): the bot's, not a person's. */
  agent: z.string().min(1).optional(),
  /** Matching requests to let through before holding any (default 0): hold the bot's second listing, not its first. */
  after: z.number().int().nonnegative().default(0),
  /** Matching requests to hold (default 1); later ones pass. */
  times: z.number().int().positive().default(1),
});

export type HoldRuleInput = z.input<typeof holdRuleSchema>;

export interface HoldView {
  readonly id: number;
  readonly method?: string;
  readonly path?: string;
  readonly agent?: string;
  readonly after: number;
  readonly times: number;
  /** Requests that reached the hold so far (waiting or released). */
  readonly held: number;
  /** Requests waiting now. */
  readonly waiting: number;
}

interface Hold extends z.output<typeof holdRuleSchema> {
  readonly id: number;
  /** Matching requests let through so far, up to `after`. */
  passed: number;
  held: number;
  readonly waiters: Array<() => void>;
  /** Resolved whenever a request reaches the hold, for in-process tests that await it. */
  arrivals: Array<() => void>;
}

export class HoldRules {
  private holds: Hold[] = [];
  private nextId = 1;

  add(input: HoldRuleInput): HoldView {
    const hold: Hold = {
      ...holdRuleSchema.parse(input),
      id: this.nextId++,
      passed: 0,
      held: 0,
      waiters: [],
      arrivals: [],
    };
    this.holds.push(hold);
    return view(hold);
  }

  list(): HoldView[] {
    return this.holds.map(view);
  }

  get(id: number): HoldView | undefined {
    const hold = this.holds.find((candidate) => candidate.id === id);
    return hold && view(hold);
  }

  /** Lets the waiting requests go on and removes the hold; false when there is none with that id. */
  release(id: number): boolean {
    const hold = this.holds.find((candidate) => candidate.id === id);
    if (!hold) return false;
    this.holds = this.holds.filter((candidate) => candidate !== hold);
    for (const go of hold.waiters.splice(0)) go();
    for (const arrived of hold.arrivals.splice(0)) arrived();
    return true;
  }

  releaseAll(): void {
    for (const hold of [...this.holds]) this.release(hold.id);
  }

  /** Resolves once `count` requests have reached the hold (at once when they have), or when it is released. */
  reached(id: number, count = 1): Promise<void> {
    const hold = this.holds.find((candidate) => candidate.id === id);
    if (!hold || hold.held >= count) return Promise.resolve();
    return new Promise((resolve) => {
      const check = (): void => {
        const current = this.holds.find((candidate) => candidate.id === id);
        if (!current || current.held >= count) resolve();
        else current.arrivals.push(check);
      };
      hold.arrivals.push(check);
    });
  }

  /** Waits while a hold matches the request and still has turns; returns at once otherwise. */
  async pass(method: string, path: string, userAgent = ''): Promise<void> {
    const hold = this.holds.find(
      (candidate) => candidate.held < candidate.times && matches(candidate, method, path, userAgent),
    );
    if (!hold) return;
    if (hold.passed < hold.after) {
      hold.passed += 1;
      return;
    }
    hold.held += 1;
    const waiting = new Promise<void>((resolve) => hold.waiters.push(resolve));
    for (const arrived of hold.arrivals.splice(0)) arrived();
    await waiting;
  }
}

function view(hold: Hold): HoldView {
  return {
    id: hold.id,
    ...(hold.method !== undefined ? { method: hold.method } : {}),
    ...(hold.path !== undefined ? { path: hold.path } : {}),
    ...(hold.agent !== undefined ? { agent: hold.agent } : {}),
    after: hold.after,
    times: hold.times,
    held: hold.held,
    waiting: hold.waiters.length,
  };
}

function matches(hold: Hold, method: string, path: string, userAgent: string): boolean {
  return inScope(hold, method, path) && (hold.agent === undefined || userAgent.startsWith(hold.agent));
}
