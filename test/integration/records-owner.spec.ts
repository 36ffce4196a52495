import Redis from 'ioredis';
import { RecordsOwner } from '../../src/engine/records-owner';
import { AuditTrail } from '../../src/engine/stores/audit';
import { DataMarker } from '../../src/engine/stores/data-marker';
import { PrefixKeys } from '../../src/engine/stores/prefix-keys';
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
  const owner = new RecordsOwner(new RecordedForge(redis, config, new PrefixKeys(redis, config)), marker, audit, clock);
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
    expect(await marker.times()).toEqual({});
  });

  it('drops every record of the prefix when the forge was reset (a restarted sandbox: its users made anew), and says it was reset', async () => {
    await owner.settle(sandbox);
    await redis.set(`${prefix}:ledger:retry:job-1002`, 'done');
    await redis.hset(`${prefix}:state:keys:rotation`, 'ssh-1', '{"step":"uploaded"}');
    await redis.set(`${neighbour}:ledger:retry:job-1002`, 'done');

    const restarted = { ...sandbox, userCreatedAt: '2024-11-27T12:05:00.000Z' };
    const settled = await owner.settle(restarted);

    expect(settled).toMatchObject({
      state: 'dropped',
      reset: true,
      previous: { ...sandbox, since: '2026-11-27T12:00:00.000Z' },
    });
    expect(await redis.exists(`${prefix}:ledger:retry:job-1002`, `${prefix}:state:keys:rotation`)).toBe(0);
    // Another deployment's prefix that starts the same is not this one's.
    expect(await redis.get(`${neighbour}:ledger:retry:job-1002`)).toBe('done');
    // The forge forgot its own limits with its reset: nothing is held back as after a loss of Redis's data, but what a
    // policy left outside Redis before now is known to be the old forge's.
    expect(await marker.times()).toEqual({ forgeChangedAt: new Date('2026-11-27T12:00:00Z') });
    const entries = await audit.read(0);
    expect(entries).toEqual([
      expect.objectContaining({
        action: 'start_afresh',
        target: 'forge http://127.0.0.1:9480',
        outcome: 'done',
        reason:
          'the forge at http://127.0.0.1:9480 was reset: its user 1 was made at 2024-11-27T12:05:00.000Z, not at 2024-11-27T12:00:00.000Z as when the records began (2026-11-27T12:00:00.000Z)',
      }),
    ]);
    // From now on they are the reset forge's.
    expect(await owner.settle(restarted)).toEqual({ state: 'same' });
  });

  it('drops them when the forge is another, holding back what only the records knew of its limits', async () => {
    await owner.settle(sandbox);
    await redis.set(`${prefix}:ledger:retry:job-1002`, 'done');
    const elsewhere = { url: 'https://gitlab.example.com', userId: 7, userCreatedAt: '2020-01-01T00:00:00.000Z' };
    expect(await owner.settle(elsewhere)).toMatchObject({ state: 'dropped', reset: false });
    expect(await redis.exists(`${prefix}:ledger:retry:job-1002`)).toBe(0);
    expect(await marker.times()).toEqual({
      lostAt: new Date('2026-11-27T12:00:00Z'),
      forgeChangedAt: new Date('2026-11-27T12:00:00Z'),
    });
    expect((await audit.read(0))[0]?.reason).toBe(
      'Redis held the records of another forge: http://127.0.0.1:9480 (token of user 1, made 2024-11-27T12:00:00.000Z), since 2026-11-27T12:00:00.000Z',
    );
  });

  it('claims nothing for a command that changes nothing', async () => {
    expect(await owner.settle(sandbox, { claim: false })).toEqual({ state: 'first' });
    expect(await redis.keys(`${prefix}:*`)).toEqual([]);
  });

  it('treats another URL, or the token of another user, as another forge', async () => {
    await owner.settle(sandbox);
    expect(await owner.settle({ ...sandbox, url: 'https://gitlab.example.com' })).toMatchObject({ state: 'dropped' });
    expect(await owner.settle({ ...sandbox, url: 'https://gitlab.example.com', userId: 2 })).toMatchObject({
      state: 'dropped',
    });
  });

  it('claims records whose owner entry cannot be read, without dropping them', async () => {
    await redis.set(`${prefix}:forge`, 'not json');
    await redis.set(`${prefix}:ledger:retry:job-1002`, 'done');
    expect(await owner.settle(sandbox)).toEqual({ state: 'first' });
    expect(await redis.get(`${prefix}:ledger:retry:job-1002`)).toBe('done');
    expect(await owner.settle(sandbox)).toEqual({ state: 'same' });
  });
});
