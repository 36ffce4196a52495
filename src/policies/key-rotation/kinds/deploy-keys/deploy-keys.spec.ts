import { SKIP } from '../../../../engine/policy';
import { aDeployKey, aKeySnapshot, aRecord, aRotationConfig, NOW } from '../../../../../test/support/builders/keys';
import {
  CLOSE_ROTATION,
  decideKeyRotation,
  ENABLE_KEY,
  type ObservedDeployKey,
  REMOVE_NEW_KEY,
  REMOVE_OLD_KEY,
  RUN_ON_ROTATE,
  UPLOAD_KEY,
  VERIFY_KEY,
  WRITE_KEY,
} from '../../key-rotation.decide';
import type { RotationRecord } from '../../key-rotation.record';

/** A deploy key on acme/api and acme/web: created on the first, enabled on the second. */
const DEPLOY_STEPS = [WRITE_KEY, UPLOAD_KEY, ENABLE_KEY, VERIFY_KEY];

describe('key_rotation decide: deploy keys not yet under rotation', () => {
  it.each<[string, number, string[], string]>([
    ['older than rotate_after', 120, DEPLOY_STEPS, 'rotate: created 2025-02-02, older than rotate_after 90d'],
    ['exactly rotate_after old', 90, DEPLOY_STEPS, 'rotate: created 2025-03-04, older than rotate_after 90d'],
    ['younger', 32, [SKIP], 'skip: 32d old, rotates after 90d'],
  ])('%s', (_title, age, actions, reason) => {
    const decisions = decideKeyRotation(
      aRotationConfig({ ssh_keys: [] }),
      aKeySnapshot({ deploy: [[aDeployKey(7, 'release', age)]] }),
      NOW,
    );
    expect(decisions.map((d) => d.action)).toEqual(actions);
    expect(decisions[0].reason).toBe(reason);
  });

  it('creates on the first project that had the key and enables on the others, with their can_push', () => {
    const [write, upload, enable] = decideKeyRotation(
      aRotationConfig({ ssh_keys: [] }),
      aKeySnapshot({ deploy: [[aDeployKey(7, 'release', 100)]] }),
      NOW,
    );
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
    const record = deployRecord('planned', {
      projects: [
        { project: 'acme/api', can_push: true },
        { project: 42, can_push: false },
      ],
    });
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
    const onOps = aDeployKey(7, 'release', 100, {
      projects: [
        { project: 'acme/web', can_push: false },
        { project: 'acme/ops', can_push: true },
      ],
    });
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
  const config = aRotationConfig({
    ssh_keys: [],
    deploy_keys: [{ projects: ['acme/*'], titles: ['^release'], rotate_after: '90d', grace: '1d' }],
  });
  const API = { project: 'acme/api', can_push: true };
  const WEB = { project: 'acme/web', can_push: false };
  const OPS = { project: 'acme/ops', can_push: false };
  const oldKey = (...projects: ObservedDeployKey['projects']) => aDeployKey(7, 'release', 100, { projects });
  const newKey = (...projects: ObservedDeployKey['projects']) =>
    aDeployKey(907, 'release', 1, { fingerprint: 'SHA256:new-7', projects });
  const decide = (
    record: RotationRecord,
    keys: ObservedDeployKey[],
    unread: { project: string; gone: boolean }[] = [],
  ) =>
    decideKeyRotation(
      config,
      aKeySnapshot({ deploy: [keys], deployUnread: [unread], rotations: { [record.id]: record } }),
      NOW,
    ).filter((d) => d.action !== SKIP || !d.reason.includes('new key of'));

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
    expect(decisions[1].params).toMatchObject({
      projects: [API, WEB, OPS],
      complete: true,
      new_key_id: 907,
      fingerprint: 'SHA256:new-7',
    });
  });

  it('a person took the old key away from one project: the new key leaves it too (a repair), and the rotation goes on for the others', () => {
    const decisions = decide(deployRecord('verified'), [oldKey(API), newKey(API, WEB)]);
    expect(decisions.map((d) => [d.action, d.reason, d.repairs])).toEqual([
      [
        REMOVE_NEW_KEY,
        "remove new key 907 from acme/web: a person took old key 7 away from it during the rotation, and a person's revocation wins",
        'key_left_after_revocation',
      ],
      [REMOVE_OLD_KEY, 'remove old key 7 from acme/api: grace 1d passed', undefined],
    ]);
    expect(decisions[0].params).toMatchObject({
      project: 'acme/web',
      new_key_id: 907,
      fingerprint: 'SHA256:new-7',
      why: 'revoked',
      old_key_id: 7,
    });
    // Where the bot removed the old key itself (recorded before it did), the new key stays.
    expect(
      decide(deployRecord('verified', { old_removed_on: ['acme/web'] }), [oldKey(API), newKey(API, WEB)]).map(
        (d) => d.action,
      ),
    ).toEqual([REMOVE_OLD_KEY]);
  });

  it('a person took the old key away from every project: the new key leaves them all, then the rotation closes saying why', () => {
    const decisions = decide(deployRecord('hooked'), [newKey(API, WEB)]);
    expect(decisions.map((d) => `${d.action}: ${d.reason}`)).toEqual([
      "remove_new_key: remove new key 907 from acme/api: a person took old key 7 away from it during the rotation, and a person's revocation wins",
      "remove_new_key: remove new key 907 from acme/web: a person took old key 7 away from it during the rotation, and a person's revocation wins",
      'skip: skip: the rotation ends once new key 907 has left every holder that lost old key 7',
    ]);
    expect(
      decide(deployRecord('hooked', { new_key_on: [], revoked_on: ['acme/api', 'acme/web'] }), []).map((d) => d.reason),
    ).toEqual([
      "close: a person took old key 7 away from acme/api, acme/web during the rotation, and new key 907 left with it (a person's revocation wins); nothing on the forge is changed, and the next pass decides afresh",
    ]);
  });

  it('sets can_push of the new key as the old key has it on each project', () => {
    expect(
      decide(deployRecord('verified'), [oldKey(API, WEB), newKey({ ...API, can_push: false }, WEB)]).map(
        (d) => d.reason,
      ),
    ).toEqual([
      'set can_push true of the new key on acme/api, as old key 7 has there',
      'remove old key 7 from acme/api, acme/web: grace 1d passed',
    ]);
  });

  it.each<[string, RotationRecord, ObservedDeployKey[], string]>([
    [
      'both keys gone from every project read, none out of sight',
      deployRecord('hooked'),
      [],
      'new key 907 is gone from the forge (removed by someone else, or its projects no longer selected)',
    ],
    [
      'the old key on no project before the upload',
      deployRecord('key_written'),
      [],
      'old key 7 is on none of the selected projects any more (removed by someone else, or its projects no longer selected): no new key is created',
    ],
    [
      'the new key deleted from every project',
      deployRecord('hooked'),
      [oldKey(API, WEB)],
      'new key 907 is gone from acme/api, acme/web',
    ],
  ])('closes: %s', (_title, record, keys, why) => {
    expect(decide(record, keys).map((d) => `${d.action}: ${d.reason}`)).toEqual([
      `${CLOSE_ROTATION}: close: ${why}; nothing on the forge is changed, and the next pass decides afresh`,
    ]);
  });

  it.each<[string, RotationRecord, ObservedDeployKey[], string, string[]]>([
    [
      'the new key deleted from one project by a person: the old key stays everywhere',
      deployRecord('verified'),
      [oldKey(API, WEB), newKey(API)],
      'new key 907 is gone from acme/web',
      ['acme/api'],
    ],
    [
      'another key under the old id',
      deployRecord('verified'),
      [aDeployKey(7, 'release', 100, { fingerprint: 'SHA256:reused', projects: [API] }), newKey(API, WEB)],
      'deploy key 7 on acme/api is another key than the one this rotation replaces (SHA256:reused, not SHA256:old-7)',
      ['acme/api', 'acme/web'],
    ],
  ])('withdraws the new key before it closes a contradicted rotation: %s', (_title, record, keys, why, from) => {
    const decisions = decide(record, keys);
    expect(decisions.map((d) => `${d.action}: ${d.reason}`)).toEqual([
      ...from.map(
        (project) =>
          `${REMOVE_NEW_KEY}: withdraw new key 907 from ${project}: ${why}; no rotation vouches for it any more`,
      ),
      `skip: skip: closed once new key 907 is withdrawn: ${why}`,
    ]);
    expect(decisions[0]).toMatchObject({ repairs: 'key_unaccounted', params: { why: 'withdrawn', project: from[0] } });
    // Once it has left every project, the rotation closes.
    expect(
      decide(
        record,
        keys.filter((key) => key.id !== 907),
      ).map((d) => d.action),
    ).toEqual([CLOSE_ROTATION]);
  });

  it('never closes a rotation on what the token cannot see: projects out of sight wait, named as open harm where the new key may be', () => {
    const unseen = [
      { project: 'acme/api', gone: true },
      { project: 'acme/web', gone: false },
    ];
    expect(decide(deployRecord('verified'), [], unseen).map((d) => [d.action, d.reason, d.repairs])).toEqual([
      [
        SKIP,
        'skip: new key 907 is on none of the projects read; acme/api, acme/web could not be read; the rotation waits (what the token cannot see is not gone), and no new key is made meanwhile',
        undefined,
      ],
      [
        SKIP,
        'skip: new key 907 may still be enabled on acme/api, acme/web, which the token cannot see now',
        'key_unaccounted',
      ],
    ]);
  });

  it('closes as gone, or goes on, only on positive evidence: the instance listing of an administrator', () => {
    const unseen = [
      { project: 'acme/api', gone: true },
      { project: 'acme/web', gone: true },
    ];
    const instance = (keys: Record<string, { id: number; path: string; can_push: boolean }[]>) => ({
      readonlyKnown: true,
      wanted: [7, 907],
      keys: Object.fromEntries(
        Object.entries(keys).map(([id, projects]) => [id, { fingerprint: undefined, projects }]),
      ),
    });
    const decideWith = (deployInstance: ReturnType<typeof instance>) =>
      decideKeyRotation(
        config,
        aKeySnapshot({
          deploy: [[]],
          deployUnread: [unseen],
          deployInstance,
          rotations: { 'deploy-7': deployRecord('verified', { project_ids: { 'acme/api': 1, 'acme/web': 2 } }) },
        }),
        NOW,
      ).map((d) => d.reason);
    // Neither key listed by the instance: both gone from the forge.
    expect(decideWith(instance({}))).toEqual([
      "close: new key 907 is gone from the forge (the instance's deploy keys do not list it); nothing on the forge is changed, and the next pass decides afresh",
    ]);
    // The new key still enabled on both: the rotation waits, the key accounted for.
    const live = [
      { id: 1, path: 'acme/api', can_push: true },
      { id: 2, path: 'acme/web', can_push: false },
    ];
    expect(decideWith(instance({ 7: live, 907: live }))).toEqual([
      'skip: new key 907 is on none of the projects read; acme/api, acme/web could not be read; the rotation waits (what the token cannot see is not gone), and no new key is made meanwhile',
      "skip: new key 907 may still be enabled on acme/api, acme/web, which the token cannot see now; the instance's deploy keys list it on acme/api, acme/web",
    ]);
  });

  it('has on_rotate wait for every holder: those that hold the old key, and those that could not be read', () => {
    const hooked = aRotationConfig({
      ssh_keys: [],
      on_rotate: 'sync',
      deploy_keys: [{ projects: ['acme/*'], titles: ['^release'], rotate_after: '90d', grace: '1d' }],
    });
    const unread = [{ project: 'acme/ops', gone: false }];
    const record = deployRecord('verified', { verified_at: NOW.toISOString() });
    const snapshot = aKeySnapshot({
      deploy: [[oldKey(API, WEB), newKey(API, WEB)]],
      deployUnread: [unread],
      rotations: { [record.id]: record },
    });
    const hook = decideKeyRotation(hooked, snapshot, NOW).find((d) => d.action === RUN_ON_ROTATE);
    expect(hook?.reason).toBe('run on_rotate for new key 907 once every holder has it; not readable now: acme/ops');
    expect(hook?.params.holders).toEqual(['acme/api', 'acme/web', 'acme/ops']);
    // A new rotation's hook too, in the pass that starts it.
    const fresh = decideKeyRotation(
      hooked,
      aKeySnapshot({ deploy: [[oldKey(API, WEB)]], deployUnread: [unread] }),
      NOW,
    ).find((d) => d.action === RUN_ON_ROTATE);
    expect(fresh?.params.holders).toEqual(['acme/api', 'acme/web', 'acme/ops']);
  });

  it('follows a project by id: one read under its new path is the project the bot put the new key on', () => {
    const moved = { project: 'acme/platform/web', can_push: false };
    const record = deployRecord('verified', {
      new_key_on: ['acme/api', 'acme/web'],
      project_ids: { 'acme/api': 1, 'acme/web': 2 },
    });
    const snapshot = (keys: ObservedDeployKey[]) =>
      aKeySnapshot({
        deploy: [keys],
        deployRotations: { 'deploy-7': { moved: { 'acme/web': 'acme/platform/web' }, unseen: {} } },
        rotations: { [record.id]: record },
      });
    const decideAt = (keys: ObservedDeployKey[]) =>
      decideKeyRotation(config, snapshot(keys), NOW)
        .filter((d) => !d.reason.includes('new key of'))
        .map((d) => d.reason);
    expect(decideAt([oldKey(API, moved), newKey(API, moved)])).toEqual([
      'remove old key 7 from acme/api, acme/platform/web: grace 1d passed',
    ]);
    // A person took the old key away from it at its new path: the new key leaves it.
    expect(decideAt([oldKey(API), newKey(API, moved)])[0]).toBe(
      "remove new key 907 from acme/platform/web: a person took old key 7 away from it during the rotation, and a person's revocation wins",
    );
  });

  it('never writes to a project that could not be read: the old key goes where the new one is verified, and the rotation stays open', () => {
    const unread = [{ project: 'acme/web', gone: false }];
    const decisions = decide(
      deployRecord('verified', { new_key_on: ['acme/api'] }),
      [oldKey(API), newKey(API)],
      unread,
    );
    expect(decisions.map((d) => d.reason)).toEqual(['remove old key 7 from acme/api: grace 1d passed']);
    expect(decisions[0].params).toMatchObject({ projects: [API], complete: false });
    expect(decisions[0].details).toEqual([
      'new key 907 SHA256:new-7 at /var/lib/forgewarden/keys/rotate/acme_api-7',
      'not read this pass, left as they are: acme/web',
    ]);
    // Once removed where it could be read, the rotation waits for acme/web, which may still hold the old key.
    expect(
      decide(
        deployRecord('verified', { new_key_on: ['acme/api'], old_removed_on: ['acme/api'] }),
        [newKey(API)],
        unread,
      ).map((d) => d.reason),
    ).toEqual(['skip: old key 7 is on none of the projects read; acme/web could not be read and may still hold it']);
    // Before the upload, only where the old key is seen.
    expect(decide(deployRecord('key_written'), [oldKey(API)], unread).map((d) => d.reason)).toEqual([
      'upload the new public key SHA256:new-7: create it on acme/api, which holds old key 7',
      'verify the forge lists SHA256:new-7 on acme/api',
    ]);
    expect(decide(deployRecord('key_written'), [], unread).map((d) => d.reason)).toEqual([
      'skip: old key 7 is on none of the projects read; acme/web could not be read; the rotation waits',
    ]);
  });

  it('finishes a rotation whose old key the bot removed from every project (an attempt cut before it recorded so)', () => {
    expect(
      decide(deployRecord('verified', { old_removed_on: ['acme/api', 'acme/web'] }), [newKey(API, WEB)]).map(
        (d) => `${d.action}: ${d.reason}`,
      ),
    ).toEqual(['remove_old_key: finish: old key 7 is on none of the selected projects any more; new key 907 stays']);
  });

  it('gives the new key of a done rotation to a project that gained the old key since, and takes the old key away: never a second new key', () => {
    const done = deployRecord('done', { generation: 1, old_removed_on: ['acme/api', 'acme/web'] });
    const decisions = decide(done, [oldKey(OPS), newKey(API, WEB)]).filter((d) => d.params.rotation === 'deploy-7');
    expect(decisions.map((d) => `${d.action}: ${d.reason}`)).toEqual([
      'enable_key: enable the new key on acme/ops (can_push false), which holds old key 7',
      'remove_old_key: remove old key 7 from acme/ops again: it came back after rotation deploy-7 was done, and new key 907 is there now',
    ]);
    expect(decisions[1].params).toMatchObject({ again: true, projects: [OPS], complete: true });
  });

  it('rotates a key again, as the next generation, only once the done rotation’s new key is gone', () => {
    const done = deployRecord('done', { generation: 1 });
    const decisions = decide(done, [oldKey(OPS)]).filter((d) => d.params.rotation === 'deploy-7');
    expect(decisions.map((d) => d.key)).toEqual([
      'deploy-7#2:write_key:0',
      'deploy-7#2:upload_key:0',
      'deploy-7#2:verify_key:0',
    ]);
    expect(decisions[1].reason).toBe('upload the new public key: create it on acme/ops, which holds old key 7');
  });
});
