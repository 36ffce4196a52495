import { Gitlab } from '@gitbeaker/rest';
import { startSandbox, type RunningSandbox } from '../../src/sandbox';
import { apiClient, type SandboxResponse } from '../support/sandbox-http';
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
 * A person moving and renaming projects through the forge's own API (GitLab's Projects API: "Transfer a project to
 * a new namespace", "Edit a project"): the project keeps its id and what it holds, its old path redirects to it,
 * and the forge's refusals come with its words. Checked over HTTP, by the state the sandbox holds, and through a
 * peer client (@gitbeaker/rest).
 */

const OWNER_TOKEN = 'glpat-owen';
const API = 1;
const WEB = 2;
const TAGGED = 3;
const OTHER_API = 4;

interface ProjectView {
  id: number;
  name: string;
  path: string;
  path_with_namespace: string;
  visibility: string;
  namespace: { id: number; full_path: string; kind: string };
}

const refused = (reason: string): { status: number; json: unknown } => ({
  status: 400,
  json: { message: `Failed to transfer project {:new_namespace=>[${JSON.stringify(reason)}]}` },
});

describe('sandbox forge: moving and renaming projects through the API', () => {
  let sandbox: RunningSandbox;
  const as = (token: string) => apiClient(sandbox.url, token);
  const owen = () => as(OWNER_TOKEN);
  const project = (response: SandboxResponse): ProjectView => response.json as ProjectView;
  const transfer = (id: number | string, namespace: string | number, token = OWNER_TOKEN) =>
    as(token)(`/projects/${id}/transfer`, { method: 'PUT', body: { namespace } });
  const edit = (id: number | string, body: Record<string, unknown>, token = OWNER_TOKEN) =>
    as(token)(`/projects/${id}`, { method: 'PUT', body });

  beforeEach(async () => {
    const world = baseWorld();
    sandbox = await startSandbox({
      world: {
        ...world,
        users: [...(world.users ?? []), { id: 5, username: 'owen', name: 'Owen Owner', tokens: [OWNER_TOKEN] }],
        groups: [
          acmeGroup({ members: [...(acmeGroup().members ?? []), { user: 'owen', access_level: 'owner' }] }),
          { id: 11, path: 'sub', parent: 'acme', name: 'Sub' },
          { id: 20, path: 'other', name: 'Other', members: [{ user: 'owen', access_level: 'maintainer' }] },
          { id: 21, path: 'closed', name: 'Closed', members: [{ user: 'owen', access_level: 'developer' }] },
          { id: 22, path: 'hidden', name: 'Hidden' },
        ],
        projects: [
          apiProject({
            visibility: 'internal',
            members: [{ user: 'olaf', access_level: 'reporter' }],
            protected_branches: [{ name: 'main' }],
            pipelines: [{ id: 100, jobs: [{ id: 500, name: 'test', status: 'failed', log: 'boom\n' }] }],
          }),
          webProject(),
          {
            id: TAGGED,
            path: 'tagged',
            namespace: 'acme',
            registry: [{ id: 7, tags: [{ name: 'v1', created_at: 'now-1d' }] }],
          },
          { id: OTHER_API, path: 'api', name: 'Other API', namespace: 'other' },
        ],
      },
    });
  });
  afterEach(() => sandbox.close());

  describe('PUT /projects/:id/transfer', () => {
    it('keeps the id and everything the project holds; the new path reads it, and the old one redirects to it', async () => {
      const moved = await transfer('acme%2Fapi', 'acme/sub');
      expect(moved.status).toBe(200);
      expect(project(moved)).toMatchObject({
        id: API,
        path_with_namespace: 'acme/sub/api',
        namespace: { id: 11, full_path: 'acme/sub', kind: 'group' },
      });
      expect(sandbox.state.projects.get(API)).toMatchObject({ namespace_id: 11, path: 'api' });

      for (const ref of [String(API), 'acme%2Fsub%2Fapi', 'acme%2Fapi']) {
        expect(project(await owen()(`/projects/${ref}`))).toMatchObject({
          id: API,
          path_with_namespace: 'acme/sub/api',
        });
      }
      const root = as(ADMIN_TOKEN);
      expect((await root('/projects/acme%2Fsub%2Fapi/protected_branches')).json).toMatchObject([{ name: 'main' }]);
      const job = (await root('/projects/acme%2Fapi/jobs/500')).json;
      expect(job).toMatchObject({ id: 500, web_url: expect.stringContaining('/acme/sub/api/-/jobs/500') as string });
      // A direct member keeps the membership; the group's members keep theirs, inherited from acme above sub.
      expect((await as(OUTSIDER_TOKEN)('/projects/acme%2Fsub%2Fapi')).status).toBe(200);
      expect((await as(USER_TOKEN)('/projects/acme%2Fsub%2Fapi/protected_branches')).status).toBe(200);
      expect((await root('/groups/acme%2Fsub/projects')).json).toMatchObject([{ id: API }]);
    });

    it('hands the old path over to a project that takes it later, as the forge drops a conflicting redirect', async () => {
      expect((await transfer(API, 'acme/sub')).status).toBe(200);
      expect(project(await edit(WEB, { path: 'api' }))).toMatchObject({ id: WEB, path_with_namespace: 'acme/api' });
      expect(project(await owen()('/projects/acme%2Fapi'))).toMatchObject({ id: WEB });
      // acme/web was web's path: it now redirects to web.
      expect(project(await owen()('/projects/acme%2Fweb'))).toMatchObject({ id: WEB });
      expect(sandbox.state.namespaces.projectRedirects).toEqual(new Map([['acme/web', WEB]]));
    });

    it('lowers the visibility to a more private target group, and moves image tags within their top-level namespace only', async () => {
      expect(project(await transfer(API, 'acme/sub'))).toMatchObject({ id: API, visibility: 'private' });
      expect(await transfer(TAGGED, 'other')).toMatchObject(
        refused(
          'Project cannot be transferred to a different top-level namespace, because image tags are present in its container registry',
        ),
      );
      expect(project(await transfer(TAGGED, 'acme/sub'))).toMatchObject({
        id: TAGGED,
        path_with_namespace: 'acme/sub/tagged',
      });
      expect((await owen()(`/projects/${TAGGED}/registry/repositories`)).json).toMatchObject([
        { id: 7, path: 'acme/sub/tagged', location: expect.stringMatching(/\/acme\/sub\/tagged$/) as string },
      ]);
    });

    it('takes a personal namespace: a user the administrator moves a project to owns it, and stays its owner when it moves on', async () => {
      const toOlaf = await transfer(WEB, 'olaf', ADMIN_TOKEN);
      expect(project(toOlaf)).toMatchObject({
        id: WEB,
        path_with_namespace: 'olaf/web',
        namespace: { kind: 'user', full_path: 'olaf' },
      });
      const olaf = as(OUTSIDER_TOKEN);
      expect((await olaf('/projects/olaf%2Fweb/services')).status).toBe(200);

      // Out of his namespace, olaf keeps the owner membership the forge gave him, so he may move it home again.
      expect(project(await transfer('olaf%2Fweb', 'other', ADMIN_TOKEN))).toMatchObject({
        path_with_namespace: 'other/web',
      });
      expect(sandbox.state.member('project', WEB, 4)?.access_level).toBe(50);
      expect(project(await transfer('other%2Fweb', 'olaf', OUTSIDER_TOKEN))).toMatchObject({
        id: WEB,
        path_with_namespace: 'olaf/web',
      });
    });

    it('answers the forge’s refusals and changes nothing', async () => {
      const before = JSON.stringify([...sandbox.state.projects.values()]);
      expect(await transfer(API, 'other')).toMatchObject(
        refused('Project with same name or path in target namespace already exists'),
      );
      expect(await transfer(WEB, 'acme')).toMatchObject(refused('Project is already in this namespace.'));
      expect(await transfer(WEB, 'closed')).toMatchObject(
        refused("You don't have permission to transfer projects into that namespace."),
      );
      for (const namespace of ['hidden', 'nowhere', 'mia', 999]) {
        expect(await transfer(WEB, namespace)).toMatchObject({
          status: 404,
          json: { message: '404 Namespace Not Found' },
        });
      }
      const missing = await owen()(`/projects/${WEB}/transfer`, { method: 'PUT', body: {} });
      expect(missing).toMatchObject({ status: 400, json: { error: 'namespace is missing' } });
      // change_namespace is the owner's: a maintainer or developer of the project is refused, an outsider does not see it.
      expect(await transfer(WEB, 'acme/sub', MAINTAINER_TOKEN)).toMatchObject({
        status: 403,
        json: { message: '403 Forbidden' },
      });
      expect(await transfer(WEB, 'acme/sub', USER_TOKEN)).toMatchObject({ status: 403 });
      expect(await transfer(WEB, 'acme/sub', OUTSIDER_TOKEN)).toMatchObject({
        status: 404,
        json: { message: '404 Project Not Found' },
      });
      expect(JSON.stringify([...sandbox.state.projects.values()])).toBe(before);
      expect(sandbox.state.namespaces.projectRedirects.size).toBe(0);
    });
  });

  describe('PUT /projects/:id', () => {
    it('renames a project keeping its id; the old path redirects to it', async () => {
      const renamed = await edit('acme%2Fapi', {
        name: 'API v2',
        path: 'api-v2',
        description: 'the second',
        request_access_enabled: false,
      });
      expect(renamed.status).toBe(200);
      expect(project(renamed)).toMatchObject({
        id: API,
        name: 'API v2',
        path_with_namespace: 'acme/api-v2',
        description: 'the second',
      });
      expect(sandbox.state.projects.get(API)).toMatchObject({
        name: 'API v2',
        path: 'api-v2',
        request_access_enabled: false,
      });
      expect(project(await owen()('/projects/acme%2Fapi'))).toMatchObject({
        id: API,
        path_with_namespace: 'acme/api-v2',
      });
      expect(project(await owen()('/projects/acme%2Fapi-v2'))).toMatchObject({ id: API });
    });

    it('keeps the id across a rename and a transfer, whichever path the next request names', async () => {
      await edit(API, { path: 'core' });
      await transfer('acme%2Fcore', 'acme/sub');
      await edit('acme%2Fsub%2Fcore', { path: 'engine' });
      for (const ref of ['acme%2Fapi', 'acme%2Fcore', 'acme%2Fsub%2Fcore', 'acme%2Fsub%2Fengine', String(API)]) {
        expect([ref, project(await owen()(`/projects/${ref}`)).id]).toEqual([ref, API]);
      }
      expect(sandbox.state.projectFullPath(sandbox.state.projects.get(API)!)).toBe('acme/sub/engine');
    });

    it('refuses a taken name or path, a bad one, none at all, and a name from a maintainer', async () => {
      expect(await edit(API, { path: 'web' })).toMatchObject({
        status: 400,
        json: { message: { path: ['has already been taken'] } },
      });
      expect(await edit(API, { path: 'SUB' })).toMatchObject({
        status: 400,
        json: { message: { path: ['has already been taken'] } },
      });
      expect(await edit(API, { name: 'Web' })).toMatchObject({
        status: 400,
        json: { message: { name: ['has already been taken'] } },
      });
      expect(await edit(API, { path: '-api.git' })).toMatchObject({
        status: 400,
        json: {
          message: {
            path: [
              "can contain only letters, digits, '_', '-' and '.'. Cannot start with '-', end in '.git' or end in '.atom'",
            ],
          },
        },
      });
      expect(await edit(API, { name: '' })).toMatchObject({
        status: 400,
        json: { message: { name: ["can't be blank"] } },
      });
      expect(await edit(API, { visibility: 'public' })).toMatchObject({
        status: 400,
        json: {
          error: 'name, path, description, request_access_enabled are missing, at least one parameter must be provided',
        },
      });
      // A maintainer edits a project (admin_project) but renaming is the owner's (rename_project).
      expect(await edit(API, { name: 'Mine' }, MAINTAINER_TOKEN)).toMatchObject({
        status: 403,
        json: { message: '403 Forbidden' },
      });
      expect(project(await edit(API, { path: 'api-next' }, MAINTAINER_TOKEN))).toMatchObject({
        id: API,
        path: 'api-next',
        name: 'API',
      });
      expect(await edit(API, { description: 'x' }, USER_TOKEN)).toMatchObject({ status: 403 });
      expect(await edit(WEB, { description: 'x' }, OUTSIDER_TOKEN)).toMatchObject({
        status: 404,
        json: { message: '404 Project Not Found' },
      });
      expect(sandbox.state.projects.get(API)).toMatchObject({ name: 'API', path: 'api-next' });
    });
  });

  it('answers a peer client (@gitbeaker/rest): Projects.transfer and Projects.edit', async () => {
    const api = new Gitlab({ host: sandbox.url, token: OWNER_TOKEN });
    const moved = await api.Projects.transfer(API, 'acme/sub');
    expect(moved).toMatchObject({ id: API, path_with_namespace: 'acme/sub/api' });
    const renamed = await api.Projects.edit(API, { path: 'api-2' });
    expect(renamed).toMatchObject({ id: API, path_with_namespace: 'acme/sub/api-2' });
    expect(await api.Projects.show('acme/api')).toMatchObject({ id: API });
    const error = (await api.Projects.transfer(WEB, 'closed').catch((e: unknown) => e)) as {
      cause?: { response?: Response };
    };
    expect(error.cause?.response?.status).toBe(400);
  });
});
