/**
 * `node --expose-gc --require gc-probe.js …`: on SIGUSR2 the process collects its garbage and says its memory on
 * stderr as one line `forgewarden-bench-gc={...}` (process.memoryUsage() after a full collection). With
 * FORGEWARDEN_BENCH_SNAPSHOTS=DIR it also writes a heap snapshot there. bench/scale.ts uses it to tell the daemon's
 * live heap from the garbage V8 has not collected yet.
 */
import { writeHeapSnapshot } from 'node:v8';
import { join } from 'node:path';

let taken = 0;
process.on('SIGUSR2', () => {
  const gc = (global as { gc?: () => void }).gc;
  gc?.();
  const usage = { ...process.memoryUsage(), collected: gc !== undefined };
  const dir = process.env.FORGEWARDEN_BENCH_SNAPSHOTS;
  // A snapshot collects first anyway; it is written after the figures, so that they are not the snapshot's own.
  const snapshot = dir ? writeHeapSnapshot(join(dir, `daemon-${process.pid}-${++taken}.heapsnapshot`)) : undefined;
  process.stderr.write(`\nforgewarden-bench-gc=${JSON.stringify({ ...usage, ...(snapshot ? { snapshot } : {}) })}\n`);
});
