import { aKeySnapshot, aRotationConfig } from '../../../test/support/builders/keys';
import type { KeyRotationObservation } from './key-rotation.observer';
import { keyRotationType } from './key-rotation.type';

const DEPLOY = { titles: ['^release'], rotate_after: '90d', grace: '1d' };
const observed = (...deployProjects: Array<string | number>): KeyRotationObservation => ({
  ...aKeySnapshot(),
  deployProjects,
});

describe('key_rotation policy type', () => {
  it("says that another user's personal access tokens need an administrator's token, and the daemon's own do not", () => {
    const tokens = (users: string[]) =>
      aRotationConfig({
        ssh_keys: [],
        deploy_keys: [],
        personal_access_tokens: [
          { users, names: ['^ci'], before_expiry: '14d', lifetime: '90d', deliver: [{ file: '/var/lib/ci/{name}' }] },
        ],
      });
    expect(keyRotationType.needsAdministrator?.(tokens(['self']))).toBeUndefined();
    expect(keyRotationType.needsAdministrator?.(tokens(['self', 'mia', '7']))).toBe(
      "personal_access_tokens of mia, 7: only an administrator's token lists and rotates another user's tokens",
    );
  });

  it('probes each listed project once however many deploy_keys entries name it, and each glob by its group', () => {
    const config = aRotationConfig({
      ssh_keys: [],
      deploy_keys: [
        { ...DEPLOY, projects: ['acme/api', 'acme/web'] },
        { ...DEPLOY, projects: ['acme/api', 'acme/platform/**', '!acme/platform/legacy-*'] },
      ],
    });
    expect(keyRotationType.probes(config).map((probe) => `${probe.target}: ${probe.needs}`)).toEqual([
      `secrets_dir ${config.secrets_dir}: a folder the daemon's user may write`,
      'project acme/api (deploy keys): Maintainer role or higher',
      'project acme/web (deploy keys): Maintainer role or higher',
      'projects acme/platform/** (group acme/platform): membership of the group (Reporter role or higher to list its projects)',
    ]);
  });

  it('says which projects it looked at only where a glob or an exclude chose them', () => {
    const listed = aRotationConfig({ deploy_keys: [{ ...DEPLOY, projects: ['acme/api', 42] }] });
    expect(keyRotationType.covered(listed, observed('acme/api', 42))).toEqual({});
    const globbed = aRotationConfig({
      deploy_keys: [
        { ...DEPLOY, projects: ['acme/api'] },
        { ...DEPLOY, projects: ['acme/*'] },
      ],
    });
    expect(keyRotationType.covered(globbed, observed('acme/api', 'acme/web', 'acme/worker'))).toEqual({
      projects: ['acme/api', 'acme/web', 'acme/worker'],
    });
  });

  it('checks the forge before every step that gives or takes access; the others say why they need not', () => {
    const actions = keyRotationType.actions;
    expect(
      Object.keys(actions)
        .filter((name) => actions[name].precondition !== undefined)
        .sort(),
    ).toEqual([
      'enable_key',
      'issue_token',
      'remove_new_key',
      'remove_old_key',
      'revoke_old_token',
      'run_on_rotate',
      'upload_key',
    ]);
    expect(
      Object.fromEntries(
        Object.entries(actions).flatMap(([name, action]) => (action.unchecked ? [[name, action.unchecked]] : [])),
      ),
    ).toEqual({
      write_key: 'it writes a new private key into secrets_dir; nothing on the forge changes',
      verify_key: 'it reads the forge and records what it lists; nothing on the forge changes',
      close_rotation:
        "it changes only the policy's own state: the rotation's record in Redis, and its key file in secrets_dir, moved aside; nothing on the forge changes",
      deliver_token:
        'it writes the new value where the policy delivers it and reads each back; the new token is checked active afterwards, and a revoked one closes the rotation',
      close_token_rotation: "it changes only the policy's own record; nothing on the forge changes",
    });
  });

  it("declares the harms its repairs mend, which docs/architecture.md's table names", () => {
    expect(keyRotationType.harms?.map((harm) => harm.kind)).toEqual(['key_left_after_revocation', 'key_unaccounted']);
  });
});
