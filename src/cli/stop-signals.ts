/**
 * How closely a stop signal must follow the first to be the same request. Ctrl-C in a terminal signals the whole
 * foreground process group, and npm or npx, in that group too, pass the signal on to their child: the child gets two
 * within milliseconds (more on a loaded machine) for one key press.
 */
export const SAME_REQUEST_MS = 2_000;

type StopSignal = 'SIGTERM' | 'SIGINT';

/** Where signals come from: the process, or a test's emitter. */
export interface SignalSource {
  on(signal: StopSignal, listener: () => void): unknown;
  off(signal: StopSignal, listener: () => void): unknown;
}

/**
 * SIGTERM and SIGINT as stop requests, listened for from construction until `dispose`, so that no signal ever meets
 * the default action (an exit without a word) between the first and the handling of a later one. `requested`
 * resolves with the first; a later one within SAME_REQUEST_MS is the same request and does nothing; one after that is
 * a person insisting, and calls `onInsist`.
 */
export class StopSignals {
  readonly requested: Promise<string>;
  private resolve: (why: string) => void = () => undefined;
  private firstAt: number | undefined;
  private readonly listeners: Array<[StopSignal, () => void]>;

  constructor(
    private readonly onInsist: (signal: StopSignal) => void,
    private readonly source: SignalSource = process,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.requested = new Promise((resolve) => (this.resolve = resolve));
    this.listeners = (['SIGTERM', 'SIGINT'] as const).map((signal) => [signal, () => this.received(signal)]);
    for (const [signal, listener] of this.listeners) source.on(signal, listener);
  }

  /** A stop asked for by other means than a signal (the parent process gone), as the first signal would. */
  request(why: string): void {
    this.firstAt ??= this.now();
    this.resolve(why);
  }

  dispose(): void {
    for (const [signal, listener] of this.listeners) this.source.off(signal, listener);
  }

  private received(signal: StopSignal): void {
    if (this.firstAt === undefined) {
      this.request(`${signal} received`);
      return;
    }
    if (this.now() - this.firstAt >= SAME_REQUEST_MS) this.onInsist(signal);
  }
}
