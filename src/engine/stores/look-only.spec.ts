import type { DiscoveryCache } from '../discovery';
import type { PolicyState } from '../policy';
import { LookOnlyDiscoveryCache, LookOnlyState } from './look-only';

/** A store that records every write it is asked for. */
class Stored implements PolicyState, DiscoveryCache {
  readonly values = new Map<string, string>([
    ['watermark', '41'],
    ['details:1', '{"v1":"2026"}'],
  ]);
  readonly writes: string[] = [];
  async get(key: string) {
    return this.values.get(key);
  }
  async getMany(keys: readonly string[]) {
    return keys.map((key) => this.values.get(key));
  }
  async set(key: string) {
    this.writes.push(`set ${key}`);
  }
  async setGuard(key: string) {
    this.writes.push(`setGuard ${key}`);
  }
  async delete(key: string) {
    this.writes.push(`delete ${key}`);
  }
  async claim(key: string) {
    this.writes.push(`claim ${key}`);
    return async () => undefined;
  }
}

describe('a pass that changes nothing', () => {
  it('reads what is stored, sees its own writes, and writes nothing through', async () => {
    const stored = new Stored();
    const state = new LookOnlyState(stored);
    expect(await state.get('watermark')).toBe('41');
    await state.set('watermark', '42');
    await state.setGuard('rotation:1', '{}');
    await state.delete('details:1');
    expect([await state.get('watermark'), await state.get('rotation:1'), await state.get('details:1')]).toEqual([
      '42',
      '{}',
      undefined,
    ]);
    expect(await state.getMany(['watermark', 'details:1', 'never'])).toEqual(['42', undefined, undefined]);
    expect(stored.writes).toEqual([]);
  });

  it('lists for itself: cached listings are used, its own stay in the process, and no claim is taken', async () => {
    const shared = new Stored();
    const cache = new LookOnlyDiscoveryCache(shared);
    expect(await cache.get('details:1')).toBe('{"v1":"2026"}');
    await cache.set('group:acme', '{"at":1}');
    expect(await cache.get('group:acme')).toBe('{"at":1}');
    expect(await cache.claim()).toEqual(expect.any(Function));
    expect(shared.writes).toEqual([]);
  });
});
