import { FakeClock } from '../../test/support/gitlab/fake-clock';
import { ImportPacer } from './import-pacer';

/** Sends `count` imports one after another through the pacer, each taking `takes(i)` ms; answers when each was sent and answered. */
async function importsThrough(pacer: ImportPacer, clock: FakeClock, count: number, takes: (index: number) => number): Promise<Array<{ sent: number; answered: number }>> {
  const imports: Array<{ sent: number; answered: number }> = [];
  for (let index = 0; index < count; index += 1) {
    const answered = await pacer.turn();
    const sent = clock.monotonic();
    await clock.sleep(takes(index));
    answered();
    imports.push({ sent, answered: clock.monotonic() });
  }
  return imports;
}

describe('ImportPacer: at most 6 project imports in any minute, as the forge counts them', () => {
  it('lets 6 imports go at once and holds the 7th until a minute after the first was answered', async () => {
    const clock = new FakeClock(0);
    const waits: number[] = [];
    const pacer = new ImportPacer(clock, (ms) => waits.push(ms));
    const imports = await importsThrough(pacer, clock, 7, () => 1_000);
    expect(imports.slice(0, 6).map((entry) => entry.sent)).toEqual([0, 1_000, 2_000, 3_000, 4_000, 5_000]);
    // The first answer arrived at 1 s: the forge counted it at the latest then, so its window is over at 61 s.
    expect(imports[6]?.sent).toBe(61_000);
    expect(waits).toEqual([55_000]);
  });

  it('never sends a 7th import within a minute of the answer to the import 6 before it, however long uploads take', async () => {
    const clock = new FakeClock(0);
    const pacer = new ImportPacer(clock);
    const durations = [200, 30_000, 5, 5, 90_000, 5, 5, 5, 5, 5, 5, 5, 12_000, 5, 5, 5, 5, 5, 5, 5];
    const imports = await importsThrough(pacer, clock, durations.length, (index) => durations[index] ?? 5);
    for (let index = 6; index < imports.length; index += 1) {
      expect(imports[index].sent - imports[index - 6].answered).toBeGreaterThanOrEqual(60_000);
    }
  });

  it('waits for nothing when imports are slower than the limit', async () => {
    const clock = new FakeClock(0);
    const waits: number[] = [];
    const pacer = new ImportPacer(clock, (ms) => waits.push(ms));
    await importsThrough(pacer, clock, 12, () => 12_000);
    expect(waits).toEqual([]);
  });

  it('keeps to another limit and window when given them', async () => {
    const clock = new FakeClock(0);
    const pacer = new ImportPacer(clock, undefined, 2, 1_000);
    const imports = await importsThrough(pacer, clock, 4, () => 0);
    expect(imports.map((entry) => entry.sent)).toEqual([0, 0, 1_000, 1_000]);
  });
});
