import { SKIP } from '../../engine/policy';
import { aDeployKey, aKeySnapshot, anSshKey, aRecord, aRotationConfig, daysFromNow, NOW, ownKeys } from '../../../test/support/builders/keys';
import { decideKeyRotation, nextKeyRotationPass, type ObservedSshKey, REMOVE_OLD_KEY, RUN_ON_ROTATE, UPLOAD_KEY, VERIFY_KEY, WRITE_KEY } from './key-rotation.decide';
import type { RotationRecord } from './key-rotation.record';

const ROTATE_STEPS = [WRITE_KEY, UPLOAD_KEY, VERIFY_KEY];
const summary = (fields: Record<string, unknown>, snapshot = aKeySnapshot()) =>
  decideKeyRotation(aRotationConfig(fields), snapshot, NOW).map((d) => `${d.action}: ${d.reason}`);

describe('key_rotation decide: SSH keys not yet under rotation', () => {
  it.each<[string, number | null, string[], string]>([
    ['expires within rotate_before', 6, ROTATE_STEPS, 'rotate: expires 2025-06-08, within rotate_before 14d'],
    ['expires exactly at rotate_before', 14, ROTATE_STEPS, 'rotate: expires 2025-06-16, within rotate_before 14d'],
    ['expired while still listed', -2, ROTATE_STEPS, 'rotate: expired 2025-05-31, still listed'],
    ['expires later', 40, [SKIP], 'skip: expires in 40d'],
    ['expires a little after rotate_before', 14.5, [SKIP], 'skip: expires in 14d'],
    ['never expires', null, [SKIP], 'skip: never expires'],
  ])('%s', (_title, expiresIn, actions, reason) => {
    const decisions = decideKeyRotation(aRotationConfig({ deploy_keys: [] }), aKeySnapshot({ ssh: [ownKeys(anSshKey(12, 'ci-deploy', expiresIn))] }), NOW);
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
      ssh: [ownKeys(anSshKey(12, 'laptop', 1)), { access: 'needs_admin', label: 'bob' }, { access: 'unknown_user', label: '99' }],
    });
    expect(decideKeyRotation(config, snapshot, NOW).map((d) => [d.target, d.reason])).toEqual([
      ['SSH keys of bob', "skip: another user's keys need an administrator's token"],
      ['SSH keys of 99', 'skip: no user 99 on the forge'],
    ]);
  });

  it('carries what the first step needs, keyed by rotation, step and attempt, and never anything secret', () => {
    const config = aRotationConfig({ deploy_keys: [], on_rotate: 'deploy-key-sync' });
    const decisions = decideKeyRotation(config, aKeySnapshot({ ssh: [ownKeys(anSshKey(12, 'ci-deploy', 3))] }), NOW);
    expect(decisions.map((d) => d.key)).toEqual(['ssh-1-12:write_key:0', 'ssh-1-12:upload_key:0', 'ssh-1-12:verify_key:0', 'ssh-1-12:run_on_rotate:0']);
    expect(decisions[0]).toEqual({
      action: WRITE_KEY,
      target: 'root\'s SSH key 12 "ci-deploy"',
      key: 'ssh-1-12:write_key:0',
      reason: 'rotate: expires 2025-06-05, within rotate_before 14d',
      params: {
        rotation: 'ssh-1-12',
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
    expect(decisions[1]).toMatchObject({ reason: 'upload the new public key, expiring in 90d', params: { rotation: 'ssh-1-12', lifetime_ms: 90 * 86_400_000 } });
    expect(decisions[3]).toMatchObject({ reason: 'run on_rotate for new key (once uploaded)', params: { rotation: 'ssh-1-12', command: 'deploy-key-sync' } });
  });

  it('decides a key matched by two entries once', () => {
    const rule = { user: 'self', titles: ['ci'], rotate_before: '14d', lifetime: '90d', grace: '1d' };
    const config = aRotationConfig({ deploy_keys: [], ssh_keys: [rule, rule] });
    const key = anSshKey(12, 'ci-deploy', 3);
    expect(decideKeyRotation(config, aKeySnapshot({ ssh: [ownKeys(key), ownKeys(key)] }), NOW).filter((d) => d.action === WRITE_KEY)).toHaveLength(1);
  });
});

describe('key_rotation decide: deploy keys not yet under rotation', () => {
  it.each<[string, number, string[], string]>([
    ['older than rotate_after', 120, ROTATE_STEPS, 'rotate: created 2025-02-02, older than rotate_after 90d'],
    ['exactly rotate_after old', 90, ROTATE_STEPS, 'rotate: created 2025-03-04, older than rotate_after 90d'],
    ['younger', 32, [SKIP], 'skip: 32d old, rotates after 90d'],
  ])('%s', (_title, age, actions, reason) => {
    const decisions = decideKeyRotation(aRotationConfig({ ssh_keys: [] }), aKeySnapshot({ deploy: [[aDeployKey(7, 'release', age)]] }), NOW);
    expect(decisions.map((d) => d.action)).toEqual(actions);
    expect(decisions[0].reason).toBe(reason);
  });

  it('creates on the first project that had the key and enables on the others, with their can_push', () => {
    const [write, upload] = decideKeyRotation(aRotationConfig({ ssh_keys: [] }), aKeySnapshot({ deploy: [[aDeployKey(7, 'release', 100)]] }), NOW);
    expect(write.target).toBe('deploy key 7 "release" (acme/api, acme/web)');
    expect(write.params).toMatchObject({
      rotation: 'deploy-7',
      kind: 'deploy',
      path: '/var/lib/forgewarden/keys/rotate/acme_api-7',
      projects: [
        { project: 'acme/api', can_push: true },
        { project: 'acme/web', can_push: false },
      ],
    });
    expect(upload.reason).toBe('upload the new public key: create it on acme/api, enable it on acme/web');
  });

  it('resumes a rotation with the projects its record holds', () => {
    const record: RotationRecord = {
      ...aRecord(7, 'planned'),
      id: 'deploy-7',
      kind: 'deploy',
      title: 'release',
      owner: null,
      lifetime_ms: null,
      projects: [{ project: 'acme/api', can_push: true }, { project: 42, can_push: false }],
    };
    const snapshot = aKeySnapshot({ deploy: [[aDeployKey(7, 'release', 100)]], rotations: { [record.id]: record } });
    const [write, upload] = decideKeyRotation(aRotationConfig({ ssh_keys: [] }), snapshot, NOW);
    expect(write.params.projects).toEqual([
      { project: 'acme/api', can_push: true },
      { project: 42, can_push: false },
    ]);
    expect(upload.reason).toBe('upload the new public key: create it on acme/api, enable it on 42');
  });
});

describe('key_rotation decide: the next step of a rotation under way', () => {
  const snapshotWith = (record: RotationRecord, ...others: ObservedSshKey[]) =>
    aKeySnapshot({ ssh: [ownKeys(anSshKey(12, 'ci-deploy', 3), ...others)], rotations: { [record.id]: record } });

  it.each<[string, RotationRecord, Record<string, unknown>, string[]]>([
    ['planned: the key is written again', aRecord(12, 'planned'), {}, [
      'write_key: resume: write the new private key to /var/lib/forgewarden/keys/rotate/root-12',
      'upload_key: upload the new public key, expiring in 90d',
      'verify_key: verify the forge lists the new key',
    ]],
    ['key written: upload and verify', aRecord(12, 'key_written'), {}, [
      'upload_key: upload the new public key SHA256:new-12, expiring in 90d',
      'verify_key: verify the forge lists SHA256:new-12',
    ]],
    ['uploaded: verify', aRecord(12, 'uploaded'), {}, ['verify_key: verify the forge lists SHA256:new-12']],
    ['uploaded, with on_rotate: verify, then run it', aRecord(12, 'uploaded'), { on_rotate: 'sync' }, [
      'verify_key: verify the forge lists SHA256:new-12',
      'run_on_rotate: run on_rotate for new key 912',
    ]],
    ['verified within grace', aRecord(12, 'verified', { verified_at: daysFromNow(-0.5) }), {}, ['skip: skip: keep old key 12 until 2025-06-03T00:00:00.000Z (grace 1d)']],
    ['verified, grace passed', aRecord(12, 'verified'), {}, ['remove_old_key: remove old key 12: grace 1d passed']],
    ['verified, grace passed, on_rotate not yet run', aRecord(12, 'verified'), { on_rotate: 'sync' }, [
      'run_on_rotate: run on_rotate for new key 912',
      'skip: skip: keep old key 12 until on_rotate succeeds',
    ]],
    ['on_rotate ran, grace passed', aRecord(12, 'hooked'), { on_rotate: 'sync' }, ['remove_old_key: remove old key 12: grace 1d passed']],
    ['done', aRecord(12, 'done'), {}, [`skip: skip: rotated; old key 12 removed ${NOW.toISOString()}`]],
  ])('%s', (_title, record, fields, expected) => {
    expect(summary({ deploy_keys: [], ...fields }, snapshotWith(record))).toEqual(expected);
  });

  it('keys each step by the attempt, so a step that failed is tried again as a new attempt', () => {
    const decisions = decideKeyRotation(aRotationConfig({ deploy_keys: [] }), snapshotWith(aRecord(12, 'key_written', { attempt: 7, last_error: 'HTTP 500' })), NOW);
    expect(decisions.filter((d) => d.action !== SKIP).map((d) => d.key)).toEqual(['ssh-1-12:upload_key:7', 'ssh-1-12:verify_key:7']);
    expect(decisions[0].details).toEqual(['last attempt failed: HTTP 500']);
  });

  it('says which listed key is the new key of a rotation, rather than rotating it', () => {
    const decisions = decideKeyRotation(aRotationConfig({ deploy_keys: [] }), snapshotWith(aRecord(12, 'verified', { verified_at: daysFromNow(-0.5) }), anSshKey(912, 'ci-deploy', 89)), NOW);
    expect(decisions.find((d) => d.target.includes('912'))?.reason).toBe('skip: new key of rotation ssh-1-12');
  });

  it('finishes a rotation whose old key is no longer listed', () => {
    const record = aRecord(12, 'uploaded');
    const decisions = decideKeyRotation(aRotationConfig({ deploy_keys: [] }), aKeySnapshot({ ssh: [ownKeys()], rotations: { [record.id]: record } }), NOW);
    expect(decisions.map((d) => [d.action, d.target])).toEqual([[VERIFY_KEY, 'root\'s SSH key 12 "ci-deploy" (no longer listed)']]);
  });

  it('removes the old key only after on_rotate, when the policy has one', () => {
    const decisions = decideKeyRotation(aRotationConfig({ deploy_keys: [], on_rotate: 'sync' }), snapshotWith(aRecord(12, 'hooked')), NOW);
    expect(decisions.find((d) => d.action === REMOVE_OLD_KEY)?.params).toEqual({ rotation: 'ssh-1-12', old_key_id: 12, after_hook: true });
    expect(decideKeyRotation(aRotationConfig({ deploy_keys: [], on_rotate: 'sync' }), snapshotWith(aRecord(12, 'verified')), NOW).map((d) => d.action)).toContain(RUN_ON_ROTATE);
  });
});

describe('key_rotation decide: determinism and nextPass', () => {
  it('gives the same decisions whatever order the forge listed the keys in', () => {
    const keys = [anSshKey(12, 'ci-a', 3), anSshKey(13, 'ci-b', 50), anSshKey(14, 'ci-c', 1)];
    const config = aRotationConfig({ deploy_keys: [], ssh_keys: [{ user: 'self', titles: ['^ci'], rotate_before: '14d', lifetime: '90d', grace: '1d' }] });
    expect(decideKeyRotation(config, aKeySnapshot({ ssh: [ownKeys(...keys)] }), NOW)).toEqual(
      decideKeyRotation(config, aKeySnapshot({ ssh: [ownKeys(...[...keys].reverse())] }), NOW),
    );
  });

  it('asks for a pass when a grace period ends: from now for a key verified this pass, from the record otherwise', () => {
    const config = aRotationConfig({ deploy_keys: [] });
    expect(nextKeyRotationPass(config, aKeySnapshot({ ssh: [ownKeys(anSshKey(12, 'ci-deploy', 3))] }), NOW)?.toISOString()).toBe('2025-06-03T12:01:00.000Z');
    const waiting = aRecord(12, 'verified', { verified_at: daysFromNow(-0.5) });
    expect(nextKeyRotationPass(config, aKeySnapshot({ ssh: [ownKeys(anSshKey(12, 'ci-deploy', 3))], rotations: { [waiting.id]: waiting } }), NOW)?.toISOString()).toBe(
      '2025-06-03T00:01:00.000Z',
    );
    expect(nextKeyRotationPass(config, aKeySnapshot({ ssh: [ownKeys(anSshKey(12, 'ci-deploy', 40))] }), NOW)).toBeUndefined();
  });
});
