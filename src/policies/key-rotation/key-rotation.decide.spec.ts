import { SKIP } from '../../engine/policy';
import { aDeployKey, aKeySnapshot, anSshKey, aRecord, aRotationConfig, daysFromNow, NOW, ownKeys } from '../../../test/support/builders/keys';
import {
  CLOSE_ROTATION,
  decideKeyRotation,
  ENABLE_KEY,
  type KeyRotationSnapshot,
  nextKeyRotationPass,
  type ObservedDeployKey,
  type ObservedSshKey,
  REMOVE_OLD_KEY,
  RUN_ON_ROTATE,
  UPLOAD_KEY,
  VERIFY_KEY,
  WRITE_KEY,
} from './key-rotation.decide';
import type { RotationRecord } from './key-rotation.record';

const ROTATE_STEPS = [WRITE_KEY, UPLOAD_KEY, VERIFY_KEY];
/** A deploy key on acme/api and acme/web: created on the first, enabled on the second. */
const DEPLOY_STEPS = [WRITE_KEY, UPLOAD_KEY, ENABLE_KEY, VERIFY_KEY];
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
      params: { rotation: 'ssh-1-12', generation: 1, lifetime_ms: 90 * 86_400_000, old_key_id: 12, old_fingerprint: 'SHA256:old-12', user_id: 1, self: true },
    });
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
    ['older than rotate_after', 120, DEPLOY_STEPS, 'rotate: created 2025-02-02, older than rotate_after 90d'],
    ['exactly rotate_after old', 90, DEPLOY_STEPS, 'rotate: created 2025-03-04, older than rotate_after 90d'],
    ['younger', 32, [SKIP], 'skip: 32d old, rotates after 90d'],
  ])('%s', (_title, age, actions, reason) => {
    const decisions = decideKeyRotation(aRotationConfig({ ssh_keys: [] }), aKeySnapshot({ deploy: [[aDeployKey(7, 'release', age)]] }), NOW);
    expect(decisions.map((d) => d.action)).toEqual(actions);
    expect(decisions[0].reason).toBe(reason);
  });

  it('creates on the first project that had the key and enables on the others, with their can_push', () => {
    const [write, upload, enable] = decideKeyRotation(aRotationConfig({ ssh_keys: [] }), aKeySnapshot({ deploy: [[aDeployKey(7, 'release', 100)]] }), NOW);
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
    expect(upload.reason).toBe('upload the new public key: create it on acme/api, which holds old key 7');
    expect(upload.params).toMatchObject({ project: 'acme/api', can_push: true, old_key_id: 7 });
    expect(enable).toMatchObject({
      action: ENABLE_KEY,
      key: 'deploy-7:enable_key:acme/web:0',
      reason: 'enable the new key on acme/web (can_push false), which holds old key 7',
      params: { project: 'acme/web', can_push: false, old_key_id: 7, old_fingerprint: 'SHA256:old-7' },
    });
  });

  it('resumes a planned rotation on the projects that hold the old key now, not those it was planned with', () => {
    const record = deployRecord('planned', { projects: [{ project: 'acme/api', can_push: true }, { project: 42, can_push: false }] });
    const snapshot = aKeySnapshot({ deploy: [[aDeployKey(7, 'release', 100)]], rotations: { [record.id]: record } });
    const [write, upload, enable] = decideKeyRotation(aRotationConfig({ ssh_keys: [] }), snapshot, NOW);
    expect(write.params.projects).toEqual([
      { project: 'acme/api', can_push: true },
      { project: 'acme/web', can_push: false },
    ]);
    expect(upload.reason).toBe('upload the new public key: create it on acme/api, which holds old key 7');
    expect(enable.reason).toBe('enable the new key on acme/web (can_push false), which holds old key 7');
  });

  it('rotates a key on every project of the entries that manage its title, each project once', () => {
    const config = aRotationConfig({
      ssh_keys: [],
      deploy_keys: [
        { projects: ['acme/api', 'acme/web'], titles: ['^release'], rotate_after: '90d', grace: '1d' },
        { projects: ['acme/web', 'acme/ops'], titles: ['^rel'], rotate_after: '90d', grace: '1d' },
        { projects: ['acme/docs'], titles: ['^docs'], rotate_after: '90d', grace: '1d' },
      ],
    });
    const key = aDeployKey(7, 'release', 100);
    const onOps = aDeployKey(7, 'release', 100, { projects: [{ project: 'acme/web', can_push: false }, { project: 'acme/ops', can_push: true }] });
    const onDocs = aDeployKey(7, 'release', 100, { projects: [{ project: 'acme/docs', can_push: false }] });
    const decisions = decideKeyRotation(config, aKeySnapshot({ deploy: [[key], [onOps], [onDocs]] }), NOW);
    expect(decisions.filter((d) => d.action !== SKIP).map((d) => d.reason)).toEqual([
      'rotate: created 2025-02-22, older than rotate_after 90d',
      'upload the new public key: create it on acme/api, which holds old key 7',
      'enable the new key on acme/web (can_push false), which holds old key 7',
      'enable the new key on acme/ops (can_push true), which holds old key 7',
      'verify the forge lists the new key on acme/api, acme/web, acme/ops',
    ]);
  });
});

