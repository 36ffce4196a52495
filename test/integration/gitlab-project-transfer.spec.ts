import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ForbiddenError,
  type GitlabClient,
  NotFoundError,
  type ProjectExportStatus,
  type ProjectImportStatus,
  RateLimitedError,
  ValidationError,
} from '../../src/gitlab';
import { type World } from '../../src/sandbox';
import { archivedAttributes, archivedRelations } from '../../src/sandbox/project-archive';
import { describeDocumentedEndpoints } from '../support/beyond-spec';
import { collect, useSandboxClients } from '../support/sandbox-clients';
import {
  acmeGroup,
  apiProject,
  baseWorld,
  MAINTAINER_TOKEN,
  OUTSIDER_TOKEN,
  USER_TOKEN,
  webProject,
} from '../support/world-builders';

/**
 * Project export and import (GitLab's "Project import and export API", beyond the forge's API specification) through
 * the client against the sandbox over real HTTP: the export's lifecycle, the archive on disk, an import restoring the
 * same records elsewhere, the forge's per-user limits, a bad archive, a taken path and `overwrite`.
 */

const API = 1;
const WEB = 2;
const TOO_MANY = { message: { error: 'This endpoint has been requested too many times. Try again later.' } };

/**
 * acme/api (1) with members, CI (a parent pipeline with a bridge to its child), registry, protected branches, issues,
 * merge requests and a webhook; acme/web (2) plain; group `restore` where mia may create projects.
 */
function world(): World {
  return baseWorld({
    users: [
      ...(baseWorld().users ?? []),
      { id: 5, username: 'rita', name: 'Rita Reporter', email: 'rita@acme.test', tokens: ['glpat-sandbox-rita-token'] },
    ],
    groups: [
      acmeGroup(),
      { id: 12, path: 'restore', name: 'Restore', members: [{ user: 'mia', access_level: 'maintainer' }] },
    ],
    projects: [
      apiProject({
        description: 'The API',
        default_branch: 'trunk',
        members: [{ user: 'rita', access_level: 'reporter' }],
        pipelines: [
          {
            id: 100,
            jobs: [
              {
                id: 1000,
                name: 'build',
                stage: 'build',
                status: 'success',
                log: 'built\n',
                artifacts: [{ file_type: 'archive', size: 10, filename: 'a.zip' }],
              },
              {
                id: 1001,
                name: 'test',
                stage: 'test',
                status: 'failed',
                log: 'connection reset by peer\n',
                token: 'job-token-1001',
              },
            ],
            bridges: [{ id: 1002, name: 'deploy', downstream_pipeline: 101 }],
          },
          { id: 101, parent_pipeline: 100, jobs: [{ id: 1003, name: 'child', status: 'success', user: 'alice' }] },
        ],
        registry: [{ name: 'app', tags: [{ name: 'latest' }] }],
        protected_branches: [
          {
            name: 'trunk',
            push_access_level: 'no_access',
            merge_access_level: 'maintainer',
            allowed_to_merge: [{ user: 'alice' }],
          },
          { name: 'release/*', allow_force_push: true },
        ],
        issues: [
          {
            iid: 1,
            title: 'Flaky test',
            label_events: [{ user: 'mia', action: 'add', label: { name: 'bug', color: '#d9534f' } }],
            weight_events: [{ user: 'mia', weight: 3 }],
          },
        ],
        merge_requests: [
          { iid: 4, title: 'Fix the flake', label_events: [{ user: 'alice', action: 'add', label: 'review' }] },
        ],
        hooks: [{ url: 'https://hooks.example.test/api', token: 'hook-secret-token', job_events: true }],
      }),
      webProject({ description: 'The web site' }),
    ],
  });
}

