import { ForbiddenError, NotFoundError, UnauthorizedError } from '../../src/gitlab';
import { collect, useSandboxClients } from '../support/sandbox-clients';
import { ADMIN_TOKEN, baseWorld, MAINTAINER_TOKEN, USER_TOKEN } from '../support/world-builders';

/**
 * Deploy tokens of projects and groups (GitLab's "Deploy tokens API", beyond the forge's API specification) through the
 * client against the sandbox over real HTTP: the value only in the create answer, expiry, the `active` filter, who may
 * manage them, and that the API never takes one. Their endpoints are in the table of gitlab-access-tokens.spec.ts.
 */

describe('GitlabClient deploy tokens against the sandbox', () => {
  const forge = useSandboxClients(() => baseWorld());
  const refusal = (value: string): Promise<unknown> =>
    forge
      .client(value)
      .users.current()
      .then(
        () => 'ok',
        (error: unknown) => error,
      );

  it('creates (the value once), lists, shows and deletes a project’s deploy tokens', async () => {
    const mia = forge.client(MAINTAINER_TOKEN);
    const created = await mia.projectDeployTokens.create('acme/api', {
      name: 'registry',
      scopes: ['read_registry'],
      expires_at: '2025-09-01T00:00:00Z',
    });
    expect(created).toEqual({
      id: expect.any(Number) as number,
      name: 'registry',
      username: `gitlab+deploy-token-${created.id}`,
      expires_at: '2025-09-01T00:00:00.000Z',
      revoked: false,
      expired: false,
      scopes: ['read_registry'],
      token: expect.stringMatching(/^gldt-/) as string,
    });
    const forever = await mia.projectDeployTokens.create(1, {
      name: 'clone',
      scopes: ['read_repository'],
      username: 'cloner',
    });
    expect(forever).toMatchObject({ username: 'cloner', expires_at: null });
    const listed = await collect(mia.projectDeployTokens.all(1));
    expect(listed.map((t) => t.id)).toEqual([created.id, forever.id]);
    for (const token of listed) expect(token).not.toHaveProperty('token');
    expect(await mia.projectDeployTokens.show(1, created.id)).toMatchObject({ name: 'registry' });

    forge.sandbox.state.clock.set(new Date('2025-09-02T00:00:00Z'));
    expect(await mia.projectDeployTokens.show(1, created.id)).toMatchObject({ expired: true });
    expect((await collect(mia.projectDeployTokens.all(1, { active: true }))).map((t) => t.id)).toEqual([forever.id]);
    // A deploy token is for Git and the registry: the API does not take it.
    expect(await refusal(created.token)).toBeInstanceOf(UnauthorizedError);

    await mia.projectDeployTokens.remove(1, created.id);
    await expect(mia.projectDeployTokens.show(1, created.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(mia.projectDeployTokens.remove(1, created.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(
      mia.projectDeployTokens.create(1, { name: 'x', scopes: ['api' as 'read_registry'] }),
    ).rejects.toMatchObject({
      body: { error: 'scopes does not have a valid value' },
    });
    await expect(
      forge.client(USER_TOKEN).projectDeployTokens.create(1, { name: 'x', scopes: ['read_registry'] }),
    ).rejects.toBeInstanceOf(ForbiddenError);
  });

  it('lets group maintainers list a group’s deploy tokens and only owners create and delete them', async () => {
    const created = await forge
      .client(ADMIN_TOKEN)
      .groupDeployTokens.create('acme', { name: 'group-pull', scopes: ['read_registry', 'read_package_registry'] });
    const mia = forge.client(MAINTAINER_TOKEN);
    expect((await collect(mia.groupDeployTokens.all('acme'))).map((t) => t.name)).toEqual(['group-pull']);
    await expect(mia.groupDeployTokens.create('acme', { name: 'x', scopes: ['read_registry'] })).rejects.toBeInstanceOf(
      ForbiddenError,
    );
    await expect(mia.groupDeployTokens.remove('acme', created.id)).rejects.toBeInstanceOf(ForbiddenError);
    await forge.client(ADMIN_TOKEN).groupDeployTokens.remove('acme', created.id);
    expect(await collect(mia.groupDeployTokens.all('acme'))).toEqual([]);
    // A project's token is not the group's.
    const projects = await forge
      .client(ADMIN_TOKEN)
      .projectDeployTokens.create(1, { name: 'p', scopes: ['read_repository'] });
    await expect(forge.client(ADMIN_TOKEN).groupDeployTokens.show('acme', projects.id)).rejects.toBeInstanceOf(
      NotFoundError,
    );
  });
});
