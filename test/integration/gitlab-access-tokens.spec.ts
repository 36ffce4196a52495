import {
  ForbiddenError,
  type GitlabClient,
  type NewPersonalAccessToken,
  NotFoundError,
  type PersonalAccessToken,
  UnauthorizedError,
  ValidationError,
} from '../../src/gitlab';
import { type World } from '../../src/sandbox';
import { describeDocumentedEndpoints } from '../support/beyond-spec';
import { collect, useSandboxClients } from '../support/sandbox-clients';
import {
  ADMIN_TOKEN,
  acmeGroup,
  apiProject,
  baseWorld,
  MAINTAINER_TOKEN,
  OUTSIDER_TOKEN,
  USER_TOKEN,
  webProject,
} from '../support/world-builders';

/**
 * Personal, project and group access tokens (GitLab's public API docs, beyond the forge's API specification) through
 * the client against the sandbox over real HTTP: every endpoint, the value only in the answer that made a token,
 * rotation with its week default and year cap, the 401s of expired and revoked tokens, scopes, and the forge's reuse
 * detection with its record of family revocations.
 */

const CI_TOKEN = 'glpat-mia-ci-0123456789';
const SELF_ROTATE_TOKEN = 'glpat-mia-rotate-only-01';
const PROJECT_BOT_TOKEN = 'glpat-api-deploy-bot-001';
const GROUP_BOT_TOKEN = 'glpat-acme-group-bot-001';

/** mia holds two more tokens: `ci` (api, 20 days left) and `rotator` (self_rotate only); acme/api and acme have bots. */
function world(): World {
  const base = baseWorld();
  return {
    ...base,
    users: base.users?.map((user) =>
      user.username === 'mia'
        ? {
            ...user,
            tokens: [
              MAINTAINER_TOKEN,
              { token: CI_TOKEN, id: 501, name: 'ci', scopes: ['api'], expires_at: 'now+20d' },
              { token: SELF_ROTATE_TOKEN, id: 502, name: 'rotator', scopes: ['self_rotate'], expires_at: 'now+5d' },
            ],
          }
        : user,
    ),
    groups: [
      acmeGroup({
        access_tokens: [
          {
            token: GROUP_BOT_TOKEN,
            id: 601,
            name: 'group-ci',
            scopes: ['read_api'],
            access_level: 'developer',
            expires_at: 'now+40d',
          },
        ],
      }),
    ],
    projects: [
      apiProject({
        access_tokens: [{ token: PROJECT_BOT_TOKEN, id: 602, name: 'deploy', scopes: ['api'], expires_at: 'now+30d' }],
      }),
      webProject(),
    ],
  };
}

/** The sandbox clock starts at BASE_NOW, 2025-06-02: a week on is 2025-06-09, the year's cap 2026-06-02. */
const WEEK_LATER = '2025-06-09';
const YEAR_CAP = '2026-06-02';

