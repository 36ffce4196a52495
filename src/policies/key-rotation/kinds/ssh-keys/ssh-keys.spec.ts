import { SKIP } from '../../../../engine/policy';
import {
  aKeySnapshot,
  anSshKey,
  aRecord,
  aRotationConfig,
  daysFromNow,
  newSshKey,
  NOW,
  ownKeys,
} from '../../../../../test/support/builders/keys';
import {
  CLOSE_ROTATION,
  decideKeyRotation,
  type KeyRotationSnapshot,
  type ObservedSshKey,
  UPLOAD_KEY,
  VERIFY_KEY,
  WRITE_KEY,
} from '../../key-rotation.decide';
import type { RotationRecord } from '../../key-rotation.record';

const ROTATE_STEPS = [WRITE_KEY, UPLOAD_KEY, VERIFY_KEY];

describe('key_rotation decide: SSH keys not yet under rotation', () => {
  it.each<[string, number | null, string[], string]>([
    ['expires within rotate_before', 6, ROTATE_STEPS, 'rotate: expires 2025-06-08, within rotate_before 14d'],
    ['expires exactly at rotate_before', 14, ROTATE_STEPS, 'rotate: expires 2025-06-16, within rotate_before 14d'],
    ['expired while still listed', -2, ROTATE_STEPS, 'rotate: expired 2025-05-31, still listed'],
    ['expires later', 40, [SKIP], 'skip: expires in 40d'],
    ['expires a little after rotate_before', 14.5, [SKIP], 'skip: expires in 14d'],
    ['never expires', null, [SKIP], 'skip: never expires'],
  ])('%s', (_title, expiresIn, actions, reason) => {
    const decisions = decideKeyRotation(
      aRotationConfig({ deploy_keys: [] }),
      aKeySnapshot({ ssh: [ownKeys(anSshKey(12, 'ci-deploy', expiresIn))] }),
      NOW,
    );
    expect(decisions.map((d) => d.action)).toEqual(actions);
    expect(decisions[0].reason).toBe(reason);
  });

  it('leaves keys whose title matches no expression out, and says why for other users it cannot act on', () => {
    const config = aRotationConfig({
      deploy_keys: [],
      ssh_keys: [
        { user: 'self', titles: ['^ci-deploy'], rotate_before: '14d', lifetime: '90d', grace: '1d' },
        { user: 'bob', titles: ['.'], rotate_before: '14d', lifetime: '90d', grace: '1d' },
        { user: 99, titles: ['.'], rotate_before: '14d', lifetime: '90d', grace: '1d' },
      ],
    });
    const snapshot = aKeySnapshot({
      ssh: [
        ownKeys(anSshKey(12, 'laptop', 1)),
        { access: 'needs_admin', label: 'bob' },
        { access: 'unknown_user', label: '99' },
      ],
    });
    expect(decideKeyRotation(config, snapshot, NOW).map((d) => [d.target, d.reason])).toEqual([
      ['SSH keys of bob', "skip: another user's keys need an administrator's token"],
      ['SSH keys of 99', 'skip: no user 99 on the forge'],
    ]);
  });

  it('carries what the first step needs, keyed by rotation, step and attempt, and never anything secret', () => {
    const config = aRotationConfig({ deploy_keys: [], on_rotate: 'deploy-key-sync' });
    const decisions = decideKeyRotation(config, aKeySnapshot({ ssh: [ownKeys(anSshKey(12, 'ci-deploy', 3))] }), NOW);
    expect(decisions.map((d) => d.key)).toEqual([
      'ssh-1-12:write_key:0',
      'ssh-1-12:upload_key:0',
      'ssh-1-12:verify_key:0',
      'ssh-1-12:run_on_rotate:0',
    ]);
    expect(decisions[0]).toEqual({
      action: WRITE_KEY,
      target: 'root\'s SSH key 12 "ci-deploy"',
      key: 'ssh-1-12:write_key:0',
      reason: 'rotate: expires 2025-06-05, within rotate_before 14d',
      params: {
        rotation: 'ssh-1-12',
        generation: 1,
        kind: 'ssh',
        title: 'ci-deploy',
        old_key_id: 12,
        old_fingerprint: 'SHA256:old-12',
        user_id: 1,
        username: 'root',
        self: true,
        projects: [],
        path: '/var/lib/forgewarden/keys/rotate/root-12',
        secrets_dir: '/var/lib/forgewarden/keys',
        key_type: 'ed25519',
        grace_ms: 86_400_000,
        lifetime_ms: 90 * 86_400_000,
      },
      details: ['new ed25519 private key at /var/lib/forgewarden/keys/rotate/root-12'],
    });
    // What the upload rests on, which its precondition reads again: root still holds key 12 as listed.
    expect(decisions[1]).toMatchObject({
      reason: 'upload the new public key, expiring in 90d',
      params: {
        rotation: 'ssh-1-12',
        generation: 1,
        lifetime_ms: 90 * 86_400_000,
        old_key_id: 12,
        old_fingerprint: 'SHA256:old-12',
        user_id: 1,
        self: true,
      },
    });
    expect(decisions[3]).toMatchObject({
      reason: 'run on_rotate for new key (once uploaded)',
      params: { rotation: 'ssh-1-12', command: 'deploy-key-sync' },
    });
  });

  it('decides a key matched by two entries once', () => {
    const rule = { user: 'self', titles: ['ci'], rotate_before: '14d', lifetime: '90d', grace: '1d' };
    const config = aRotationConfig({ deploy_keys: [], ssh_keys: [rule, rule] });
    const key = anSshKey(12, 'ci-deploy', 3);
    expect(
      decideKeyRotation(config, aKeySnapshot({ ssh: [ownKeys(key), ownKeys(key)] }), NOW).filter(
        (d) => d.action === WRITE_KEY,
      ),
    ).toHaveLength(1);
  });
});