describe('GitlabClient project export and import against the sandbox', () => {
  const forge = useSandboxClients(world, { sandbox: { bulkDeleteDelayMs: 0 } });
  const client = (token?: string): GitlabClient => forge.client(token);
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forgewarden-project-transfer-'));
    // Approval rules are not seeded from a world file: set them as the API would have.
    const approvals = forge.sandbox.state.approvals.project(API);
    approvals.settings.approvals_before_merge = 2;
    const trunk = forge.sandbox.state.protectedBranch(API, 'trunk')!;
    approvals.rules.push({
      id: 1,
      name: 'Backend',
      rule_type: 'regular',
      approvals_required: 1,
      user_ids: [2, 99],
      group_ids: [10],
      protected_branch_ids: [trunk.id],
    });
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** Reads `read` every 10 ms until `done` says so (20 s at most); every distinct answer, in order, and the last one. */
  async function until<T>(
    read: () => Promise<T>,
    done: (value: T) => boolean,
    key: (value: T) => string,
  ): Promise<{ seen: string[]; last: T }> {
    const seen: string[] = [];
    for (const started = Date.now(); Date.now() - started < 20_000;) {
      const value = await read();
      if (seen[seen.length - 1] !== key(value)) seen.push(key(value));
      if (done(value)) return { seen, last: value };
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`still waiting after 20 s; seen ${seen.join(' → ')}`);
  }

  const exportFinished = (
    gl: GitlabClient,
    project: number | string,
  ): Promise<{ seen: string[]; last: ProjectExportStatus }> =>
    until(
      () => gl.projectTransfer.exportStatus(project),
      (s) => s.export_status === 'finished' || s.export_status === 'failed',
      (s) => s.export_status,
    );

  const importDone = (gl: GitlabClient, project: number): Promise<{ seen: string[]; last: ProjectImportStatus }> =>
    until(
      () => gl.projectTransfer.importStatus(project),
      (s) => s.import_status === 'finished' || s.import_status === 'failed',
      (s) => s.import_status,
    );

  /** Exports `project`, waits for it and downloads it. */
  async function exported(project: number | string = API, gl = client()): Promise<string> {
    await gl.projectTransfer.scheduleExport(project);
    await exportFinished(gl, project);
    const file = join(dir, `${String(project).replace(/\//g, '_')}.tar.gz`);
    await gl.projectTransfer.downloadExport(project, file);
    return file;
  }

  /** The archive's members, extracted by GNU tar (not the sandbox's own reader): name → text. */
  async function members(file: string): Promise<Record<string, string>> {
    const out = join(dir, `x-${Math.random().toString(36).slice(2)}`);
    await mkdir(out);
    execFileSync('tar', ['xzf', file, '-C', out]);
    const found: Record<string, string> = {};
    const walk = async (at: string, prefix: string): Promise<void> => {
      for (const entry of await readdir(at, { withFileTypes: true })) {
        if (entry.isDirectory()) await walk(join(at, entry.name), `${prefix}${entry.name}/`);
        else found[`${prefix}${entry.name}`] = await readFile(join(at, entry.name), 'utf8');
      }
    };
    await walk(out, '');
    return found;
  }

  const ndjson = (text: string | undefined): Record<string, unknown>[] =>
    (text ?? '')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);

  /**
   * What an export carries of a project, as the sandbox holds it, without what an import gives anew: its name, path
   * and creation time, and the ids (pipelines and jobs by their order instead).
   */
  function contents(projectId: number): unknown {
    const { state } = forge.sandbox;
    const project = state.projects.get(projectId)!;
    const { name: _name, path: _path, created_at: _created, ...attributes } = archivedAttributes(state, project);
    const relations = archivedRelations(state, project);
    const order = new Map(relations.ci_pipelines.map((p, index) => [p.id, index]));
    const local = (id: number | null): number | null => (id === null ? null : (order.get(id) ?? -1));
    return {
      attributes,
      ...relations,
      ci_pipelines: relations.ci_pipelines.map((p) => ({
        ...p,
        id: local(p.id),
        parent_pipeline_id: local(p.parent_pipeline_id),
        jobs: p.jobs.map(({ id: _id, ...job }) => ({
          ...job,
          downstream_pipeline_id: local(job.downstream_pipeline_id),
        })),
      })),
    };
  }

  describe('export', () => {
    it('is queued, then finished with the forge’s links; the download is a tar.gz holding the project’s records', async () => {
      // Long enough that the first poll finds the export queued, even on a busy machine.
      forge.sandbox.state.settings.exportDelayMs = 800;
      const gl = client();
      await expect(gl.projectTransfer.exportStatus('acme/api')).resolves.toMatchObject({
        id: API,
        export_status: 'none',
      });
      await expect(gl.projectTransfer.scheduleExport('acme/api')).resolves.toEqual({ message: '202 Accepted' });
      const early = join(dir, 'early.tar.gz');
      await expect(gl.projectTransfer.downloadExport(API, early)).rejects.toMatchObject({
        status: 404,
        body: { message: '404 Not found or has expired' },
      });
      expect(existsSync(early)).toBe(false);

      const { seen, last } = await exportFinished(gl, 'acme/api');
      expect(seen[0]).toBe('queued');
      expect(seen[seen.length - 1]).toBe('finished');
      expect(['queued', 'started', 'finished'].filter((s) => seen.includes(s))).toEqual(seen);
      expect(last).toEqual<ProjectExportStatus>({
        id: API,
        description: 'The API',
        name: 'API',
        name_with_namespace: 'Acme / API',
        path: 'api',
        path_with_namespace: 'acme/api',
        created_at: expect.any(String) as string,
        export_status: 'finished',
        _links: {
          api_url: `${forge.sandbox.url}/api/v4/projects/1/export/download`,
          web_url: `${forge.sandbox.url}/acme/api/download_export`,
        },
      });

      // The 404 above was this minute's download of the project.
      forge.sandbox.state.clock.advance(60_000);
      const file = join(dir, 'api.tar.gz');
      const result = await gl.projectTransfer.downloadExport('acme/api', file);
      expect(result).toEqual({ path: file, bytes: (await stat(file)).size });

      const archive = await members(file);
      expect(Object.keys(archive).sort()).toEqual([
        'VERSION',
        'tree/project.json',
        'tree/project/approval_rules.ndjson',
        'tree/project/ci_pipelines.ndjson',
        'tree/project/external_status_checks.ndjson',
        'tree/project/issues.ndjson',
        'tree/project/merge_requests.ndjson',
        'tree/project/project_members.ndjson',
        'tree/project/protected_branches.ndjson',
      ]);
      expect(archive.VERSION).toBe('0.2.4\n');
      expect(JSON.parse(archive['tree/project.json'])).toMatchObject({
        name: 'API',
        path: 'api',
        description: 'The API',
        visibility: 'private',
        default_branch: 'trunk',
        approvals_before_merge: 2,
      });
      expect(ndjson(archive['tree/project/project_members.ndjson'])).toEqual([
        { user_id: 5, username: 'rita', access_level: 20 },
      ]);
      const pipelines = ndjson(archive['tree/project/ci_pipelines.ndjson']);
      expect(pipelines).toMatchObject([
        {
          id: 100,
          status: 'failed',
          user: 'root',
          jobs: [
            { name: 'build' },
            { name: 'test', status: 'failed' },
            { name: 'deploy', kind: 'bridge', downstream_pipeline_id: 101 },
          ],
        },
        { id: 101, parent_pipeline_id: 100, jobs: [{ name: 'child', user: 'alice' }] },
      ]);
      // As the forge's export: no job logs, artifacts or tokens.
      const jobs = pipelines.flatMap((p) => p.jobs as Record<string, unknown>[]);
      expect(jobs.filter((j) => 'log' in j || 'artifacts' in j || 'token' in j)).toEqual([]);
      expect(ndjson(archive['tree/project/protected_branches.ndjson'])).toEqual([
        {
          name: 'trunk',
          push_access_levels: [{ access_level: 0 }],
          merge_access_levels: [{ access_level: 40 }, { user: 'alice' }],
          unprotect_access_levels: [{ access_level: 40 }],
          allow_force_push: false,
          code_owner_approval_required: false,
        },
        expect.objectContaining({ name: 'release/*', allow_force_push: true }),
      ]);
      // A rule's unknown user (99) is not named.
      expect(ndjson(archive['tree/project/approval_rules.ndjson'])).toEqual([
        {
          name: 'Backend',
          rule_type: 'regular',
          approvals_required: 1,
          users: ['mia'],
          groups: ['acme'],
          protected_branches: ['trunk'],
        },
      ]);
      expect(ndjson(archive['tree/project/issues.ndjson'])).toMatchObject([
        {
          iid: 1,
          title: 'Flaky test',
          resource_label_events: [{ action: 'add', user: 'mia', label: { name: 'bug', color: '#d9534f' } }],
          resource_weight_events: [{ user: 'mia', weight: 3 }],
        },
      ]);
      expect(ndjson(archive['tree/project/merge_requests.ndjson'])).toMatchObject([
        { iid: 4, resource_label_events: [{ user: 'alice' }] },
      ]);
      // Nor the registry, webhooks (their tokens) or anything else the forge leaves out.
      expect(Object.values(archive).join('\n')).not.toMatch(
        /hook-secret-token|job-token-1001|latest|hooks\.example\.test/,
      );
    });

    it('needs a maintainer: developers 403, outsiders and unknown projects 404', async () => {
      await expect(client(USER_TOKEN).projectTransfer.scheduleExport(API)).rejects.toBeInstanceOf(ForbiddenError);
      await expect(client(USER_TOKEN).projectTransfer.exportStatus(API)).rejects.toBeInstanceOf(ForbiddenError);
      await expect(client(USER_TOKEN).projectTransfer.downloadExport(API, join(dir, 'x'))).rejects.toBeInstanceOf(
        ForbiddenError,
      );
      await expect(client(OUTSIDER_TOKEN).projectTransfer.scheduleExport(API)).rejects.toMatchObject({
        status: 404,
        body: { message: '404 Project Not Found' },
      });
      await expect(client().projectTransfer.exportStatus('acme/nope')).rejects.toBeInstanceOf(NotFoundError);
      await expect(client(MAINTAINER_TOKEN).projectTransfer.scheduleExport(API)).resolves.toEqual({
        message: '202 Accepted',
      });
    });
  });

  describe('import', () => {
    it('restores the archive into another group and path: the new project holds the same records', async () => {
      const file = await exported();
      const mia = client(MAINTAINER_TOKEN);
      const created = await mia.projectTransfer.import({
        file,
        path: 'api-restored',
        namespace: 'restore',
        name: 'API restored',
      });
      expect(created).toEqual<ProjectImportStatus>({
        id: expect.any(Number) as number,
        description: null,
        name: 'API restored',
        name_with_namespace: 'Restore / API restored',
        path: 'api-restored',
        path_with_namespace: 'restore/api-restored',
        created_at: expect.any(String) as string,
        import_status: 'scheduled',
        import_type: 'gitlab_project',
        correlation_id: expect.stringMatching(/^[0-9a-f]{32}$/) as string,
        failed_relations: [],
        import_error: null,
        stats: null,
      });
      const { seen, last } = await importDone(mia, created.id);
      expect(seen[seen.length - 1]).toBe('finished');
      expect(last).toMatchObject({ id: created.id, description: 'The API', import_error: null, failed_relations: [] });

      expect(contents(created.id)).toEqual(contents(API));
      // Through the API too: the branches, the jobs (without their logs), the members.
      const restored = created.id;
      expect((await collect(mia.protectedBranches.all(restored))).map((b) => b.name)).toEqual(['trunk', 'release/*']);
      const builds = await collect(mia.jobs.all(restored));
      expect(builds.map((j) => [j.name, j.status]).sort()).toEqual([
        ['build', 'success'],
        ['child', 'success'],
        ['test', 'failed'],
      ]);
      await expect(mia.jobs.trace(restored, builds[0].id)).rejects.toBeInstanceOf(NotFoundError);
      expect(forge.sandbox.state.member('project', restored, 5)?.access_level).toBe(20);
      // What the forge's export leaves out is not there: images and webhooks.
      await expect(collect(mia.registry.all(restored))).resolves.toEqual([]);
      await expect(collect(mia.projectHooks.all(restored))).resolves.toEqual([]);

      const log = forge.sandbox.state.requestLog.find((e) => e.path === '/api/v4/projects/import')!;
      expect(log.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
      expect(log.body).toMatchObject({
        path: 'api-restored',
        namespace: 'restore',
        name: 'API restored',
        file: { filename: '1.tar.gz' },
      });
    });

    it('imports into the caller’s own namespace by default, named after the path; a project that was not imported says none', async () => {
      const file = await exported();
      const created = await client().projectTransfer.import({ file, path: 'api-copy' });
      expect(created).toMatchObject({ name: 'api-copy', path_with_namespace: 'root/api-copy' });
      await importDone(client(), created.id);
      await expect(client().projectTransfer.importStatus(WEB)).resolves.toMatchObject({
        id: WEB,
        import_status: 'none',
        import_type: null,
        correlation_id: null,
        failed_relations: [],
        import_error: null,
      });
    });

    it('accepts a .gz that is no archive, then fails the import with import_error; the error is for maintainers', async () => {
      const junk = join(dir, 'junk.tar.gz');
      await writeFile(junk, 'not an archive');
      const mia = client(MAINTAINER_TOKEN);
      const created = await mia.projectTransfer.import({ file: junk, path: 'junk', namespace: 'acme' });
      expect(created.import_status).toBe('scheduled');
      const { last } = await importDone(mia, created.id);
      expect(last).toMatchObject({
        import_status: 'failed',
        import_error: expect.stringMatching(/^Unable to decompress junk\.tar\.gz: /) as string,
      });
      await expect(client(USER_TOKEN).projectTransfer.importStatus(created.id)).resolves.toMatchObject({
        import_status: 'failed',
        import_error: 'Ask a maintainer to check the import status for more details.',
      });

      const named = join(dir, 'archive.zip');
      await writeFile(named, 'x');
      const wrongName = await mia.projectTransfer
        .import({ file: named, path: 'zip', namespace: 'acme' })
        .catch((e: unknown) => e);
      expect(wrongName).toBeInstanceOf(ValidationError);
      expect(wrongName).toMatchObject({
        status: 422,
        body: { message: { error: 'You need to upload a GitLab project export archive (ending in .gz).' } },
      });
    });

    it('refuses a taken path (400) unless overwrite, which replaces the project once the import finishes', async () => {
      const file = await exported();
      const gl = client();
      const taken = await gl.projectTransfer.import({ file, path: 'web', namespace: 'acme' }).catch((e: unknown) => e);
      expect(taken).toBeInstanceOf(ValidationError);
      expect(taken).toMatchObject({ status: 400, body: { message: 'Path has already been taken' } });
      expect(forge.sandbox.state.projects.size).toBe(2);

      forge.sandbox.state.settings.exportDelayMs = 300;
      const created = await gl.projectTransfer.import({ file, path: 'web', namespace: 10, overwrite: true });
      // Under a temporary path until it is done, as the forge does it; the old project stays until then.
      expect(created.path_with_namespace).toMatch(/^acme\/web-[0-9a-f]{32}$/);
      expect(forge.sandbox.state.projects.has(WEB)).toBe(true);
      await importDone(gl, created.id);
      expect(forge.sandbox.state.projects.has(WEB)).toBe(false);
      await expect(gl.projects.show('acme/web')).resolves.toMatchObject({ id: created.id, description: 'The API' });
      expect(contents(created.id)).toEqual(contents(API));
    });

    it('refuses namespaces the caller may not create projects in, and fails locally when the archive does not exist', async () => {
      const file = await exported();
      const alice = client(USER_TOKEN);
      await expect(alice.projectTransfer.import({ file, path: 'x', namespace: 'acme' })).rejects.toMatchObject({
        status: 400,
        body: { message: 'Namespace is not valid' },
      });
      await expect(alice.projectTransfer.import({ file, path: 'x', namespace: 'restore' })).rejects.toMatchObject({
        status: 404,
        body: { message: '404 Namespace Not Found' },
      });
      await expect(alice.projectTransfer.import({ file, path: 'x', namespace: 'mia' })).rejects.toBeInstanceOf(
        NotFoundError,
      );
      await expect(alice.projectTransfer.import({ file, path: '-bad', namespace: 'alice' })).rejects.toMatchObject({
        status: 400,
      });
      const before = forge.sandbox.state.requestLog.length;
      await expect(
        alice.projectTransfer.import({ file: join(dir, 'missing.tar.gz'), path: 'x' }),
      ).rejects.toMatchObject({ code: 'ENOENT' });
      expect(forge.sandbox.state.requestLog.length).toBe(before);
    });
  });

  describe('the forge’s limits', () => {
    it('refuses a user’s 7th export request in a minute with a 429 and Retry-After; another user has their own', async () => {
      const gl = client();
      for (let i = 0; i < 6; i++) await gl.projectTransfer.scheduleExport(i % 2 === 0 ? API : WEB);
      const refused = await gl.projectTransfer.scheduleExport(API).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(RateLimitedError);
      expect(refused).toMatchObject({
        status: 429,
        body: TOO_MANY,
        headers: { 'retry-after': expect.stringMatching(/^(59|60)$/) as string },
      });
      await expect(client(MAINTAINER_TOKEN).projectTransfer.scheduleExport(API)).resolves.toEqual({
        message: '202 Accepted',
      });
      forge.sandbox.state.clock.advance(60_000);
      await expect(gl.projectTransfer.scheduleExport(API)).resolves.toEqual({ message: '202 Accepted' });
    });

    it('lets a user download each project’s export once a minute: the second of one project is refused, another project’s goes', async () => {
      const gl = client();
      await gl.projectTransfer.scheduleExport(API);
      await gl.projectTransfer.scheduleExport(WEB);
      await exportFinished(gl, API);
      await exportFinished(gl, WEB);
      await gl.projectTransfer.downloadExport(API, join(dir, 'api.tar.gz'));
      const again = await gl.projectTransfer.downloadExport(API, join(dir, 'again.tar.gz')).catch((e: unknown) => e);
      expect(again).toBeInstanceOf(RateLimitedError);
      expect(again).toMatchObject({
        body: TOO_MANY,
        headers: { 'retry-after': expect.stringMatching(/^\d+$/) as string },
      });
      expect(existsSync(join(dir, 'again.tar.gz'))).toBe(false);
      await expect(gl.projectTransfer.downloadExport(WEB, join(dir, 'web.tar.gz'))).resolves.toMatchObject({
        bytes: expect.any(Number) as number,
      });
      // Another user's own limit.
      await expect(
        client(MAINTAINER_TOKEN).projectTransfer.downloadExport(API, join(dir, 'mia.tar.gz')),
      ).resolves.toBeDefined();
    });

    it('refuses a user’s 7th import in a minute without creating anything', async () => {
      const file = await exported();
      const gl = client();
      for (let i = 1; i <= 6; i++) await gl.projectTransfer.import({ file, path: `copy-${i}`, namespace: 'restore' });
      const projects = forge.sandbox.state.projects.size;
      const refused = await gl.projectTransfer
        .import({ file, path: 'copy-7', namespace: 'restore' })
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(RateLimitedError);
      expect(refused).toMatchObject({ body: TOO_MANY });
      expect(forge.sandbox.state.projects.size).toBe(projects);
      // Imports count apart from exports.
      await expect(gl.projectTransfer.scheduleExport(WEB)).resolves.toEqual({ message: '202 Accepted' });
      await forge.sandbox.state.whenIdle();
    });
  });
});

/**
 * The endpoints of the Project import and export API the client covers, with the client method that calls each:
 * every one has its client method and its sandbox route, and docs/api-client.md shows this table.
 */
const PROJECT_TRANSFER_ENDPOINTS = [
  { method: 'POST', path: '/projects/:id/export', client: 'projectTransfer.scheduleExport' },
  { method: 'GET', path: '/projects/:id/export', client: 'projectTransfer.exportStatus' },
  { method: 'GET', path: '/projects/:id/export/download', client: 'projectTransfer.downloadExport' },
  { method: 'GET', path: '/projects/:id/import', client: 'projectTransfer.importStatus' },
  { method: 'POST', path: '/projects/import', client: 'projectTransfer.import' },
] as const;

describeDocumentedEndpoints(
  'the project export and import endpoints from GitLab’s public API docs',
  PROJECT_TRANSFER_ENDPOINTS,
);
