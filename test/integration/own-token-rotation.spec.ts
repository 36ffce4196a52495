import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import type { TokenRotationConfig } from '../../src/config/schema';
import { TokenFileReaders } from '../../src/engine/stores/token-file-readers';
import { DaemonToken } from '../../src/forge/daemon-token';
import type { TokenFileState } from '../../src/forge/token-file';
import { TokenRotation } from '../../src/forge/token-rotation';
import type { GitlabClient } from '../../src/gitlab';
import type { World } from '../../src/sandbox';
import { FakeClock } from '../support/gitlab/fake-clock';
import { dropKeys } from '../support/redis-server';
import { useSandboxClients } from '../support/sandbox-clients';
import { baseWorld, BASE_NOW } from '../support/world-builders';

/**
 * The daemon rotating its own token (docs/operations.md, "The daemon's own token") against the sandbox over HTTP and
 * a real Redis: a pair of the bot's personal access tokens in a token file, the spare rotated with the active one,
 * answers lost after the forge acted (a reset, a proxy's 502) recovered without ever authenticating with a rotated
 * token, so the forge's reuse detection revokes nothing; replicas that have not moved off a token hold its rotation.
 */

const TOKEN_A = 'glpat-forgewarden-pair-a1';
const TOKEN_B = 'glpat-forgewarden-pair-b1';
const DAY_MS = 24 * 60 * 60 * 1000;

/** The bot user `forgewarden` (id 20), maintainer of acme, holding the pair: both expire within 30 days. */
function world(): World {
  const base = baseWorld();
  return {
    ...base,
    users: [
      ...(base.users ?? []),
      {
        id: 20,
        username: 'forgewarden',
        tokens: [
          { token: TOKEN_A, id: 801, name: 'forgewarden-a', expires_at: 'now+20d' },
          { token: TOKEN_B, id: 802, name: 'forgewarden-b', expires_at: 'now+25d' },
        ],
      },
    ],
  };
}

const ROTATION: TokenRotationConfig = {
  before_expiry: 30 * DAY_MS,
  lifetime: 90 * DAY_MS,
  settle: 10 * 60_000,
  replicas: 1,
  shared_file: false,
};

