import type { Clock } from '../clock';

/** The forge's limit of project imports: 6 a minute per user ("Rate limits for imports and exports of project and groups"). */
export const PROJECT_IMPORTS_PER_WINDOW = 6;
export const PROJECT_IMPORT_WINDOW_MS = 60_000;

/**
 * Spaces the project imports of one process so that at most `limit` are sent in any `windowMs`, so a restore stays
 * under the forge's limit instead of meeting its 429 (whose retry would resend a whole upload).
 *
 * The forge counts a request in a window that starts with the first request it counts and lasts `windowMs`. Each
 * import is recorded when its answer (or its failure) arrives, which is after the forge counted it: the next request
 * over the limit is sent at least `windowMs` after that, so it always falls after the window its predecessors opened.
 * For one import at a time: `turn()`, send, then the release `turn` answered.
 */
export class ImportPacer {
  /** When the answers of the recent imports arrived (monotonic), oldest first. */
  private readonly answered: number[] = [];

  constructor(
    private readonly clock: Pick<Clock, 'monotonic' | 'sleep'>,
    private readonly onWait: (ms: number) => void = () => undefined,
    private readonly limit = PROJECT_IMPORTS_PER_WINDOW,
    private readonly windowMs = PROJECT_IMPORT_WINDOW_MS,
  ) {}

  /** Waits until one more import may be sent; call the answer once the request has ended, however it ended. */
  async turn(): Promise<() => void> {
    for (;;) {
      const wait = this.waitMs(this.clock.monotonic());
      if (wait === 0) break;
      this.onWait(wait);
      await this.clock.sleep(wait);
    }
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.answered.push(this.clock.monotonic());
    };
  }

  /** How long the next import must wait at `now`: 0 while fewer than `limit` answers arrived in the last window. */
  waitMs(now: number): number {
    while (this.answered.length > 0 && (this.answered[0] ?? 0) + this.windowMs <= now) this.answered.shift();
    if (this.answered.length < this.limit) return 0;
    return (this.answered[0] ?? now) + this.windowMs - now;
  }
}