/** Root's new key 912 as the forge lists it once uploaded: the recorded id and fingerprint. */
const newSshKey = (fields: Partial<ObservedSshKey> = {}) => anSshKey(912, 'ci-deploy', 89, { fingerprint: 'SHA256:new-12', ...fields });

describe('key_rotation decide: the next step of a rotation under way', () => {
  /** Root's keys: old key 12, and the new key 912 once the record says it was uploaded (unless `others` say otherwise). */
  const snapshotWith = (record: RotationRecord, ...others: ObservedSshKey[]) =>
    aKeySnapshot({ ssh: [ownKeys(anSshKey(12, 'ci-deploy', 3), ...(others.length > 0 || record.new_key_id === null ? others : [newSshKey()]))], rotations: { [record.id]: record } });

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
  ])('%s', (_title, record, fields, expected) => {
    // The new key, once listed, is skipped as such (see below).
    expect(summary({ deploy_keys: [], ...fields }, snapshotWith(record)).filter((line) => !line.includes('new key of rotation'))).toEqual(expected);
  });

  it('keys each step by the attempt, so a step that failed is tried again as a new attempt', () => {
    const decisions = decideKeyRotation(aRotationConfig({ deploy_keys: [] }), snapshotWith(aRecord(12, 'key_written', { attempt: 7, last_error: 'HTTP 500' })), NOW);
    expect(decisions.filter((d) => d.action !== SKIP).map((d) => d.key)).toEqual(['ssh-1-12:upload_key:7', 'ssh-1-12:verify_key:7']);
    expect(decisions[0].details).toEqual(['last attempt failed: HTTP 500']);
  });

  it('says which listed key is the new key of a rotation, rather than rotating it', () => {
    const decisions = decideKeyRotation(aRotationConfig({ deploy_keys: [] }), snapshotWith(aRecord(12, 'verified', { verified_at: daysFromNow(-0.5) }), newSshKey()), NOW);
    expect(decisions.find((d) => d.target.includes('912'))?.reason).toBe('skip: new key of rotation ssh-1-12');
  });

  it('finishes a rotation whose old key a person removed after the new key was in place', () => {
    const record = aRecord(12, 'uploaded');
    const decisions = decideKeyRotation(aRotationConfig({ deploy_keys: [] }), aKeySnapshot({ ssh: [ownKeys(newSshKey())], rotations: { [record.id]: record } }), NOW);
    expect(decisions.map((d) => [d.action, d.target])).toEqual([
      [SKIP, 'root\'s SSH key 912 "ci-deploy"'],
      [VERIFY_KEY, 'root\'s SSH key 12 "ci-deploy" (no longer listed)'],
    ]);
    // After grace, the step only records it done: plan does not call a key removed that someone else removed.
    const verified = aRecord(12, 'verified');
    const later = decideKeyRotation(aRotationConfig({ deploy_keys: [] }), aKeySnapshot({ ssh: [ownKeys(newSshKey())], rotations: { [verified.id]: verified } }), NOW);
    expect(later.filter((d) => d.action !== SKIP).map((d) => `${d.action}: ${d.reason}`)).toEqual([
      'remove_old_key: finish: old key 12 is gone already (removed by someone else); new key 912 stays',
    ]);
  });

  it('removes the old key only after on_rotate, when the policy has one, stating the keys its precondition reads again', () => {
    const decisions = decideKeyRotation(aRotationConfig({ deploy_keys: [], on_rotate: 'sync' }), snapshotWith(aRecord(12, 'hooked')), NOW);
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
    expect(decideKeyRotation(aRotationConfig({ deploy_keys: [], on_rotate: 'sync' }), snapshotWith(aRecord(12, 'verified')), NOW).map((d) => d.action)).toContain(RUN_ON_ROTATE);
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
  const closing = (why: string) => [`${CLOSE_ROTATION}: close: ${why}; nothing on the forge is changed, and the next pass decides afresh`];

  it.each<[string, RotationRecord, ObservedSshKey[], string]>([
    ['the new key deleted by a person, grace passed: the old key is not removed', aRecord(12, 'verified'), [anSshKey(12, 'ci-deploy', 3)], 'new key 912 is gone from the forge'],
    ['the new key deleted before verification', aRecord(12, 'uploaded'), [anSshKey(12, 'ci-deploy', 3)], 'new key 912 is gone from the forge'],
    [
      'another key under the new key’s id (a forge reset since)',
      aRecord(12, 'hooked'),
      [anSshKey(12, 'ci-deploy', 3), newSshKey({ fingerprint: 'SHA256:someone-else' })],
      'key 912 of root (user 1) is not the new key SHA256:new-12 (it is SHA256:someone-else)',
    ],
    [
      'another key under the old key’s id',
      aRecord(12, 'verified'),
      [anSshKey(12, 'ci-deploy', 3, { fingerprint: 'SHA256:reused' }), newSshKey()],
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

  it('closes the rotation of a user the forge no longer knows, and waits for one whose keys could not be read', () => {
    const alice = aRecord(20, 'verified', { id: 'ssh-3-20', owner: { user_id: 3, username: 'alice', self: false } });
    expect(decide(alice, { ssh: [], owners: { 3: { state: 'gone' } } })).toEqual(closing('user alice (user 3) is gone from the forge'));
    expect(decide(alice, { ssh: [], owners: { 3: { state: 'unread', reason: '500' } } })).toEqual([
      'skip: skip: the keys of alice (user 3) could not be read (500); the rotation waits',
    ]);
    expect(decide(alice, { ssh: [{ access: 'unreadable', label: 'alice' }] })).toEqual([
      'skip: skip: the keys of alice could not be read this pass; the other users and projects go on',
      'skip: skip: the keys of alice (user 3) were not read this pass; the rotation waits',
    ]);
  });

  it('rotates the old key again after a rotation was closed: the next generation, with action keys of its own', () => {
    const closed = aRecord(12, 'closed', { attempt: 5, closed_at: daysFromNow(-0.1), closed_reason: 'new key 912 is gone from the forge' });
    const decisions = decideKeyRotation(config, aKeySnapshot({ ssh: [ownKeys(anSshKey(12, 'ci-deploy', 3))], rotations: { [closed.id]: closed } }), NOW);
    expect(decisions.map((d) => d.key)).toEqual(['ssh-1-12#2:write_key:0', 'ssh-1-12#2:upload_key:0', 'ssh-1-12#2:verify_key:0']);
    expect(decisions[0].params).toMatchObject({ generation: 2, path: '/var/lib/forgewarden/keys/rotate/root-12' });
    expect(decisions[0].details).toEqual(['new ed25519 private key at /var/lib/forgewarden/keys/rotate/root-12', 'generation 2 of rotation ssh-1-12']);
    // Not due: plan says what became of the last rotation.
    const later = decideKeyRotation(config, aKeySnapshot({ ssh: [ownKeys(anSshKey(12, 'ci-deploy', 40))], rotations: { [closed.id]: closed } }), NOW);
    expect(later.map((d) => d.reason)).toEqual([`skip: expires in 40d (rotation ssh-1-12 closed ${daysFromNow(-0.1)}: new key 912 is gone from the forge)`]);
  });

  it('decides a listed key under a rotation’s new key id but with another fingerprint as a key of its own', () => {
    const record = aRecord(12, 'verified');
    const stranger = anSshKey(912, 'ci-deploy', 2, { fingerprint: 'SHA256:stranger' });
    const decisions = decideKeyRotation(config, aKeySnapshot({ ssh: [ownKeys(anSshKey(12, 'ci-deploy', 3), stranger)], rotations: { [record.id]: record } }), NOW);
    expect(decisions.map((d) => `${d.action} ${d.key}`)).toEqual([
      `${CLOSE_ROTATION} ssh-1-12:${CLOSE_ROTATION}:3`,
      `${WRITE_KEY} ssh-1-912:${WRITE_KEY}:0`,
      `${UPLOAD_KEY} ssh-1-912:${UPLOAD_KEY}:0`,
      `${VERIFY_KEY} ssh-1-912:${VERIFY_KEY}:0`,
    ]);
  });
});

/** The rotation of deploy key 7 on acme/api (can push) and acme/web, new key 907, at `step`. */
function deployRecord(step: RotationRecord['step'], fields: Partial<RotationRecord> = {}): RotationRecord {
  const record = aRecord(7, step, fields);
  return {
    ...record,
    id: 'deploy-7',
    kind: 'deploy',
    title: 'release',
    owner: null,
    lifetime_ms: null,
    path: '/var/lib/forgewarden/keys/rotate/acme_api-7',
    fingerprint: record.fingerprint === null ? null : 'SHA256:new-7',
    new_key_id: record.new_key_id === null ? null : 907,
    projects: [
      { project: 'acme/api', can_push: true },
      { project: 'acme/web', can_push: false },
    ],
    ...fields,
  };
}

describe('key_rotation decide: a deploy key goes where the old key is now, within the selection', () => {
  const config = aRotationConfig({ ssh_keys: [], deploy_keys: [{ projects: ['acme/*'], titles: ['^release'], rotate_after: '90d', grace: '1d' }] });
  const API = { project: 'acme/api', can_push: true };
  const WEB = { project: 'acme/web', can_push: false };
  const OPS = { project: 'acme/ops', can_push: false };
  const oldKey = (...projects: ObservedDeployKey['projects']) => aDeployKey(7, 'release', 100, { projects });
  const newKey = (...projects: ObservedDeployKey['projects']) => aDeployKey(907, 'release', 1, { fingerprint: 'SHA256:new-7', projects });
  const decide = (record: RotationRecord, keys: ObservedDeployKey[], unread: { project: string; gone: boolean }[] = []) =>
    decideKeyRotation(config, aKeySnapshot({ deploy: [keys], deployUnread: [unread], rotations: { [record.id]: record } }), NOW).filter((d) => d.action !== SKIP || !d.reason.includes('new key of'));

  it('a project a person took the old key from before the upload gets no new key', () => {
    expect(decide(deployRecord('key_written'), [oldKey(API)]).map((d) => d.reason)).toEqual([
      'upload the new public key SHA256:new-7: create it on acme/api, which holds old key 7',
      'verify the forge lists SHA256:new-7 on acme/api',
    ]);
  });

  it('a project that gained the old key after verification gets the new key, and loses the old one with the others', () => {
    const decisions = decide(deployRecord('verified'), [oldKey(API, WEB, OPS), newKey(API, WEB)]);
    expect(decisions.map((d) => `${d.action}: ${d.reason}`)).toEqual([
      'enable_key: enable the new key on acme/ops (can_push false), which holds old key 7',
      'remove_old_key: remove old key 7 from acme/api, acme/web, acme/ops: grace 1d passed',
    ]);
    expect(decisions[1].params).toMatchObject({ projects: [API, WEB, OPS], complete: true, new_key_id: 907, fingerprint: 'SHA256:new-7' });
  });

  it('the old key a person removed from one project is removed from the others only', () => {
    const decisions = decide(deployRecord('verified'), [oldKey(API), newKey(API, WEB)]);
    expect(decisions.map((d) => d.reason)).toEqual(['remove old key 7 from acme/api: grace 1d passed']);
  });

  it('sets can_push of the new key as the old key has it on each project', () => {
    expect(decide(deployRecord('verified'), [oldKey(API, WEB), newKey({ ...API, can_push: false }, WEB)]).map((d) => d.reason)).toEqual([
      'set can_push true of the new key on acme/api, as old key 7 has there',
      'remove old key 7 from acme/api, acme/web: grace 1d passed',
    ]);
  });

  it.each<[string, RotationRecord, ObservedDeployKey[], { project: string; gone: boolean }[], string]>([
    ['the new key deleted from one project by a person: the old key stays everywhere', deployRecord('verified'), [oldKey(API, WEB), newKey(API)], [], 'new key 907 is gone from acme/web'],
    ['the new key deleted from every project', deployRecord('hooked'), [oldKey(API, WEB)], [], 'new key 907 is gone from acme/api, acme/web'],
    ['both keys gone', deployRecord('hooked'), [], [], 'new key 907 is gone from the forge (removed by someone else, or its projects gone or no longer selected)'],
    ['the old key on no project before the upload', deployRecord('key_written'), [], [], 'old key 7 is on none of the selected projects any more (removed by someone else, or its projects gone or no longer selected): no new key is created'],
    [
      'every project of the rotation deleted',
      deployRecord('verified'),
      [],
      [{ project: 'acme/api', gone: true }, { project: 'acme/web', gone: true }],
      'new key 907 is gone from the forge (projects acme/api, acme/web gone from the forge)',
    ],
    [
      'another key under the old id',
      deployRecord('verified'),
      [aDeployKey(7, 'release', 100, { fingerprint: 'SHA256:reused', projects: [API] }), newKey(API, WEB)],
      [],
      'deploy key 7 on acme/api is another key than the one this rotation replaces (SHA256:reused, not SHA256:old-7)',
    ],
  ])('closes: %s', (_title, record, keys, unread, why) => {
    expect(decide(record, keys, unread).map((d) => `${d.action}: ${d.reason}`)).toEqual([
      `${CLOSE_ROTATION}: close: ${why}; nothing on the forge is changed, and the next pass decides afresh`,
    ]);
  });

  it('never writes to a project that could not be read: the old key goes where the new one is verified, and the rotation stays open', () => {
    const unread = [{ project: 'acme/web', gone: false }];
    const decisions = decide(deployRecord('verified'), [oldKey(API), newKey(API)], unread);
    expect(decisions.map((d) => d.reason)).toEqual(['remove old key 7 from acme/api: grace 1d passed']);
    expect(decisions[0].params).toMatchObject({ projects: [API], complete: false });
    expect(decisions[0].details).toEqual(['new key 907 SHA256:new-7 at /var/lib/forgewarden/keys/rotate/acme_api-7', 'not read this pass, left as they are: acme/web']);
    // Once removed where it could be read, the rotation waits for acme/web, which may still hold the old key.
    expect(decide(deployRecord('verified'), [newKey(API)], unread).map((d) => d.reason)).toEqual([
      'skip: old key 7 is on none of the projects read; acme/web could not be read and may still hold it',
    ]);
    // Before the upload, only where the old key is seen.
    expect(decide(deployRecord('key_written'), [oldKey(API)], unread).map((d) => d.reason)).toEqual([
      'upload the new public key SHA256:new-7: create it on acme/api, which holds old key 7',
      'verify the forge lists SHA256:new-7 on acme/api',
    ]);
    expect(decide(deployRecord('key_written'), [], unread).map((d) => d.reason)).toEqual([
      'skip: old key 7 is on none of the projects read; acme/web could not be read; the rotation waits',
    ]);
  });

  it('finishes a rotation whose old key is on no selected project any more while the new key is in place', () => {
    expect(decide(deployRecord('verified'), [newKey(API, WEB)]).map((d) => `${d.action}: ${d.reason}`)).toEqual([
      'remove_old_key: finish: old key 7 is on none of the selected projects any more; new key 907 stays',
    ]);
  });

  it('rotates a key again that a project holds after its rotation was done', () => {
    const done = deployRecord('done', { generation: 1 });
    const decisions = decide(done, [oldKey(OPS), newKey(API, WEB)]).filter((d) => d.params.rotation === 'deploy-7');
    expect(decisions.map((d) => d.key)).toEqual(['deploy-7#2:write_key:0', 'deploy-7#2:upload_key:0', 'deploy-7#2:verify_key:0']);
    expect(decisions[1].reason).toBe('upload the new public key: create it on acme/ops, which holds old key 7');
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
    expect(nextKeyRotationPass(config, aKeySnapshot({ ssh: [ownKeys(anSshKey(12, 'ci-deploy', 3), newSshKey())], rotations: { [waiting.id]: waiting } }), NOW)?.toISOString()).toBe(
      '2025-06-03T00:01:00.000Z',
    );
    expect(nextKeyRotationPass(config, aKeySnapshot({ ssh: [ownKeys(anSshKey(12, 'ci-deploy', 40))] }), NOW)).toBeUndefined();
  });
});