describe('the daemon’s own token, rotated as a pair', () => {
  const forge = useSandboxClients(world);
  const prefix = `it-own-token-${process.pid}`;
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  let folder: string;
  let path: string;

  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), 'own-token-'));
    path = join(folder, 'token');
    writeFileSync(path, `${TOKEN_A}\n${TOKEN_B}\n`, { mode: 0o600 });
  });
  afterEach(async () => {
    rmSync(folder, { recursive: true, force: true });
    await dropKeys(prefix);
  });
  afterAll(() => redis.quit());

  /** One replica of the daemon: its token from the file, its client, and the rotation on a clock the test moves. */
  function replica(name = 'replica-1', rotation: TokenRotationConfig = ROTATION) {
    const token = DaemonToken.of({ token_file: path });
    const client: GitlabClient = forge.client(TOKEN_A, { token });
    const clock = new FakeClock(Date.parse(BASE_NOW));
    const readers = new TokenFileReaders(redis, prefix);
    const rotator = new TokenRotation({
      client,
      token,
      readers,
      rotation,
      replica: name,
      clock,
      selfOf: (value) => forge.client(value).personalAccessTokens.self(),
      leaseMs: 60_000,
    });
    return { token, client, clock, readers, rotator };
  }

  const file = (): TokenFileState => JSON.parse(readFileSync(path, 'utf8')) as TokenFileState;
  const record = (id: number) => forge.sandbox.state.accessTokens.tokens.get(id)!;
  const successorOf = (id: number) =>
    [...forge.sandbox.state.accessTokens.tokens.values()].find((t) => t.previous_id === id);
  const familyRevocations = async (): Promise<unknown> =>
    (await fetch(`${forge.sandbox.url}/__sandbox/token-family-revocations`)).json();
  const rotateRequests = () =>
    forge.sandbox.state.requestLog.filter((e) => e.method === 'POST' && e.path.endsWith('/rotate'));

  it('learns the pair written by hand, rotates the spare with the active token, writes the value first and switches to it', async () => {
    const daemon = replica();
    const first = await daemon.rotator.run();
    expect(first).toMatchObject({ result: 'rotated' });
    const written = file();
    const b2 = successorOf(802)!;
    expect(written).toMatchObject({
      active: 1,
      pending: null,
      tokens: [
        {
          id: 801,
          value: TOKEN_A,
          name: 'forgewarden-a',
          expires_at: '2025-06-22',
          retired_at: BASE_NOW,
          retired_generation: written.generation,
        },
        { id: b2.id, value: b2.value, name: 'forgewarden-b', expires_at: '2025-08-31', retired_at: null, lost: null },
      ],
    });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(record(802).revoked).toBe(true);
    expect(b2).toMatchObject({ expires_at: '2025-08-31', revoked: false });
    // The rotate was sent with the active token; the spare itself was only ever shown to `self`, never to a rotate path.
    expect(rotateRequests().map((e) => e.path)).toEqual(['/api/v4/personal_access_tokens/802/rotate']);
    expect(record(801).last_used_at).not.toBeNull();

    // Requests now carry the new token.
    expect((await daemon.client.users.current()).username).toBe('forgewarden');
    expect(record(b2.id).last_used_at).not.toBeNull();

    // The old active token is not rotated while a request sent with it may be in flight.
    expect(await daemon.rotator.run()).toMatchObject({
      result: 'waiting',
      words: expect.stringContaining('token_rotation.settle') as string,
    });
    daemon.clock.time += 11 * 60_000;
    expect(await daemon.rotator.run()).toMatchObject({ result: 'rotated' });
    const a2 = successorOf(801)!;
    expect(file()).toMatchObject({
      active: 0,
      tokens: [
        { id: a2.id, value: a2.value },
        { id: b2.id, retired_at: expect.any(String) as string },
      ],
    });
    expect(await daemon.rotator.run()).toMatchObject({ result: 'not_due' });
    expect(await familyRevocations()).toEqual([]);
  });

  it.each([
    ['a connection reset', { reset: true }, 'reset after 200'],
    ['a proxy’s 502', { status: 502 }, 'status 502 after 200'],
  ])(
    'recovers an answer lost to %s after the forge rotated, without a single family revocation',
    async (_how, fault, logged) => {
      await fetch(`${forge.sandbox.url}/__sandbox/faults`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          method: 'POST',
          path: '/personal_access_tokens/\\d+/rotate$',
          after: true,
          times: 1,
          ...fault,
        }),
      });
      const daemon = replica();
      expect(await daemon.rotator.run()).toMatchObject({ result: 'answer_lost' });
      // Learning the pair read the spare's own record with it, once, before it was rotated.
      const spareLastUsed = record(802).last_used_at;

      // The forge acted: 802 is revoked and its successor exists, but nobody holds its value.
      const lost = successorOf(802)!;
      expect([record(802).revoked, lost.revoked]).toEqual([true, false]);
      expect(file()).toMatchObject({
        active: 0,
        pending: { slot: 1, id: 802 },
        tokens: [{ value: TOKEN_A }, { value: TOKEN_B }],
      });
      // The active token goes on working.
      expect((await daemon.client.users.current()).username).toBe('forgewarden');

      // The next run finds the successor (same name, newer id) and rotates it with the active token.
      const recovered = await daemon.rotator.run();
      expect(recovered).toMatchObject({ result: 'recovered' });
      const kept = successorOf(lost.id)!;
      expect(file()).toMatchObject({
        active: 1,
        pending: null,
        tokens: [{ id: 801 }, { id: kept.id, value: kept.value, expires_at: '2025-08-31' }],
      });
      expect([record(lost.id).revoked, kept.revoked]).toEqual([true, false]);
      expect((await daemon.client.users.current()).username).toBe('forgewarden');

      // Never authenticated with a rotated token: neither the old spare nor its lost successor made a request since.
      expect([record(802).last_used_at, record(lost.id).last_used_at]).toEqual([spareLastUsed, null]);
      expect(await familyRevocations()).toEqual([]);
      expect(rotateRequests().map((e) => [e.path, e.fault])).toEqual([
        ['/api/v4/personal_access_tokens/802/rotate', logged],
        [`/api/v4/personal_access_tokens/${lost.id}/rotate`, null],
      ]);
    },
  );

  it('finds the spare still active when the lost request never reached the forge, and rotates it as usual', async () => {
    await fetch(`${forge.sandbox.url}/__sandbox/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ method: 'POST', path: '/rotate$', reset: true, times: 1 }),
    });
    const daemon = replica();
    expect(await daemon.rotator.run()).toMatchObject({ result: 'answer_lost' });
    expect([record(802).revoked, successorOf(802)]).toEqual([false, undefined]);
    expect(await daemon.rotator.run()).toMatchObject({ result: 'rotated' });
    expect(file()).toMatchObject({ active: 1, pending: null, tokens: [{ id: 801 }, { id: successorOf(802)!.id }] });
    expect(await familyRevocations()).toEqual([]);
  });

  it('does not bring back a spare a person revoked: the pair is blocked, the active token goes on', async () => {
    await fetch(`${forge.sandbox.url}/__sandbox/access-tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 802, revoked: true }),
    });
    const daemon = replica();
    // Learning the pair reads each token with itself: the revoked spare is refused there (not a rotate path).
    expect(await daemon.rotator.run()).toMatchObject({
      result: 'blocked',
      words: expect.stringContaining('the spare token is lost') as string,
    });
    expect(file().tokens[1]).toMatchObject({ lost: 'the forge refuses it (revoked or expired)' });
    expect(rotateRequests()).toEqual([]);
    expect((await daemon.client.users.current()).username).toBe('forgewarden');
    expect(await familyRevocations()).toEqual([]);
  });

  it('holds a rotation back while a replica reads an older generation of the file, or more replicas read it than declared', async () => {
    const daemon = replica('replica-1', { ...ROTATION, replicas: 2 });
    expect(await daemon.rotator.run()).toMatchObject({ result: 'rotated' });
    const retiring = file().generation;
    // Another replica, still on the generation before the switch: it may still send requests with token 801.
    daemon.clock.time += 11 * 60_000;
    await daemon.readers.say('replica-2', retiring - 1, daemon.clock.now());
    const held = await daemon.rotator.run();
    expect(held).toMatchObject({
      result: 'waiting',
      words: expect.stringContaining(`replica replica-2 still reads generation ${retiring - 1}`) as string,
    });
    expect(record(801).revoked).toBe(false);

    // It reads the file (and so moves to the new token), and says so.
    const other = DaemonToken.of({ token_file: path });
    await daemon.readers.say('replica-2', other.fileState()!.generation, daemon.clock.now());
    await daemon.readers.say('replica-3', other.fileState()!.generation, daemon.clock.now());
    expect(await daemon.rotator.run()).toMatchObject({
      result: 'waiting',
      words: expect.stringContaining('3 replicas read the token file') as string,
    });
    await redis.hdel(`${prefix}:token:readers`, 'replica-3');
    expect(await daemon.rotator.run()).toMatchObject({ result: 'rotated' });
    expect(await familyRevocations()).toEqual([]);
  });

  it('lets a replica that did not rotate take the new token after a 401, and rotates one at a time across replicas', async () => {
    const one = replica('replica-1', { ...ROTATION, replicas: 2, shared_file: true });
    const two = replica('replica-2', { ...ROTATION, replicas: 2, shared_file: true });
    expect((await two.client.users.current()).username).toBe('forgewarden');
    expect(await one.rotator.run()).toMatchObject({ result: 'rotated' });
    one.clock.time += 11 * 60_000;
    await one.readers.say('replica-2', file().generation, one.clock.now());
    expect(await one.rotator.run()).toMatchObject({ result: 'rotated' });
    // Replica two still holds token 801, now rotated: its read is refused, it reads the file again and goes on.
    expect((await two.client.users.current()).username).toBe('forgewarden');
    expect(two.token.current()).toBe(file().tokens[file().active].value);
    expect(await familyRevocations()).toEqual([]);

    const held = await one.readers.lease(60_000);
    expect(await two.rotator.run()).toMatchObject({
      result: 'waiting',
      words: 'another replica is rotating the token',
    });
    await held?.release();
  });

  it('says what stops it: one token in the file, or no token due', async () => {
    writeFileSync(path, `${TOKEN_A}\n`, { mode: 0o600 });
    expect(await replica().rotator.run()).toMatchObject({
      result: 'blocked',
      words: expect.stringContaining('holds one token') as string,
    });
    writeFileSync(path, `${TOKEN_A}\n${TOKEN_B}\n`, { mode: 0o600 });
    const daemon = replica('replica-1', { ...ROTATION, before_expiry: 10 * DAY_MS });
    expect(await daemon.rotator.run()).toMatchObject({ result: 'not_due' });
    expect(rotateRequests()).toEqual([]);
  });
});
