import { Gitlab } from '@gitbeaker/rest';
import { startSandbox, type RunningSandbox } from '../../src/sandbox';
import { apiClient, call } from '../support/sandbox-http';
import {
  acmeGroup,
  ADMIN_TOKEN,
  apiProject,
  baseWorld,
  MAINTAINER_TOKEN,
  OUTSIDER_TOKEN,
  USER_TOKEN,
  webProject,
} from '../support/world-builders';

/**
 * A person changing someone's rights through the forge's own API, and the next request of that someone's token
 * meeting the change: a membership edited (GitLab's members API, "Edit a member of a group or project"), the
 * administrator flag removed (`PUT /users/:id`), the account blocked and unblocked (Users API). Checked over HTTP,
 * by the state the sandbox holds, and through a peer client (@gitbeaker/rest).
 */

const OWNER_TOKEN = 'glpat-owen';
const BOT_TOKEN = 'glpat-bot';
const WARDEN_TOKEN = 'glpat-warden';
const ALICE = 3;
const OWEN = 5;
const BOT = 6;
const WARDEN = 7;
const API = 1;
const WEB = 2;
const RUNNING_JOB = 900;

describe('sandbox forge: people changing rights through the API', () => {
  let sandbox: RunningSandbox;
  const as = (token: string) => apiClient(sandbox.url, token);
  const editMember = (source: string, userId: number, body: Record<string, unknown>, token = OWNER_TOKEN) =>
    as(token)(`/${source}/members/${userId}`, { method: 'PUT', body });
  const status = async (token: string, path: string): Promise<number> => (await as(token)(path)).status;

  beforeEach(async () => {
    const world = baseWorld();
    sandbox = await startSandbox({
      world: {
        ...world,
        users: [
          ...(world.users ?? []),
          { id: OWEN, username: 'owen', name: 'Owen Owner', tokens: [OWNER_TOKEN] },
          { id: BOT, username: 'bot', name: 'The Bot', tokens: [BOT_TOKEN] },
          { id: WARDEN, username: 'warden', name: 'Warden', admin: true, tokens: [WARDEN_TOKEN] },
        ],
        groups: [acmeGroup({ members: [...(acmeGroup().members ?? []), { user: 'owen', access_level: 'owner' }] })],
        projects: [
          apiProject({
            members: [{ user: 'alice', access_level: 'maintainer' }],
            pipelines: [{ id: 90, jobs: [{ id: RUNNING_JOB, name: 'deploy', status: 'pending', user: 'bot' }] }],
          }),
          webProject({ members: [{ user: 'bot', access_level: 'maintainer' }] }),
        ],
      },
    });
  });
  afterEach(() => sandbox.close());

  describe('editing a membership', () => {
    it('a lowered project membership takes effect on the next request, and a raised one too', async () => {
      expect(await status(BOT_TOKEN, `/projects/${WEB}/services`)).toBe(200);
      const lowered = await editMember(`projects/${WEB}`, BOT, { access_level: 30 }, MAINTAINER_TOKEN);
      expect(lowered).toMatchObject({
        status: 200,
        json: { id: BOT, username: 'bot', access_level: 30, expires_at: null, membership_state: 'active' },
      });
      expect(sandbox.state.member('project', WEB, BOT)?.access_level).toBe(30);
      expect(await as(BOT_TOKEN)(`/projects/${WEB}/services`)).toMatchObject({
        status: 403,
        json: { message: '403 Forbidden' },
      });
      expect(await status(BOT_TOKEN, `/projects/${WEB}/protected_branches`)).toBe(200);

      await editMember(`projects/${WEB}`, BOT, { access_level: 40 }, MAINTAINER_TOKEN);
      expect(await status(BOT_TOKEN, `/projects/${WEB}/services`)).toBe(200);
    });

    it('a lowered group membership reaches the group’s projects on the next request', async () => {
      expect(await status(USER_TOKEN, `/projects/${WEB}/protected_branches`)).toBe(200);
      expect(
        (await editMember('groups/acme', ALICE, { access_level: 20, expires_at: '2025-12-31' })).json,
      ).toMatchObject({
        id: ALICE,
        access_level: 20,
        expires_at: '2025-12-31',
      });
      expect(await status(USER_TOKEN, `/projects/${WEB}/protected_branches`)).toBe(403);
      // Her own membership of acme/api (maintainer) is untouched.
      expect(await status(USER_TOKEN, `/projects/${API}/services`)).toBe(200);
    });

    it('answers the forge’s refusals and changes nothing', async () => {
      const before = JSON.stringify(sandbox.state.members);
      // Only direct members are edited (`source.members.find_by!`): alice is acme's, not acme/web's.
      expect(await editMember(`projects/${WEB}`, ALICE, { access_level: 30 })).toMatchObject({
        status: 404,
        json: { message: '404 Not found' },
      });
      expect(await editMember(`projects/${WEB}`, 999, { access_level: 30 })).toMatchObject({ status: 404 });
      // A project member may not go below what a group above gives them.
      expect(await editMember(`projects/${API}`, ALICE, { access_level: 20 })).toMatchObject({
        status: 400,
        json: {
          message: {
            access_level: ['should be greater than or equal to Developer inherited membership from group Acme'],
          },
        },
      });
      expect(await editMember(`projects/${WEB}`, BOT, { access_level: 60 })).toMatchObject({
        status: 400,
        json: { message: { access_level: ['is not included in the list'] } },
      });
      expect(await editMember(`projects/${WEB}`, BOT, {})).toMatchObject({
        status: 400,
        json: { error: 'access_level is missing' },
      });
      expect(await editMember(`projects/${WEB}`, BOT, { access_level: 30, expires_at: 'soon' })).toMatchObject({
        status: 400,
        json: { error: 'expires_at is invalid' },
      });
      expect(await editMember(`projects/${WEB}`, BOT, { access_level: 30, expires_at: '2025-06-01' })).toMatchObject({
        status: 400,
        json: { message: { expires_at: ['cannot be a date in the past'] } },
      });
      // Who may: a group's owners, a project's maintainers, and only an owner makes or unmakes an owner.
      expect(await editMember('groups/acme', ALICE, { access_level: 20 }, MAINTAINER_TOKEN)).toMatchObject({
        status: 403,
        json: { message: '403 Forbidden' },
      });
      expect(await editMember(`projects/${WEB}`, BOT, { access_level: 50 }, MAINTAINER_TOKEN)).toMatchObject({
        status: 403,
      });
      expect(await editMember(`projects/${WEB}`, BOT, { access_level: 30 }, USER_TOKEN)).toMatchObject({ status: 403 });
      const notFound = (what: string) => ({ status: 404, json: { message: `404 ${what} Not Found` } });
      expect(await editMember(`projects/${WEB}`, BOT, { access_level: 30 }, OUTSIDER_TOKEN)).toMatchObject(
        notFound('Project'),
      );
      expect(await editMember('groups/acme', ALICE, { access_level: 30 }, OUTSIDER_TOKEN)).toMatchObject(
        notFound('Group'),
      );
      // A group keeps an owner: its last one is not demoted.
      expect(await editMember('groups/acme', OWEN, { access_level: 40 })).toMatchObject({ status: 403 });
      expect(JSON.stringify(sandbox.state.members)).toBe(before);

      // With a second owner, the first may step down.
      expect((await editMember('groups/acme', 2, { access_level: 50 })).status).toBe(200);
      expect((await editMember('groups/acme', OWEN, { access_level: 40 })).json).toMatchObject({
        id: OWEN,
        access_level: 40,
      });
    });
  });

  it('a removed administrator flag takes effect on the next request, and a restored one too', async () => {
    const warden = as(WARDEN_TOKEN);
    expect(await status(WARDEN_TOKEN, `/projects/${API}/services`)).toBe(200);
    expect((await warden('/users/3')).json).toHaveProperty('email', 'alice@acme.test');

    const demoted = await as(ADMIN_TOKEN)(`/users/${WARDEN}`, { method: 'PUT', body: { admin: false } });
    expect(demoted.json).toMatchObject({ id: WARDEN, is_admin: false });
    // A private project he is no member of is gone from his sight, and users show him their public profile only.
    expect(await warden(`/projects/${API}/services`)).toMatchObject({
      status: 404,
      json: { message: '404 Project Not Found' },
    });
    expect((await warden('/users/3')).json).not.toHaveProperty('email');
    expect(await warden('/users/3/block', { method: 'POST' })).toMatchObject({ status: 403 });

    await as(ADMIN_TOKEN)(`/users/${WARDEN}`, { method: 'PUT', body: { admin: true } });
    expect(await status(WARDEN_TOKEN, `/projects/${API}/services`)).toBe(200);
  });

  describe('blocking a user', () => {
    it('refuses the user’s tokens from the next request on, with the forge’s reason, until an unblock', async () => {
      expect(await status(BOT_TOKEN, '/user')).toBe(200);
      const root = as(ADMIN_TOKEN);
      expect(await root(`/users/${BOT}/block`, { method: 'POST' })).toMatchObject({ status: 201, text: 'true' });
      expect(sandbox.state.users.get(BOT)?.state).toBe('blocked');
      for (const path of ['/user', `/projects/${WEB}`]) {
        expect(await as(BOT_TOKEN)(path)).toMatchObject({
          status: 403,
          json: { message: '403 Forbidden - Your account has been blocked.' },
        });
      }
      expect((await root(`/users/${BOT}`)).json).toMatchObject({ state: 'blocked' });
      expect(((await root('/users?blocked=true')).json as { id: number }[]).map((u) => u.id)).toEqual([BOT]);
      // Blocking again changes nothing: the forge leaves early, with a null body.
      expect(await root(`/users/${BOT}/block`, { method: 'POST' })).toMatchObject({ status: 201, text: 'null' });

      expect(await root(`/users/${BOT}/unblock`, { method: 'POST' })).toMatchObject({ status: 201, text: 'true' });
      expect(await status(BOT_TOKEN, '/user')).toBe(200);
      expect(await root(`/users/${BOT}/unblock`, { method: 'POST' })).toMatchObject({ status: 201, text: 'false' });
    });

    it('refuses the job token of a blocked user’s running job too', async () => {
      expect(
        (await call(sandbox.url, `/__sandbox/jobs/${RUNNING_JOB}`, { method: 'POST', body: { status: 'running' } }))
          .status,
      ).toBe(200);
      const token = sandbox.state.jobs.get(RUNNING_JOB)?.token ?? '';
      expect((await call(sandbox.url, '/api/v4/job', { headers: { 'JOB-TOKEN': token } })).json).toMatchObject({
        id: RUNNING_JOB,
      });
      await as(ADMIN_TOKEN)(`/users/${BOT}/block`, { method: 'POST' });
      expect(await call(sandbox.url, '/api/v4/job', { headers: { 'JOB-TOKEN': token } })).toMatchObject({
        status: 403,
        json: { message: '403 Forbidden - Your account has been blocked.' },
      });
    });

    it('is the administrators’ alone, never of themselves, and of a user who exists', async () => {
      for (const path of [`/users/${BOT}/block`, `/users/${BOT}/unblock`]) {
        expect(await as(MAINTAINER_TOKEN)(path, { method: 'POST' })).toMatchObject({
          status: 403,
          json: { message: '403 Forbidden' },
        });
      }
      expect(await as(ADMIN_TOKEN)('/users/1/block', { method: 'POST' })).toMatchObject({
        status: 403,
        json: { message: '403 Forbidden - The API initiating user cannot be blocked by the API' },
      });
      expect(await as(ADMIN_TOKEN)('/users/999/block', { method: 'POST' })).toMatchObject({
        status: 404,
        json: { message: '404 User Not Found' },
      });
      expect(await as(ADMIN_TOKEN)('/users/999/unblock', { method: 'POST' })).toMatchObject({ status: 404 });
      expect([...sandbox.state.users.values()].filter((u) => u.state === 'blocked')).toEqual([]);
    });
  });

  it('answers a peer client (@gitbeaker/rest): Users.block, Users.unblock and ProjectMembers.edit', async () => {
    const api = new Gitlab({ host: sandbox.url, token: ADMIN_TOKEN });
    expect(await api.Users.block(BOT)).toBe(true);
    expect(await status(BOT_TOKEN, '/user')).toBe(403);
    expect(await api.Users.unblock(BOT)).toBe(true);
    expect(await api.ProjectMembers.edit(WEB, BOT, 20)).toMatchObject({ id: BOT, access_level: 20 });
    expect(await status(BOT_TOKEN, `/projects/${WEB}/protected_branches`)).toBe(403);
  });
});
