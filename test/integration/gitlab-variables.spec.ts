import { createHash } from 'node:crypto';
import { type CiVariable, ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../../src/gitlab';
import { type World } from '../../src/sandbox';
import { describeDocumentedEndpoints } from '../support/beyond-spec';
import { collect, useSandboxClients } from '../support/sandbox-clients';
import {
  ADMIN_TOKEN,
  acmeGroup,
  apiProject,
  baseWorld,
  MAINTAINER_TOKEN,
  USER_TOKEN,
  webProject,
} from '../support/world-builders';

/**
 * CI/CD variables of projects and groups (GitLab's public API docs, beyond the forge's API specification) through the
 * client against the sandbox over real HTTP: every endpoint, environment scopes and `filter[environment_scope]`, the
 * forge's masked-value rules, hidden variables, permissions, and values kept out of the request log.
 */

const SECRET = 'glpat-delivered-value-01';

function world(): World {
  return baseWorld({
    groups: [
      acmeGroup({ variables: [{ key: 'GROUP_TOKEN', value: 'group-secret-value', masked: true, protected: true }] }),
    ],
    projects: [
      apiProject({
        variables: [{ key: 'DEPLOY_TOKEN', value: 'seeded-value-1234', environment_scope: 'production', masked: true }],
      }),
      webProject(),
    ],
  });
}

describe('GitlabClient CI/CD variables against the sandbox', () => {
  const forge = useSandboxClients(world);
  const mia = () => forge.client(MAINTAINER_TOKEN);

  it('creates, shows, lists, edits and removes a project variable with the forge’s fields and defaults', async () => {
    const created = await mia().projectVariables.create('acme/api', {
      key: 'API_TOKEN',
      value: SECRET,
      masked: true,
      protected: true,
      description: 'rotated by forgewarden',
    });
    expect(created).toEqual<CiVariable>({
      variable_type: 'env_var',
      key: 'API_TOKEN',
      value: SECRET,
      hidden: false,
      protected: true,
      masked: true,
      raw: false,
      environment_scope: '*',
      description: 'rotated by forgewarden',
    });
    expect(await mia().projectVariables.show(1, 'API_TOKEN')).toEqual(created);
    expect((await collect(mia().projectVariables.all('acme/api'))).map((v) => [v.key, v.environment_scope])).toEqual([
      ['DEPLOY_TOKEN', 'production'],
      ['API_TOKEN', '*'],
    ]);
    const edited = await mia().projectVariables.edit(1, 'API_TOKEN', { value: 'glpat-next-value-0002' });
    expect(edited).toMatchObject({
      value: 'glpat-next-value-0002',
      masked: true,
      protected: true,
      description: 'rotated by forgewarden',
    });
    await mia().projectVariables.remove(1, 'API_TOKEN');
    await expect(mia().projectVariables.show(1, 'API_TOKEN')).rejects.toMatchObject({
      status: 404,
      body: { message: '404 Variable Not Found' },
    });
    await expect(mia().projectVariables.remove(1, 'API_TOKEN')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('keeps one key per environment scope and picks among them with filter[environment_scope]', async () => {
    await mia().projectVariables.create(1, {
      key: 'DEPLOY_TOKEN',
      value: 'staging-value-1234',
      environment_scope: 'staging',
    });
    const taken = await mia()
      .projectVariables.create(1, { key: 'DEPLOY_TOKEN', value: 'x', environment_scope: 'staging' })
      .catch((e: unknown) => e);
    expect([taken instanceof ValidationError, (taken as ValidationError).body]).toEqual([
      true,
      { message: { key: ['(DEPLOY_TOKEN) has already been taken'] } },
    ]);

    const ambiguous = await mia()
      .projectVariables.show(1, 'DEPLOY_TOKEN')
      .catch((e: unknown) => e);
    expect([ambiguous instanceof ConflictError, (ambiguous as ConflictError).body]).toEqual([
      true,
      { message: "There are multiple variables with provided parameters. Please use 'filter[environment_scope]'" },
    ]);
    await expect(mia().projectVariables.edit(1, 'DEPLOY_TOKEN', { value: 'y' })).rejects.toBeInstanceOf(ConflictError);
    await expect(mia().projectVariables.remove(1, 'DEPLOY_TOKEN')).rejects.toBeInstanceOf(ConflictError);

    expect((await mia().projectVariables.show(1, 'DEPLOY_TOKEN', { environment_scope: 'production' })).value).toBe(
      'seeded-value-1234',
    );
    const moved = await mia().projectVariables.edit(
      1,
      'DEPLOY_TOKEN',
      { value: 'review-value-1234', environment_scope: 'review/*' },
      { environment_scope: 'staging' },
    );
    expect(moved).toMatchObject({ environment_scope: 'review/*', value: 'review-value-1234' });
    await mia().projectVariables.remove(1, 'DEPLOY_TOKEN', { environment_scope: 'production' });
    expect(await mia().projectVariables.show(1, 'DEPLOY_TOKEN')).toMatchObject({ environment_scope: 'review/*' });
    const requests = forge.sandbox.state.requestLog.filter((e) => e.method === 'DELETE').map((e) => e.query);
    expect(requests).toEqual([{}, { 'filter[environment_scope]': 'production' }]);
  });

  it('refuses a masked value the forge cannot mask, in the forge’s words, and changes nothing', async () => {
    const refused = async (value: string, raw = false): Promise<unknown> =>
      mia()
        .projectVariables.create(1, { key: 'MASKED', value, masked: true, raw })
        .then(
          () => 'created',
          (error: unknown) => error,
        );
    for (const value of ['short12', 'two\nlines-of-text', 'has a space in it', 'pipe|character', '']) {
      const error = await refused(value);
      expect([value, error instanceof ValidationError, (error as ValidationError).body]).toEqual([
        value,
        true,
        { message: { value: ['is invalid'] } },
      ]);
    }
    // Raw values may hold any character but whitespace.
    expect(await refused('pipe|character', true)).toBe('created');
    expect(await refused('raw with space', true)).toBeInstanceOf(ValidationError);
    // The characters of the forge's tokens are maskable.
    await mia().projectVariables.create(1, { key: 'TOKEN_LIKE', value: 'glpat-Ab_9-xY/z+=@:.~', masked: true });
    const edit = await mia()
      .projectVariables.edit(1, 'TOKEN_LIKE', { value: 'no good' })
      .catch((e: unknown) => e);
    expect((edit as ValidationError).body).toEqual({ message: { value: ['is invalid'] } });
    expect((await mia().projectVariables.show(1, 'TOKEN_LIKE')).value).toBe('glpat-Ab_9-xY/z+=@:.~');
    // Unmasked, anything goes.
    expect((await mia().projectVariables.create(1, { key: 'PLAIN', value: 'a b' })).value).toBe('a b');
    await expect(mia().projectVariables.create(1, { key: 'BAD-KEY', value: 'x' })).rejects.toMatchObject({
      body: { message: { key: ["can contain only letters, digits and '_'."] } },
    });
  });

  it('never shows a hidden variable’s value again, and keeps it masked', async () => {
    const hidden = await mia().projectVariables.create(1, { key: 'HIDDEN', value: SECRET, masked_and_hidden: true });
    expect(hidden).toMatchObject({ key: 'HIDDEN', value: null, hidden: true, masked: true });
    expect((await mia().projectVariables.show(1, 'HIDDEN')).value).toBeNull();
    expect((await collect(mia().projectVariables.all(1))).find((v) => v.key === 'HIDDEN')?.value).toBeNull();
    const stored = [...forge.sandbox.state.ciVariables.variables.values()].find((v) => v.key === 'HIDDEN');
    expect(stored?.value).toBe(SECRET);
    await expect(mia().projectVariables.edit(1, 'HIDDEN', { masked: false })).rejects.toMatchObject({
      body: { message: { masked: ['Only visible variables can be set to unmasked'] } },
    });
    expect((await mia().projectVariables.edit(1, 'HIDDEN', { value: 'glpat-next-hidden-0001' })).value).toBeNull();
    // The dump names a value only by its hash, for comparing what was delivered.
    const dumped = (forge.sandbox.state.dump().ci_variables as { key: string; value_sha256: string }[]).find(
      (v) => v.key === 'HIDDEN',
    );
    expect(dumped?.value_sha256).toBe(createHash('sha256').update('glpat-next-hidden-0001').digest('hex'));
  });

  it('keeps values out of the request log and the state dump', async () => {
    await mia().projectVariables.create(1, { key: 'LOGGED', value: SECRET, masked: true });
    await mia().projectVariables.edit(1, 'LOGGED', { value: `${SECRET}-2` });
    const log = JSON.stringify(forge.sandbox.state.requestLog);
    expect(log).not.toContain(SECRET);
    expect(log).toContain('"value":"[redacted]"');
    expect(JSON.stringify(forge.sandbox.state.dump())).not.toMatch(/glpat-delivered|seeded-value|group-secret/);
  });

  it('lets project maintainers and group owners manage variables: developers and group maintainers get 403', async () => {
    const alice = forge.client(USER_TOKEN);
    await expect(collect(alice.projectVariables.all(1))).rejects.toBeInstanceOf(ForbiddenError);
    await expect(alice.projectVariables.create(1, { key: 'X', value: 'y' })).rejects.toBeInstanceOf(ForbiddenError);
    await expect(collect(mia().groupVariables.all('acme'))).rejects.toBeInstanceOf(ForbiddenError);

    const root = forge.client(ADMIN_TOKEN);
    expect(await collect(root.groupVariables.all('acme'))).toEqual([
      expect.objectContaining({ key: 'GROUP_TOKEN', masked: true, protected: true, value: 'group-secret-value' }),
    ]);
    const created = await root.groupVariables.create('acme', {
      key: 'GROUP_FILE',
      value: 'line one\nline two',
      variable_type: 'file',
    });
    expect(created).toMatchObject({ variable_type: 'file', value: 'line one\nline two' });
    expect((await root.groupVariables.edit(10, 'GROUP_FILE', { protected: true })).protected).toBe(true);
    expect((await root.groupVariables.show(10, 'GROUP_FILE')).protected).toBe(true);
    await root.groupVariables.remove('acme', 'GROUP_FILE');
    expect((await collect(root.groupVariables.all(10))).map((v) => v.key)).toEqual(['GROUP_TOKEN']);
  });
});

/** The endpoints of GitLab's project-level and group-level CI/CD variables APIs the client covers. */
const VARIABLE_ENDPOINTS = [
  { method: 'GET', path: '/projects/:id/variables', client: 'projectVariables.all' },
  { method: 'POST', path: '/projects/:id/variables', client: 'projectVariables.create' },
  { method: 'GET', path: '/projects/:id/variables/:key', client: 'projectVariables.show' },
  { method: 'PUT', path: '/projects/:id/variables/:key', client: 'projectVariables.edit' },
  { method: 'DELETE', path: '/projects/:id/variables/:key', client: 'projectVariables.remove' },
  { method: 'GET', path: '/groups/:id/variables', client: 'groupVariables.all' },
  { method: 'POST', path: '/groups/:id/variables', client: 'groupVariables.create' },
  { method: 'GET', path: '/groups/:id/variables/:key', client: 'groupVariables.show' },
  { method: 'PUT', path: '/groups/:id/variables/:key', client: 'groupVariables.edit' },
  { method: 'DELETE', path: '/groups/:id/variables/:key', client: 'groupVariables.remove' },
] as const;

describeDocumentedEndpoints('the CI/CD variable endpoints from GitLab’s public API docs', VARIABLE_ENDPOINTS);