describe('key_rotation decide: an SSH rotation whose premise the forge contradicts is closed, never continued', () => {
  const config = aRotationConfig({ deploy_keys: [] });
  /** The decisions about the rotation (and about the user's keys as a whole), not about other listed keys. */
  const decide = (record: RotationRecord, snapshot: Partial<KeyRotationSnapshot>) =>
    decideKeyRotation(config, aKeySnapshot({ ...snapshot, rotations: { [record.id]: record } }), NOW)
      .filter((d) => d.params.rotation === undefined || d.params.rotation === record.id)
      .filter((d) => !d.reason.includes('new key of rotation'))
      .map((d) => `${d.action}: ${d.reason}`);
  const closing = (why: string) => [
    `${CLOSE_ROTATION}: close: ${why}; nothing on the forge is changed, and the next pass decides afresh`,
  ];

  it.each<[string, RotationRecord, ObservedSshKey[], string]>([
    [
      'the new key deleted by a person, grace passed: the old key is not removed',
      aRecord(12, 'verified'),
      [anSshKey(12, 'ci-deploy', 3)],
      'new key 912 is gone from the forge',
    ],
    [
      'the new key deleted before verification',
      aRecord(12, 'uploaded'),
      [anSshKey(12, 'ci-deploy', 3)],
      'new key 912 is gone from the forge',
    ],
    [
      'another key under the new key’s id (a forge reset since)',
      aRecord(12, 'hooked'),
      [anSshKey(12, 'ci-deploy', 3), newSshKey({ fingerprint: 'SHA256:someone-else' })],
      'key 912 of root (user 1) is not the new key SHA256:new-12 (it is SHA256:someone-else)',
    ],
    [
      'another key under the old key’s id, the new key gone too',
      aRecord(12, 'verified'),
      [anSshKey(12, 'ci-deploy', 3, { fingerprint: 'SHA256:reused' })],
      'key 12 of root (user 1) is another key than the one this rotation replaces (SHA256:reused, not SHA256:old-12)',
    ],
    [
      'the old key removed by a person before the upload: no new key is given in its place',
      aRecord(12, 'key_written'),
      [],
      'old key 12 is gone from the keys of root (user 1) (removed by someone else): no new key is uploaded',
    ],
  ])('%s', (_title, record, keys, why) => {
    expect(decide(record, { ssh: [ownKeys(...keys)] })).toEqual(closing(why));
  });

  it('withdraws a contradicted rotation’s new key the user still holds before it closes, so no second new key is ever live', () => {
    const why =
      'key 12 of root (user 1) is another key than the one this rotation replaces (SHA256:reused, not SHA256:old-12)';
    expect(
      decide(aRecord(12, 'verified'), {
        ssh: [ownKeys(anSshKey(12, 'ci-deploy', 3, { fingerprint: 'SHA256:reused' }), newSshKey())],
      }),
    ).toEqual([
      `remove_new_key: withdraw new key 912: ${why}; no rotation vouches for it any more`,
      `skip: skip: closed once new key 912 is withdrawn: ${why}`,
    ]);
    // A closed rotation (an earlier version closed it while its key was live): no next generation until that key is gone.
    const closed = aRecord(12, 'closed', {
      new_key_id: 912,
      fingerprint: 'SHA256:new-12',
      closed_reason: 'new key 912 is gone from the forge',
    });
    expect(decide(closed, { ssh: [ownKeys(anSshKey(12, 'ci-deploy', 3), newSshKey())] })).toEqual([
      'remove_new_key: withdraw new key 912: rotation ssh-1-12 was closed (new key 912 is gone from the forge); no rotation vouches for it any more',
      'skip: skip: not rotated again while new key 912 of rotation ssh-1-12 was closed (new key 912 is gone from the forge) may still be live',
    ]);
  });

  it('closes the rotation of a user the forge no longer knows, and waits for one whose keys could not be read', () => {
    const alice = aRecord(20, 'verified', { id: 'ssh-3-20', owner: { user_id: 3, username: 'alice', self: false } });
    expect(decide(alice, { ssh: [], owners: { 3: { state: 'gone' } } })).toEqual(
      closing('user alice (user 3) is gone from the forge'),
    );
    expect(decide(alice, { ssh: [], owners: { 3: { state: 'unread', reason: '500' } } })).toEqual([
      'skip: skip: the keys of alice (user 3) could not be read (500); the rotation waits',
    ]);
    expect(decide(alice, { ssh: [{ access: 'unreadable', label: 'alice' }] })).toEqual([
      'skip: skip: the keys of alice could not be read this pass; the other users and projects go on',
      'skip: skip: the keys of alice (user 3) were not read this pass; the rotation waits',
    ]);
  });

  it('rotates the old key again after a rotation was closed: the next generation, with action keys of its own', () => {
    const closed = aRecord(12, 'closed', {
      attempt: 5,
      closed_at: daysFromNow(-0.1),
      closed_reason: 'new key 912 is gone from the forge',
    });
    const decisions = decideKeyRotation(
      config,
      aKeySnapshot({ ssh: [ownKeys(anSshKey(12, 'ci-deploy', 3))], rotations: { [closed.id]: closed } }),
      NOW,
    );
    expect(decisions.map((d) => d.key)).toEqual([
      'ssh-1-12#2:write_key:0',
      'ssh-1-12#2:upload_key:0',
      'ssh-1-12#2:verify_key:0',
    ]);
    expect(decisions[0].params).toMatchObject({ generation: 2, path: '/var/lib/forgewarden/keys/rotate/root-12' });
    expect(decisions[0].details).toEqual([
      'new ed25519 private key at /var/lib/forgewarden/keys/rotate/root-12',
      'generation 2 of rotation ssh-1-12',
    ]);
    // Not due: plan says what became of the last rotation.
    const later = decideKeyRotation(
      config,
      aKeySnapshot({ ssh: [ownKeys(anSshKey(12, 'ci-deploy', 40))], rotations: { [closed.id]: closed } }),
      NOW,
    );
    expect(later.map((d) => d.reason)).toEqual([
      `skip: expires in 40d (rotation ssh-1-12 closed ${daysFromNow(-0.1)}: new key 912 is gone from the forge)`,
    ]);
  });

  it('decides a listed key under a rotation’s new key id but with another fingerprint as a key of its own', () => {
    const record = aRecord(12, 'verified');
    const stranger = anSshKey(912, 'ci-deploy', 2, { fingerprint: 'SHA256:stranger' });
    const decisions = decideKeyRotation(
      config,
      aKeySnapshot({ ssh: [ownKeys(anSshKey(12, 'ci-deploy', 3), stranger)], rotations: { [record.id]: record } }),
      NOW,
    );
    expect(decisions.map((d) => `${d.action} ${d.key}`)).toEqual([
      `${CLOSE_ROTATION} ssh-1-12:${CLOSE_ROTATION}:3`,
      `${WRITE_KEY} ssh-1-912:${WRITE_KEY}:0`,
      `${UPLOAD_KEY} ssh-1-912:${UPLOAD_KEY}:0`,
      `${VERIFY_KEY} ssh-1-912:${VERIFY_KEY}:0`,
    ]);
  });
});