describe('GitlabClient access tokens against the sandbox', () => {
  const forge = useSandboxClients(world);
  const tokens = () => forge.sandbox.state.accessTokens;
  const revocations = () => tokens().familyRevocations;
  /** What the forge answers a request made with `value`, as an error (or `ok`). */
  const refusal = (value: string): Promise<unknown> =>
    forge
      .client(value)
      .users.current()
      .then(
        () => 'ok',
        (error: unknown) => error,
      );

  describe('personal access tokens', () => {
    it('lists the caller’s own tokens with the forge’s filters; an administrator lists everyone’s, bots’ too', async () => {
      const mia = forge.client(MAINTAINER_TOKEN);
      const own = await collect(mia.personalAccessTokens.all());
      expect(own.map((t) => [t.name, t.scopes, t.expires_at, t.active, t.revoked])).toEqual([
        ['mia-token-1', ['api'], null, true, false],
        ['ci', ['api'], '2025-06-22', true, false],
        ['rotator', ['self_rotate'], '2025-06-07', true, false],
      ]);
      for (const token of own) expect(token).not.toHaveProperty('token');
      expect((await collect(mia.personalAccessTokens.all({ search: 'CI' }))).map((t) => t.id)).toEqual([501]);
      expect((await collect(mia.personalAccessTokens.all({ expires_before: '2025-06-10' }))).map((t) => t.id)).toEqual([
        502,
      ]);
      expect((await collect(mia.personalAccessTokens.all({ sort: 'name_desc' }))).map((t) => t.name)).toEqual([
        'rotator',
        'mia-token-1',
        'ci',
      ]);
      await expect(collect(mia.personalAccessTokens.all({ user_id: 1 }))).rejects.toBeInstanceOf(UnauthorizedError);

      const root = forge.client(ADMIN_TOKEN);
      const everyone = await collect(root.personalAccessTokens.all());
      expect(everyone.map((t) => t.id)).toEqual(expect.arrayContaining([501, 502, 601, 602]));
      expect((await collect(root.personalAccessTokens.all({ user_id: 2 }))).map((t) => t.id)).toEqual(
        own.map((t) => t.id),
      );
      await mia.personalAccessTokens.revoke(502);
      expect((await collect(mia.personalAccessTokens.all({ state: 'inactive' }))).map((t) => t.id)).toEqual([502]);
      expect((await collect(mia.personalAccessTokens.all({ revoked: false }))).map((t) => t.id)).not.toContain(502);
    });

    it('shows a token to its owner and administrators only, and `self` is the token that asks', async () => {
      const mia = forge.client(MAINTAINER_TOKEN);
      expect(await mia.personalAccessTokens.show(501)).toMatchObject({
        id: 501,
        name: 'ci',
        user_id: 2,
        expires_at: '2025-06-22',
      });
      // Another user's token, or one that does not exist: 401 to anyone but an administrator, who gets 404.
      const rootsToken = tokens().byTokenValue(ADMIN_TOKEN)!.id;
      await expect(mia.personalAccessTokens.show(rootsToken)).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(mia.personalAccessTokens.show(99_999)).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(forge.client(ADMIN_TOKEN).personalAccessTokens.show(99_999)).rejects.toBeInstanceOf(NotFoundError);
      expect(await forge.client(ADMIN_TOKEN).personalAccessTokens.show(501)).toMatchObject({ id: 501, user_id: 2 });

      const self = await forge.client(CI_TOKEN).personalAccessTokens.self();
      expect(self).toEqual<PersonalAccessToken>({
        id: 501,
        name: 'ci',
        description: null,
        revoked: false,
        created_at: expect.any(String) as string,
        scopes: ['api'],
        user_id: 2,
        last_used_at: expect.any(String) as string,
        active: true,
        expires_at: '2025-06-22',
      });
      // Any scope may read its own token: the forge lets a token learn its own expiry.
      expect((await forge.client(SELF_ROTATE_TOKEN).personalAccessTokens.self()).id).toBe(502);
      // A bot's token is a personal access token of the bot.
      expect(await forge.client(PROJECT_BOT_TOKEN).personalAccessTokens.self()).toMatchObject({
        id: 602,
        name: 'deploy',
      });
    });

    it('rotates by id: the old token is revoked, the new one has a new id, the value once, the expiry asked for', async () => {
      const mia = forge.client(MAINTAINER_TOKEN);
      const rotated = await mia.personalAccessTokens.rotate(501, { expires_at: '2025-09-01' });
      expect(rotated).toEqual<NewPersonalAccessToken>({
        id: expect.any(Number) as number,
        name: 'ci',
        description: null,
        revoked: false,
        created_at: expect.any(String) as string,
        scopes: ['api'],
        user_id: 2,
        last_used_at: null,
        active: true,
        expires_at: '2025-09-01',
        token: expect.stringMatching(/^glpat-[A-Za-z0-9_-]{20}$/) as string,
      });
      expect(rotated.id).toBeGreaterThan(602);
      expect(tokens().tokens.get(rotated.id)).toMatchObject({ previous_id: 501, value: rotated.token });
      expect(await mia.personalAccessTokens.show(501)).toMatchObject({ revoked: true, active: false });
      expect(await mia.personalAccessTokens.show(rotated.id)).not.toHaveProperty('token');

      expect((await forge.client(rotated.token).users.current()).username).toBe('mia');
      const old = await refusal(CI_TOKEN);
      expect(old).toBeInstanceOf(UnauthorizedError);
      expect((old as UnauthorizedError).body).toEqual({
        error: 'invalid_token',
        error_description: 'Token was revoked. You have to re-authorize from the user.',
      });
      // The old token on an ordinary request is refused, and no more: reuse detection watches rotate requests only.
      expect(revocations()).toEqual([]);
      expect(await forge.client(rotated.token).personalAccessTokens.self()).toMatchObject({
        id: rotated.id,
        active: true,
      });
    });

    it('gives a rotation without expires_at one week, and refuses one past the year’s cap without rotating', async () => {
      const mia = forge.client(MAINTAINER_TOKEN);
      const week = await mia.personalAccessTokens.rotate(501);
      expect(week.expires_at).toBe(WEEK_LATER);

      const tooLate = await mia.personalAccessTokens
        .rotate(week.id, { expires_at: '2026-06-03' })
        .catch((e: unknown) => e);
      expect(tooLate).toBeInstanceOf(ValidationError);
      expect((tooLate as ValidationError).body).toEqual({
        message: `400 Bad request - Expiration date must be before ${YEAR_CAP}`,
      });
      expect(await mia.personalAccessTokens.show(week.id)).toMatchObject({ revoked: false, active: true });
      expect((await mia.personalAccessTokens.rotate(week.id, { expires_at: YEAR_CAP })).expires_at).toBe(YEAR_CAP);
      await expect(mia.personalAccessTokens.rotate(502, { expires_at: 'soon' })).rejects.toMatchObject({
        status: 400,
        body: { error: 'expires_at is invalid' },
      });
    });

    it('rotates itself with the api or self_rotate scope; self_rotate reaches nothing else', async () => {
      const rotated = await forge
        .client(SELF_ROTATE_TOKEN)
        .personalAccessTokens.rotateSelf({ expires_at: '2025-07-01' });
      expect(rotated).toMatchObject({ name: 'rotator', scopes: ['self_rotate'], expires_at: '2025-07-01', user_id: 2 });
      expect(tokens().tokens.get(502)?.revoked).toBe(true);
      const narrow = await forge
        .client(rotated.token)
        .users.current()
        .catch((e: unknown) => e);
      expect(narrow).toBeInstanceOf(ForbiddenError);
      expect((narrow as ForbiddenError).body).toEqual({
        error: 'insufficient_scope',
        error_description: 'The request requires higher privileges than provided by the access token.',
        scope: 'api read_api read_user',
      });
      expect((await forge.client(CI_TOKEN).personalAccessTokens.rotateSelf()).expires_at).toBe(WEEK_LATER);
      expect(revocations()).toEqual([]);
    });

    it('answers 401 to an expired token, from 00:00 UTC of its expiry day, and a control endpoint moves the expiry', async () => {
      forge.sandbox.state.clock.set(new Date('2025-06-21T23:59:00Z'));
      expect(await refusal(CI_TOKEN)).toBe('ok');
      forge.sandbox.state.clock.set(new Date('2025-06-22T00:00:00Z'));
      const expired = await refusal(CI_TOKEN);
      expect([expired instanceof UnauthorizedError, (expired as UnauthorizedError).body]).toEqual([
        true,
        { error: 'invalid_token', error_description: 'Token has expired.' },
      ]);

      // The bot's own token given an expiry through the control API: `self` reports it, and it ends then.
      const response = await fetch(`${forge.sandbox.url}/__sandbox/access-tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: ADMIN_TOKEN, expires_at: '2025-06-25' }),
      });
      expect([response.status, ((await response.json()) as { expires_at: string }).expires_at]).toEqual([
        200,
        '2025-06-25',
      ]);
      expect((await forge.client(ADMIN_TOKEN).personalAccessTokens.self()).expires_at).toBe('2025-06-25');
      forge.sandbox.state.clock.set(new Date('2025-06-25T00:00:01Z'));
      expect(await refusal(ADMIN_TOKEN)).toBeInstanceOf(UnauthorizedError);
    });

    it('revokes: the owner or an administrator only, and the token answers 401 from then on', async () => {
      await expect(forge.client(USER_TOKEN).personalAccessTokens.revoke(501)).rejects.toMatchObject({ status: 400 });
      await expect(forge.client(USER_TOKEN).personalAccessTokens.revoke(99_999)).rejects.toBeInstanceOf(NotFoundError);
      expect(await refusal(CI_TOKEN)).toBe('ok');
      await forge.client(MAINTAINER_TOKEN).personalAccessTokens.revoke(501);
      expect(await refusal(CI_TOKEN)).toBeInstanceOf(UnauthorizedError);
      await forge.client(ADMIN_TOKEN).personalAccessTokens.revoke(502);
      expect(tokens().tokens.get(502)?.revoked).toBe(true);
    });
  });

  describe('automatic reuse detection', () => {
    it('revokes the whole family when a rotated token is rotated again, and records it', async () => {
      const mia = forge.client(MAINTAINER_TOKEN);
      const second = await mia.personalAccessTokens.rotate(501, { expires_at: '2025-08-01' });
      const third = await mia.personalAccessTokens.rotate(second.id, { expires_at: '2025-08-01' });
      expect(revocations()).toEqual([]);

      // A retry (or a replica) rotating the original again: refused, and the newest of the family goes too.
      const again = await mia.personalAccessTokens.rotate(501).catch((e: unknown) => e);
      expect([again instanceof ValidationError, (again as ValidationError).body]).toEqual([
        true,
        { message: '400 Bad request - Token already revoked' },
      ]);
      expect(revocations()).toEqual([
        {
          time: expect.any(String) as string,
          cause: 'rotated_revoked_token',
          token_id: 501,
          method: 'POST',
          path: '/personal_access_tokens/501/rotate',
          revoked_ids: [third.id],
        },
      ]);
      expect(await refusal(third.token)).toBeInstanceOf(UnauthorizedError);
      expect(await refusal(MAINTAINER_TOKEN)).toBe('ok');
    });

    it('revokes the family when a rotated token authenticates a rotate request, as the forge does for self-rotation', async () => {
      const rotated = await forge.client(CI_TOKEN).personalAccessTokens.rotateSelf({ expires_at: '2025-08-01' });
      // Authenticating anything else with the old token is refused without harm.
      expect(await refusal(CI_TOKEN)).toBeInstanceOf(UnauthorizedError);
      expect(revocations()).toEqual([]);

      const replay = await forge
        .client(CI_TOKEN)
        .personalAccessTokens.rotateSelf()
        .catch((e: unknown) => e);
      expect(replay).toBeInstanceOf(UnauthorizedError);
      expect(revocations()).toMatchObject([
        {
          cause: 'authenticated_with_revoked_token',
          token_id: 501,
          path: '/personal_access_tokens/self/rotate',
          revoked_ids: [rotated.id],
        },
      ]);
      expect(await refusal(rotated.token)).toBeInstanceOf(UnauthorizedError);

      // By id, on a project token's rotate path, the same: the request's own token is what counts.
      const fresh = await forge.client(MAINTAINER_TOKEN).personalAccessTokens.rotate(502, { expires_at: '2025-08-01' });
      await expect(forge.client(SELF_ROTATE_TOKEN).projectAccessTokens.rotate('acme/api', 602)).rejects.toBeInstanceOf(
        UnauthorizedError,
      );
      expect(revocations().map((r) => [r.cause, r.token_id, r.path, r.revoked_ids])).toEqual([
        ['authenticated_with_revoked_token', 501, '/personal_access_tokens/self/rotate', [rotated.id]],
        ['authenticated_with_revoked_token', 502, '/projects/acme%2Fapi/access_tokens/602/rotate', [fresh.id]],
      ]);
      // The project's token was not touched: the request was refused before the forge looked at it.
      expect(tokens().tokens.get(602)?.revoked).toBe(false);
    });
  });

  describe('project and group access tokens', () => {
    it('lists, shows, creates, rotates and revokes a project’s tokens; the bot authenticates with its role', async () => {
      const mia = forge.client(MAINTAINER_TOKEN);
      const listed = await collect(mia.projectAccessTokens.all('acme/api'));
      expect(listed).toEqual([
        expect.objectContaining({ id: 602, name: 'deploy', access_level: 40, expires_at: '2025-07-02', active: true }),
      ]);
      expect(listed[0]).not.toHaveProperty('token');
      expect(await mia.projectAccessTokens.show(1, 602)).toMatchObject({ id: 602, access_level: 40 });
      await expect(mia.projectAccessTokens.show(1, 999)).rejects.toMatchObject({
        status: 404,
        body: { message: '404 Could not find project access token with token_id: 999 Not Found' },
      });

      const created = await mia.projectAccessTokens.create('acme/api', {
        name: 'reader',
        scopes: ['read_api'],
        access_level: 20,
        expires_at: '2025-12-01',
      });
      expect(created).toMatchObject({
        name: 'reader',
        scopes: ['read_api'],
        access_level: 20,
        expires_at: '2025-12-01',
        active: true,
      });
      expect(created.token).toMatch(/^glpat-/);
      const bot = forge.client(created.token);
      expect(await bot.users.current()).toMatchObject({
        username: expect.stringMatching(/^project_1_bot_[0-9a-f]{32}$/) as string,
        name: 'reader',
      });
      expect((await bot.projects.show('acme/api')).id).toBe(1);
      await expect(bot.projects.show('acme/web')).rejects.toBeInstanceOf(NotFoundError);
      // read_api: reads only.
      await expect(bot.projectVariables.create(1, { key: 'X', value: 'y' })).rejects.toMatchObject({
        status: 403,
        body: { error: 'insufficient_scope', scope: 'api' },
      });
      // Without expires_at the forge gives a year, its cap.
      expect((await mia.projectAccessTokens.create(1, { name: 'yearly', scopes: ['api'] })).expires_at).toBe(YEAR_CAP);

      const rotated = await mia.projectAccessTokens.rotate('acme/api', created.id);
      expect(rotated).toMatchObject({
        name: 'reader',
        access_level: 20,
        user_id: created.user_id,
        expires_at: WEEK_LATER,
      });
      expect(rotated.id).not.toBe(created.id);
      expect(await refusal(created.token)).toBeInstanceOf(UnauthorizedError);
      expect((await forge.client(rotated.token).users.current()).id).toBe(created.user_id);

      await mia.projectAccessTokens.revoke('acme/api', rotated.id);
      expect(await refusal(rotated.token)).toBeInstanceOf(UnauthorizedError);
      expect((await mia.projectAccessTokens.show(1, rotated.id)).revoked).toBe(true);
      expect((await collect(mia.projectAccessTokens.all(1, { state: 'active' }))).map((t) => t.name)).toEqual([
        'deploy',
        'yearly',
      ]);
      expect(revocations()).toEqual([]);
    });

    it('keeps a project’s tokens to its maintainers: 401 for a developer, 404 for an outsider', async () => {
      const alice = forge.client(USER_TOKEN);
      await expect(collect(alice.projectAccessTokens.all('acme/api'))).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(alice.projectAccessTokens.create(1, { name: 'x', scopes: ['api'] })).rejects.toBeInstanceOf(
        UnauthorizedError,
      );
      await expect(alice.projectAccessTokens.rotate(1, 602)).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(alice.projectAccessTokens.revoke(1, 602)).rejects.toMatchObject({
        status: 400,
        body: { message: '400 Bad request - Alice Developer cannot delete deploy' },
      });
      await expect(forge.client(OUTSIDER_TOKEN).projectAccessTokens.show(1, 602)).rejects.toBeInstanceOf(NotFoundError);
      // A maintainer may not hand out more than they hold: an owner's token is the owner's (or an administrator's) to rotate.
      const owners = await forge
        .client(ADMIN_TOKEN)
        .projectAccessTokens.create(1, { name: 'owner-bot', scopes: ['api'], access_level: 50 });
      await expect(forge.client(MAINTAINER_TOKEN).projectAccessTokens.rotate(1, owners.id)).rejects.toMatchObject({
        status: 400,
        body: { message: '400 Bad request - Not eligible to rotate tokens with permissions not held by the user' },
      });
      await expect(
        forge.client(MAINTAINER_TOKEN).projectAccessTokens.create(1, { name: 'x', scopes: ['api'], access_level: 50 }),
      ).rejects.toBeInstanceOf(ValidationError);
      await expect(
        forge.client(ADMIN_TOKEN).projectAccessTokens.create(1, { name: 'x', scopes: ['sudo' as 'api'] }),
      ).rejects.toMatchObject({
        body: { error: 'scopes does not have a valid value' },
      });
      expect(tokens().tokens.get(602)?.revoked).toBe(false);
    });

    it('keeps a group’s tokens to its owners; a group bot reads the group’s projects with its role', async () => {
      await expect(collect(forge.client(MAINTAINER_TOKEN).groupAccessTokens.all('acme'))).rejects.toBeInstanceOf(
        UnauthorizedError,
      );
      const root = forge.client(ADMIN_TOKEN);
      expect(await collect(root.groupAccessTokens.all('acme'))).toEqual([
        expect.objectContaining({
          id: 601,
          name: 'group-ci',
          scopes: ['read_api'],
          access_level: 30,
          expires_at: '2025-07-12',
        }),
      ]);
      const bot = forge.client(GROUP_BOT_TOKEN);
      expect((await bot.projects.show('acme/web')).id).toBe(2);
      const rotated = await root.groupAccessTokens.rotate('acme', 601, { expires_at: '2025-12-31' });
      expect(rotated).toMatchObject({ name: 'group-ci', access_level: 30, expires_at: '2025-12-31' });
      expect((await forge.client(rotated.token).projects.show('acme/web')).id).toBe(2);
      const created = await root.groupAccessTokens.create('acme', {
        name: 'second',
        scopes: ['api'],
        access_level: 40,
      });
      expect(await root.groupAccessTokens.show(10, created.id)).toMatchObject({ access_level: 40, revoked: false });
      await root.groupAccessTokens.revoke(10, created.id);
      expect(await refusal(created.token)).toBeInstanceOf(UnauthorizedError);
    });
  });

  it('never lets a token value reach the request log or the state dump', async () => {
    const client: GitlabClient = forge.client(MAINTAINER_TOKEN);
    const rotated = await client.personalAccessTokens.rotate(501);
    const created = await client.projectAccessTokens.create(1, { name: 'n', scopes: ['api'] });
    const deploy = await client.projectDeployTokens.create(1, { name: 'd', scopes: ['read_registry'] });
    const dump = JSON.stringify(forge.sandbox.state.dump());
    const log = JSON.stringify(forge.sandbox.state.requestLog);
    for (const value of [rotated.token, created.token, deploy.token, CI_TOKEN, MAINTAINER_TOKEN, PROJECT_BOT_TOKEN]) {
      expect(dump).not.toContain(value);
      expect(log).not.toContain(value);
    }
    expect(forge.sandbox.state.dump()).toMatchObject({
      access_tokens: expect.arrayContaining([
        expect.objectContaining({ id: 602, resource: { source: 'project', source_id: 1 } }),
      ]),
    });
  });
});

/**
 * The endpoints of GitLab's personal, project and group access token and deploy token APIs the client covers: each has
 * its client method and sandbox route, and docs/api-client.md shows this table.
 */
const TOKEN_ENDPOINTS = [
  { method: 'GET', path: '/personal_access_tokens', client: 'personalAccessTokens.all' },
  { method: 'GET', path: '/personal_access_tokens/self', client: 'personalAccessTokens.self' },
  { method: 'POST', path: '/personal_access_tokens/self/rotate', client: 'personalAccessTokens.rotateSelf' },
  { method: 'GET', path: '/personal_access_tokens/:id', client: 'personalAccessTokens.show' },
  { method: 'DELETE', path: '/personal_access_tokens/:id', client: 'personalAccessTokens.revoke' },
  { method: 'POST', path: '/personal_access_tokens/:id/rotate', client: 'personalAccessTokens.rotate' },
  { method: 'GET', path: '/projects/:id/access_tokens', client: 'projectAccessTokens.all' },
  { method: 'POST', path: '/projects/:id/access_tokens', client: 'projectAccessTokens.create' },
  { method: 'GET', path: '/projects/:id/access_tokens/:token_id', client: 'projectAccessTokens.show' },
  { method: 'DELETE', path: '/projects/:id/access_tokens/:token_id', client: 'projectAccessTokens.revoke' },
  { method: 'POST', path: '/projects/:id/access_tokens/:token_id/rotate', client: 'projectAccessTokens.rotate' },
  { method: 'GET', path: '/groups/:id/access_tokens', client: 'groupAccessTokens.all' },
  { method: 'POST', path: '/groups/:id/access_tokens', client: 'groupAccessTokens.create' },
  { method: 'GET', path: '/groups/:id/access_tokens/:token_id', client: 'groupAccessTokens.show' },
  { method: 'DELETE', path: '/groups/:id/access_tokens/:token_id', client: 'groupAccessTokens.revoke' },
  { method: 'POST', path: '/groups/:id/access_tokens/:token_id/rotate', client: 'groupAccessTokens.rotate' },
  { method: 'GET', path: '/projects/:id/deploy_tokens', client: 'projectDeployTokens.all' },
  { method: 'POST', path: '/projects/:id/deploy_tokens', client: 'projectDeployTokens.create' },
  { method: 'GET', path: '/projects/:id/deploy_tokens/:token_id', client: 'projectDeployTokens.show' },
  { method: 'DELETE', path: '/projects/:id/deploy_tokens/:token_id', client: 'projectDeployTokens.remove' },
  { method: 'GET', path: '/groups/:id/deploy_tokens', client: 'groupDeployTokens.all' },
  { method: 'POST', path: '/groups/:id/deploy_tokens', client: 'groupDeployTokens.create' },
  { method: 'GET', path: '/groups/:id/deploy_tokens/:token_id', client: 'groupDeployTokens.show' },
  { method: 'DELETE', path: '/groups/:id/deploy_tokens/:token_id', client: 'groupDeployTokens.remove' },
] as const;

describeDocumentedEndpoints('the access and deploy token endpoints from GitLab’s public API docs', TOKEN_ENDPOINTS);
