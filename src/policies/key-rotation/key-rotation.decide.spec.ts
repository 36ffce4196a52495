import { SKIP } from '../../engine/policy';
import {
  aDeployKey,
  aKeySnapshot,
  anSshKey,
  aRecord,
  aRotationConfig,
  daysFromNow,
  newSshKey,
  NOW,
  ownKeys,
} from '../../../test/support/builders/keys';
import {
  decideKeyRotation,
  nextKeyRotationPass,
  type ObservedSshKey,
  REMOVE_NEW_KEY,
  REMOVE_OLD_KEY,
  RUN_ON_ROTATE,
} from './key-rotation.decide';
import type { RotationRecord } from './key-rotation.record';

/** The state machine of a rotation and its timing, shown on SSH keys: the kinds' own specs are beside them, in kinds/. */

const summary = (fields: Record<string, unknown>, snapshot = aKeySnapshot()) =>
  decideKeyRotation(aRotationConfig(fields), snapshot, NOW).map((d) => `${d.action}: ${d.reason}`);

describe('key_rotation decide: the next step of a rotation under way', () => {
  /** Root's keys: old key 12, and the new key 912 once the record says it was uploaded (unless `others` say otherwise). */
  const snapshotWith = (record: RotationRecord, ...others: ObservedSshKey[]) =>
    aKeySnapshot({
      ssh: [
        ownKeys(
          anSshKey(12, 'ci-deploy', 3),
          ...(others.length > 0 || record.new_key_id === null ? others : [newSshKey()]),
        ),
      ],
      rotations: { [record.id]: record },
    });

  it.each<[string, RotationRecord, Record<string, unknown>, string[]]>([
    [
      'planned: the key is written again',
      aRecord(12, 'planned'),
      {},
      [
        'write_key: resume: write the new private key to /var/lib/forgewarden/keys/rotate/root-12',
        'upload_key: upload the new public key, expiring in 90d',
        'verify_key: verify the forge lists the new key',
      ],
    ],
    [
      'key written: upload and verify',
      aRecord(12, 'key_written'),
      {},
      [
        'upload_key: upload the new public key SHA256:new-12, expiring in 90d',
        'verify_key: verify the forge lists SHA256:new-12',
      ],
    ],
    ['uploaded: verify', aRecord(12, 'uploaded'), {}, ['verify_key: verify the forge lists SHA256:new-12']],
    [
      'uploaded, with on_rotate: verify, then run it',
      aRecord(12, 'uploaded'),
      { on_rotate: 'sync' },
      ['verify_key: verify the forge lists SHA256:new-12', 'run_on_rotate: run on_rotate for new key 912'],
    ],
    [
      'verified within grace',
      aRecord(12, 'verified', { verified_at: daysFromNow(-0.5) }),
      {},
      ['skip: skip: keep old key 12 until 2025-06-03T00:00:00.000Z (grace 1d)'],
    ],
    ['verified, grace passed', aRecord(12, 'verified'), {}, ['remove_old_key: remove old key 12: grace 1d passed']],
    [
      'verified, grace passed, on_rotate not yet run',
      aRecord(12, 'verified'),
      { on_rotate: 'sync' },
      ['run_on_rotate: run on_rotate for new key 912', 'skip: skip: keep old key 12 until on_rotate succeeds'],
    ],
    [
      'on_rotate ran, grace passed',
      aRecord(12, 'hooked'),
      { on_rotate: 'sync' },
      ['remove_old_key: remove old key 12: grace 1d passed'],
    ],
  ])('%s', (_title, record, fields, expected) => {
    // The new key, once listed, is skipped as such (see below).
    expect(
      summary({ deploy_keys: [], ...fields }, snapshotWith(record)).filter(
        (line) => !line.includes('new key of rotation'),
      ),
    ).toEqual(expected);
  });

  it('keys each step by the attempt, so a step that failed is tried again as a new attempt', () => {
    const decisions = decideKeyRotation(
      aRotationConfig({ deploy_keys: [] }),
      snapshotWith(aRecord(12, 'key_written', { attempt: 7, last_error: 'HTTP 500' })),
      NOW,
    );
    expect(decisions.filter((d) => d.action !== SKIP).map((d) => d.key)).toEqual([
      'ssh-1-12:upload_key:7',
      'ssh-1-12:verify_key:7',
    ]);
    expect(decisions[0].details).toEqual(['last attempt failed: HTTP 500']);
  });

  it('says which listed key is the new key of a rotation, rather than rotating it', () => {
    const decisions = decideKeyRotation(
      aRotationConfig({ deploy_keys: [] }),
      snapshotWith(aRecord(12, 'verified', { verified_at: daysFromNow(-0.5) }), newSshKey()),
      NOW,
    );
    expect(decisions.find((d) => d.target.includes('912'))?.reason).toBe('skip: new key of rotation ssh-1-12');
  });

  it("tells each kind's new keys apart: a deploy key under the id of an SSH rotation's new key is a deploy key to rotate", () => {
    const record = aRecord(12, 'verified', { verified_at: daysFromNow(-0.5) });
    // Its text cannot be read, so no fingerprint tells it from root's new SSH key 912.
    const deploy = aDeployKey(912, 'release', 100, { fingerprint: undefined });
    const snapshot = aKeySnapshot({
      ssh: [ownKeys(anSshKey(12, 'ci-deploy', 3), newSshKey())],
      deploy: [[deploy]],
      rotations: { [record.id]: record },
    });
    const decisions = decideKeyRotation(aRotationConfig(), snapshot, NOW).filter((d) =>
      d.target.startsWith('deploy key 912'),
    );
    expect(decisions.map((d) => d.action)).toEqual(['write_key', 'upload_key', 'enable_key', 'verify_key']);
    expect(decisions[0].reason).toBe('rotate: created 2025-02-22, older than rotate_after 90d');
  });

  it('takes the new key away when a person took the old key away during the rotation, whatever the step, and never verifies or hooks it', () => {
    const config = aRotationConfig({ deploy_keys: [], on_rotate: 'sync' });
    for (const step of ['uploaded', 'verified', 'hooked'] as const) {
      const record = aRecord(12, step);
      const decisions = decideKeyRotation(
        config,
        aKeySnapshot({ ssh: [ownKeys(newSshKey())], rotations: { [record.id]: record } }),
        NOW,
      );
      expect(decisions.filter((d) => d.action !== SKIP).map((d) => [d.action, d.reason, d.repairs])).toEqual([
        [
          REMOVE_NEW_KEY,
          "remove new key 912 from root: a person took old key 12 away from it during the rotation, and a person's revocation wins",
          'key_left_after_revocation',
        ],
      ]);
      expect(decisions[1]).toMatchObject({
        key: 'ssh-1-12:remove_new_key:holder:3',
        params: { new_key_id: 912, fingerprint: 'SHA256:new-12', why: 'revoked', user_id: 1 },
      });
    }
    // Once the new key has left too, the rotation is closed, saying why.
    const revoked = aRecord(12, 'verified', { revoked_on: ['(holder)'] });
    expect(
      decideKeyRotation(config, aKeySnapshot({ ssh: [ownKeys()], rotations: { [revoked.id]: revoked } }), NOW).map(
        (d) => d.reason,
      ),
    ).toEqual([
      "close: a person took old key 12 away from root (user 1) during the rotation, and new key 912 left with it (a person's revocation wins); nothing on the forge is changed, and the next pass decides afresh",
    ]);
  });

  it('finishes a rotation whose old key the bot itself removed, when the attempt was cut before it recorded so', () => {
    const verified = aRecord(12, 'verified', { old_removed_on: ['(holder)'] });
    const later = decideKeyRotation(
      aRotationConfig({ deploy_keys: [] }),
      aKeySnapshot({ ssh: [ownKeys(newSshKey())], rotations: { [verified.id]: verified } }),
      NOW,
    );
    expect(later.filter((d) => d.action !== SKIP).map((d) => `${d.action}: ${d.reason}`)).toEqual([
      'remove_old_key: finish: old key 12 is gone already (removed by an earlier attempt of this step); new key 912 stays',
    ]);
  });

  it('removes the old key only after on_rotate, when the policy has one, stating the keys its precondition reads again', () => {
    const decisions = decideKeyRotation(
      aRotationConfig({ deploy_keys: [], on_rotate: 'sync' }),
      snapshotWith(aRecord(12, 'hooked')),
      NOW,
    );
    expect(decisions.find((d) => d.action === REMOVE_OLD_KEY)?.params).toEqual({
      rotation: 'ssh-1-12',
      generation: 1,
      attempt: 3,
      old_key_id: 12,
      old_fingerprint: 'SHA256:old-12',
      user_id: 1,
      username: 'root',
      self: true,
      new_key_id: 912,
      fingerprint: 'SHA256:new-12',
      after_hook: true,
    });
    expect(
      decideKeyRotation(
        aRotationConfig({ deploy_keys: [], on_rotate: 'sync' }),
        snapshotWith(aRecord(12, 'verified')),
        NOW,
      ).map((d) => d.action),
    ).toContain(RUN_ON_ROTATE);
  });
});

