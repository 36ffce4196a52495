import { evictionPolicy, evictionRisk } from './eviction';

describe("Redis's eviction policy", () => {
  const info = (policy: string) =>
    `# Memory\r\nused_memory:1024\r\nmaxmemory:0\r\nmaxmemory_policy:${policy}\r\nallocator_frag_ratio:1.0\r\n`;

  it('is read from INFO memory', async () => {
    expect(await evictionPolicy({ info: async () => info('volatile-lru') })).toBe('volatile-lru');
    expect(await evictionPolicy({ info: async () => '# Memory\r\nused_memory:1024\r\n' })).toBeUndefined();
  });

  it('is a risk for every policy but noeviction, and the risk says what to set', () => {
    expect(evictionRisk('noeviction')).toBeUndefined();
    for (const policy of ['allkeys-lru', 'volatile-lru', 'allkeys-lfu', 'volatile-ttl', 'allkeys-random']) {
      expect(evictionRisk(policy)).toMatch(
        new RegExp(`^maxmemory-policy is ${policy}: .+; set maxmemory-policy noeviction$`),
      );
    }
  });
});
