import Redis from 'ioredis';
import { RecordsOwner } from '../../src/engine/records-owner';
import { AuditTrail } from '../../src/engine/stores/audit';
import { DataMarker } from '../../src/engine/stores/data-marker';
import { RecordedForge } from '../../src/engine/stores/recorded-forge';
import { FakeClock } from '../support/gitlab/fake-clock';
import { testConfig } from '../support/config';

describe('records in Redis belong to the forge they were made against', () => {
  const prefix = `it-records-owner-${process.pid}`;
  const neighbour = `${prefix}-neighbour`;
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const config = testConfig({ prefix, redisUrl });
  const redis = new Redis(redisUrl);
  const clock = new FakeClock(Date.parse('2026-11-27T12:00:00Z'));
  const audit = new AuditTrail(redis, config);
  const marker = new DataMarker(redis, config);
  const owner = new RecordsOwner(new RecordedForge(redis, config), marker, audit, clock);
  const sandbox = { url: 'http://127.0.0.1:9480', userId: 1, userCreatedAt: '2024-11-27T12:00:00.000Z' };

  afterEach(async () => {
    for (const pattern of [`${prefix}:*`, `${neighbour}:*`]) {
      const found = await redis.keys(pattern);
      if (found.length > 0) await redis.del(...found);
    }
  });
  afterAll(() => redis.quit());

  it('keeps them while the forge is the same one, however its URL is written (case of the host, a trailing slash)', async () => {
    const forge = { ...sandbox, url: 'https://forge.example.com' };
    expect(await owner.settle(forge)).toEqual({ state: 'first' });
    await redis.set(`${prefix}:ledger:retry:job-1002`, 'done');
    expect(await owner.settle({ ...forge, url: 'https://Forge.Example.com/' })).toEqual({ state: 'same' });
    expect(await redis.get(`${prefix}:ledger:retry:job-1002`)).toBe('done');
    expect(await marker.lostAt()).toBeUndefined();
  });

  it('drops every record of the prefix when the forge is another (a restarted sandbox: its users made anew), and says so in the audit trail', async () => {
    await owner.settle(sandbox);
    await redis.set(`${prefix}:ledger:retry:job-1002`, 'done');
    await redis.hset(`${prefix}:state:keys:rotation`, 'ssh-1', '{"step":"uploaded"}');
    await redis.set(`${neighbour}:ledger:retry:job-1002`, 'done');

    const restarted = { ...sandbox, userCreatedAt: '2024-11-27T12:05:00.000Z' };
    const settled = await owner.settle(restarted);

    expect(settled).toMatchObject({ state: 'dropped', previous: { ...sandbox, since: '2026-11-27T12:00:00.000Z' } });
    expect(await redis.exists(`${prefix}:ledger:retry:job-1002`, `${prefix}:state:keys:rotation`)).toBe(0);
    // Another deployment's prefix that starts the same is not this one's.
    expect(await redis.get(`${neighbour}:ledger:retry:job-1002`)).toBe('done');
    // As after a loss of Redis's data: limits only the records knew are assumed to hold.
    expect(await marker.lostAt()).toEqual(new Date('2026-11-27T12:00:00Z'));
    const entries = await audit.read(0);
    expect(entries).toEqual([
      expect.objectContaining({ action: 'start_afresh', target: 'forge http://127.0.0.1:9480', outcome: 'done', reason: expect.stringContaining('Redis held the records of another forge: http://127.0.0.1:9480 (token of user 1, made 2024-11-27T12:00:00.000Z)') }),
    ]);
    // From now on they are the new forge's.
    expect(await owner.settle(restarted)).toEqual({ state: 'same' });
  });

  it('treats another URL, or the token of another user, as another forge', async () => {
    await owner.settle(sandbox);
    expect(await owner.settle({ ...sandbox, url: 'https://gitlab.example.com' })).toMatchObject({ state: 'dropped' });
    expect(await owner.settle({ ...sandbox, url: 'https://gitlab.example.com', userId: 2 })).toMatchObject({ state: 'dropped' });
  });

  it('claims records whose owner entry cannot be read, without dropping them', async () => {
    await redis.set(`${prefix}:forge`, 'not json');
    await redis.set(`${prefix}:ledger:retry:job-1002`, 'done');
    expect(await owner.settle(sandbox)).toEqual({ state: 'first' });
    expect(await redis.get(`${prefix}:ledger:retry:job-1002`)).toBe('done');
    expect(await owner.settle(sandbox)).toEqual({ state: 'same' });
  });
});