describe('key_rotation decide: determinism and nextPass', () => {
  it('gives the same decisions whatever order the forge listed the keys in', () => {
    const keys = [anSshKey(12, 'ci-a', 3), anSshKey(13, 'ci-b', 50), anSshKey(14, 'ci-c', 1)];
    const config = aRotationConfig({
      deploy_keys: [],
      ssh_keys: [{ user: 'self', titles: ['^ci'], rotate_before: '14d', lifetime: '90d', grace: '1d' }],
    });
    expect(decideKeyRotation(config, aKeySnapshot({ ssh: [ownKeys(...keys)] }), NOW)).toEqual(
      decideKeyRotation(config, aKeySnapshot({ ssh: [ownKeys(...[...keys].reverse())] }), NOW),
    );
  });

  it('asks for a pass when a grace period ends: from now for a key verified this pass, from the record otherwise', () => {
    const config = aRotationConfig({ deploy_keys: [] });
    expect(
      nextKeyRotationPass(config, aKeySnapshot({ ssh: [ownKeys(anSshKey(12, 'ci-deploy', 3))] }), NOW)?.toISOString(),
    ).toBe('2025-06-03T12:01:00.000Z');
    const waiting = aRecord(12, 'verified', { verified_at: daysFromNow(-0.5) });
    expect(
      nextKeyRotationPass(
        config,
        aKeySnapshot({
          ssh: [ownKeys(anSshKey(12, 'ci-deploy', 3), newSshKey())],
          rotations: { [waiting.id]: waiting },
        }),
        NOW,
      )?.toISOString(),
    ).toBe('2025-06-03T00:01:00.000Z');
    expect(
      nextKeyRotationPass(config, aKeySnapshot({ ssh: [ownKeys(anSshKey(12, 'ci-deploy', 40))] }), NOW),
    ).toBeUndefined();
  });
});
