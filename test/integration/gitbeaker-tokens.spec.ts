import { Gitlab } from '@gitbeaker/rest';
import { type World } from '../../src/sandbox';
import { useSandboxClients } from '../support/sandbox-clients';
import { apiProject, baseWorld, MAINTAINER_TOKEN, webProject } from '../support/world-builders';

/**
 * A peer client, @gitbeaker/rest, against the sandbox's access tokens and CI/CD variables: what another GitLab client
 * sends (its own parameter spellings, form or JSON) gets the forge's answers, so the sandbox is not fitted to
 * Forgewarden's client alone.
 */

const ROTATING = 'glpat-gitbeaker-rotating-1';

function world(): World {
  const base = baseWorld({ projects: [apiProject(), webProject()] });
  return {
    ...base,
    users: base.users?.map((user) =>
      user.username === 'mia'
        ? { ...user, tokens: [MAINTAINER_TOKEN, { token: ROTATING, id: 700, name: 'peer' }] }
        : user,
    ),
  };
}

describe('@gitbeaker/rest against the sandbox’s tokens and variables', () => {
  const forge = useSandboxClients(world);
  const gitbeaker = (token: string) => new Gitlab({ host: forge.sandbox.url, token });

  it('rotates its own token and a project access token, each new value working and the old one refused', async () => {
    const self = await gitbeaker(ROTATING).PersonalAccessTokens.show();
    expect(self).toMatchObject({ id: 700, name: 'peer', active: true });
    const rotated = await gitbeaker(ROTATING).PersonalAccessTokens.rotate('self', { expiresAt: '2025-09-01' });
    expect(rotated).toMatchObject({ name: 'peer', expires_at: '2025-09-01', active: true });
    expect(typeof rotated.token).toBe('string');
    await expect(gitbeaker(ROTATING).Users.showCurrentUser()).rejects.toThrow();
    expect((await gitbeaker(String(rotated.token)).Users.showCurrentUser()).username).toBe('mia');

    const mia = gitbeaker(MAINTAINER_TOKEN);
    const created = await mia.ProjectAccessTokens.create(1, 'peer-bot', ['read_api'], '2025-12-01', {
      accessLevel: 30,
    });
    expect(created).toMatchObject({
      name: 'peer-bot',
      scopes: ['read_api'],
      access_level: 30,
      expires_at: '2025-12-01',
    });
    const next = await mia.ProjectAccessTokens.rotate(1, created.id, { expiresAt: '2025-10-01' });
    expect(next).toMatchObject({
      name: 'peer-bot',
      access_level: 30,
      expires_at: '2025-10-01',
      user_id: created.user_id,
    });
    expect((await mia.ProjectAccessTokens.all(1)).map((t) => [t.name, t.active])).toEqual([
      ['peer-bot', false],
      ['peer-bot', true],
    ]);
    expect(forge.sandbox.state.accessTokens.familyRevocations).toEqual([]);
  });

  it('writes and reads a masked variable, and gets the forge’s 400 for a value it cannot mask', async () => {
    const mia = gitbeaker(MAINTAINER_TOKEN);
    const created = await mia.ProjectVariables.create(1, 'PEER_TOKEN', 'glpat-peer-value-0001', {
      masked: true,
      protected: true,
      environmentScope: 'production',
    });
    expect(created).toMatchObject({
      key: 'PEER_TOKEN',
      masked: true,
      protected: true,
      environment_scope: 'production',
    });
    expect((await mia.ProjectVariables.all(1)).map((v) => [v.key, v.value])).toEqual([
      ['PEER_TOKEN', 'glpat-peer-value-0001'],
    ]);
    const refused = await mia.ProjectVariables.create(1, 'SHORT', 'tiny', { masked: true }).catch((e: unknown) => e);
    expect((refused as { cause?: { response?: { status?: number } } }).cause?.response?.status).toBe(400);
    // gitbeaker keeps the forge's `message` as text.
    expect(JSON.parse(String((refused as { cause?: { description?: unknown } }).cause?.description))).toEqual({
      value: ['is invalid'],
    });
    expect([...forge.sandbox.state.ciVariables.variables.values()].map((v) => v.key)).toEqual(['PEER_TOKEN']);
  });
});
