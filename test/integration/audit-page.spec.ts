import Redis from 'ioredis';
import { type AuditEntry, AuditTrail } from '../../src/engine/stores/audit';
import { testConfig } from '../support/config';

/** Entries with ids of our own making (the time is the id), as the trail would have added them. */
async function add(redis: Redis, key: string, entries: ReadonlyArray<AuditEntry & { at: number }>): Promise<void> {
  const batch = redis.pipeline();
  entries.forEach(({ at, ...entry }, index) => {
    const fields = Object.entries(entry).flatMap(([field, value]) => [field, String(value)]);
    batch.xadd(key, `${at}-${index}`, ...fields);
  });
  await batch.exec();
}

const entry = (at: number, policy: string, target: string, outcome = 'done'): AuditEntry & { at: number } => ({
  at,
  time: new Date(at).toISOString(),
  policy,
  target,
  action: policy === 'retry' ? 'retry' : 'delete_tags',
  reason: 'test',
  outcome,
  dry_run: false,
});

describe('audit pages: newest first, filtered by a bounded scan, paged by id', () => {
  const prefix = `it-audit-page-${process.pid}`;
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const redis = new Redis(redisUrl);
  const trail = new AuditTrail(redis, testConfig({ prefix, redisUrl }));
  const key = `${prefix}:audit`;
  const base = Date.parse('2026-11-01T00:00:00Z');

  beforeAll(async () => {
    // 1,000 entries a second apart: every 100th of policy "rare", the others alternating "retry" and "cleanup".
    const entries = Array.from({ length: 1_000 }, (_, i) =>
      entry(
        base + i * 1000,
        i % 100 === 0 ? 'rare' : i % 2 === 0 ? 'retry' : 'cleanup',
        `acme/p${i}`,
        i % 3 === 0 ? 'failed' : 'done',
      ),
    );
    await add(redis, key, entries);
  });
  afterAll(async () => {
    await redis.del(key);
    await redis.quit();
  });

  it('the first page is the newest entries, and `before` goes on exactly where it ended', async () => {
    const first = await trail.page({}, { limit: 50, scanLimit: 10_000 });
    expect(first.entries.map((e) => e.target)).toEqual(Array.from({ length: 50 }, (_, i) => `acme/p${999 - i}`));
    expect(first.before).toBe(first.entries[49].id);
    const second = await trail.page({}, { limit: 50, scanLimit: 10_000, before: first.before! });
    expect(second.entries[0].target).toBe('acme/p949');
    expect(second.entries).toHaveLength(50);
    // The last page says nothing is older.
    const last = await trail.page({}, { limit: 50, scanLimit: 10_000, before: `${base + 10 * 1000}-0` });
    expect(last.entries.map((e) => e.target)).toEqual(Array.from({ length: 10 }, (_, i) => `acme/p${9 - i}`));
    expect(last.before).toBeUndefined();
  });

  it('filters by policy, outcome, action and target text together', async () => {
    const page = await trail.page(
      { policy: 'retry', outcome: 'failed', text: 'P9' },
      { limit: 100, scanLimit: 10_000 },
    );
    const expected = Array.from({ length: 1_000 }, (_, i) => i)
      .filter((i) => i % 100 !== 0 && i % 2 === 0 && i % 3 === 0 && String(i).startsWith('9'))
      .reverse()
      .map((i) => `acme/p${i}`);
    expect(page.entries.map((e) => e.target)).toEqual(expected);
    expect(page.entries.every((e) => e.policy === 'retry' && e.action === 'retry' && e.outcome === 'failed')).toBe(
      true,
    );
    expect(page.stoppedAt).toBeUndefined();
  });

  it("a time range is Redis's own: from and to bound the entries, both inclusive", async () => {
    const page = await trail.page({ fromMs: base + 100_000, toMs: base + 104_000 }, { limit: 50, scanLimit: 10_000 });
    expect(page.entries.map((e) => e.target)).toEqual([
      'acme/p104',
      'acme/p103',
      'acme/p102',
      'acme/p101',
      'acme/p100',
    ]);
  });

  it('a filter that matches little stops at the scan bound, says where, and the next page goes on from there', async () => {
    const first = await trail.page({ policy: 'rare' }, { limit: 50, scanLimit: 250 });
    // 250 entries read back from p999: p750..p999 hold rare ones at 800 and 900.
    expect(first.entries.map((e) => e.target)).toEqual(['acme/p900', 'acme/p800']);
    expect(first.scanned).toBe(250);
    expect(first.stoppedAt).toBe(`${base + 750 * 1000}-750`);
    const next = await trail.page({ policy: 'rare' }, { limit: 50, scanLimit: 250, before: first.before! });
    expect(next.entries.map((e) => e.target)).toEqual(['acme/p700', 'acme/p600', 'acme/p500']);
    // Nothing matches at all: an empty page that still says how far it looked.
    const none = await trail.page({ text: 'nowhere' }, { limit: 50, scanLimit: 300 });
    expect(none.entries).toEqual([]);
    expect(none.scanned).toBe(300);
    expect(none.stoppedAt).toBeDefined();
  });

  it('an entry by its id, and none for an id that is not there or is no id', async () => {
    const found = await trail.entry(`${base + 5 * 1000}-5`);
    expect(found).toMatchObject({ target: 'acme/p5', policy: 'cleanup' });
    expect(await trail.entry(`${base + 5 * 1000}-6`)).toBeUndefined();
    expect(await trail.entry('not-an-id')).toBeUndefined();
  });
});
