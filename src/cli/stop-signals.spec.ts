import { EventEmitter } from 'node:events';
import { SAME_REQUEST_MS, StopSignals } from './stop-signals';

/** Signals from a test's emitter, at times the test sets. */
function harness() {
  const source = new EventEmitter();
  let now = 0;
  const insisted: string[] = [];
  const signals = new StopSignals(
    (signal) => insisted.push(signal),
    source,
    () => now,
  );
  let why: string | undefined;
  void signals.requested.then((reason) => (why = reason));
  return {
    source,
    signals,
    insisted,
    at: async (ms: number, signal: 'SIGINT' | 'SIGTERM') => {
      now = ms;
      source.emit(signal);
      await Promise.resolve();
    },
    why: () => why,
  };
}

describe('StopSignals', () => {
  it('takes the first signal as the stop request', async () => {
    const h = harness();
    await h.at(0, 'SIGINT');
    expect([h.why(), h.insisted]).toEqual(['SIGINT received', []]);
  });

  it('takes a repeat within a moment as the same request: Ctrl-C reaching the process from its group and through npm', async () => {
    const h = harness();
    await h.at(1_000, 'SIGINT');
    await h.at(1_000 + SAME_REQUEST_MS - 1, 'SIGINT');
    await h.at(1_000 + SAME_REQUEST_MS - 1, 'SIGTERM');
    expect([h.why(), h.insisted]).toEqual(['SIGINT received', []]);
  });

  it('takes a signal after that moment as a person insisting', async () => {
    const h = harness();
    await h.at(1_000, 'SIGTERM');
    await h.at(1_000 + SAME_REQUEST_MS, 'SIGINT');
    expect([h.why(), h.insisted]).toEqual(['SIGTERM received', ['SIGINT']]);
  });

  it('counts the moment from a stop asked for otherwise (the parent gone)', async () => {
    const h = harness();
    h.signals.request('its parent process (npm) ended');
    await h.at(10, 'SIGINT');
    await h.at(SAME_REQUEST_MS + 10, 'SIGTERM');
    expect([h.why(), h.insisted]).toEqual(['its parent process (npm) ended', ['SIGTERM']]);
  });

  it('leaves the source when disposed', () => {
    const h = harness();
    expect(h.source.listenerCount('SIGINT') + h.source.listenerCount('SIGTERM')).toBe(2);
    h.signals.dispose();
    expect(h.source.listenerCount('SIGINT') + h.source.listenerCount('SIGTERM')).toBe(0);
  });
});
