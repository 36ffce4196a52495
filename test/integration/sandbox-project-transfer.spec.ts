import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { startSandbox, type RunningSandbox, type World } from '../../src/sandbox';
import { readProjectArchive } from '../../src/sandbox/project-archive';
import { projectTransferOf } from '../../src/sandbox/project-transfer-state';
import { apiClient, call } from '../support/sandbox-http';
import {
  acmeGroup,
  ADMIN_TOKEN,
  apiProject,
  baseWorld,
  MAINTAINER_TOKEN,
  USER_TOKEN,
  webProject,
} from '../support/world-builders';

/**
 * The sandbox's project export and import beyond what the client test covers: the export's phases and its
 * regeneration, failures and expiry, padded archives, archives other tools packed, what an import makes of a bad
 * relation line or a foreign version, the limits' scopes and settings, and what deleting a project does to them.
 */

const TOO_MANY = { message: { error: 'This endpoint has been requested too many times. Try again later.' } };
const NOT_READY = { message: '404 Not found or has expired' };

let sandbox: RunningSandbox;
let dir: string;
const root = (): ReturnType<typeof apiClient> => apiClient(sandbox.url, ADMIN_TOKEN);
const control = (path: string, method = 'GET', body?: unknown): ReturnType<typeof call> =>
  call(sandbox.url, `/__sandbox${path}`, { method, body });
const settings = (body: unknown): ReturnType<typeof call> => control('/settings', 'POST', body);
const advance = (duration: string): ReturnType<typeof call> => control('/clock', 'POST', { advance: duration });
const status = async (project = 'acme%2Fapi'): Promise<unknown> => (await root()(`/projects/${project}/export`)).json;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function transferWorld(overrides: Partial<World> = {}): World {
  return baseWorld({
    groups: [acmeGroup({ visibility: 'public' }), { id: 12, path: 'vault', name: 'Vault' }],
    projects: [
      apiProject({ description: 'The API', visibility: 'public', issues: [{ iid: 1, title: 'One' }] }),
      webProject(),
    ],
    ...overrides,
  });
}

interface Download {
  status: number;
  body: Buffer;
}

async function download(project = 'acme%2Fapi', token = ADMIN_TOKEN): Promise<Download> {
  const response = await fetch(`${sandbox.url}/api/v4/projects/${project}/export/download`, {
    headers: { 'PRIVATE-TOKEN': token },
  });
  return { status: response.status, body: Buffer.from(await response.arrayBuffer()) };
}

/** Exports, waits for it, downloads it (with the download limit off, so tests can download at will). */
async function exported(project = 'acme%2Fapi'): Promise<Buffer> {
  expect((await root()(`/projects/${project}/export`, { method: 'POST' })).status).toBe(202);
  await sandbox.state.whenIdle();
  const result = await download(project);
  expect(result.status).toBe(200);
  return result.body;
}

async function importProject(
  archive: Buffer,
  fields: Record<string, string>,
  filename = 'export.tar.gz',
  token = ADMIN_TOKEN,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append('file', new Blob([archive]), filename);
  const response = await fetch(`${sandbox.url}/api/v4/projects/import`, {
    method: 'POST',
    headers: { 'PRIVATE-TOKEN': token },
    body: form,
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

/** Imports and waits for the import; answers its final status. */
async function imported(
  archive: Buffer,
  fields: Record<string, string>,
  filename?: string,
): Promise<Record<string, unknown>> {
  const created = await importProject(archive, fields, filename);
  expect(created.status).toBe(201);
  await sandbox.state.whenIdle();
  return (await root()(`/projects/${String(created.json.id)}/import`)).json as Record<string, unknown>;
}

/** An archive GNU tar packs from `files` (`tar -C dir .`: names start with `./`, directories included). */
async function packed(files: Record<string, string>): Promise<Buffer> {
  const tree = join(dir, `tree-${Math.random().toString(36).slice(2)}`);
  for (const [name, text] of Object.entries(files)) {
    await mkdir(join(tree, name, '..'), { recursive: true });
    await writeFile(join(tree, name), text);
  }
  execFileSync('tar', ['czf', `${tree}.tar.gz`, '-C', tree, '.']);
  return readFile(`${tree}.tar.gz`);
}

/** `tar tzvf` of an archive: entry name → size. */
async function listing(archive: Buffer): Promise<Record<string, number>> {
  const file = join(dir, 'listing.tar.gz');
  await writeFile(file, archive);
  const lines = execFileSync('tar', ['tzvf', file], { encoding: 'utf8' }).trim().split('\n');
  return Object.fromEntries(lines.map((line) => line.trim().split(/\s+/)).map((f) => [f[5], Number(f[2])]));
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'forgewarden-sandbox-project-transfer-'));
  sandbox = await startSandbox({ world: transferWorld(), bulkDeleteDelayMs: 0 });
});

afterEach(async () => {
  await sandbox.close();
  await rm(dir, { recursive: true, force: true });
});

describe('sandbox forge: a project export’s lifecycle', () => {
  beforeEach(async () => {
    await settings({ export_rate_limits: { project_download_export: 0 } });
  });

  it('is queued, started halfway through export_delay_ms, then finished', async () => {
    // Long enough that a loaded machine still asks within each stage; the stage after `queued` is looked for, not slept to.
    await settings({ export_delay_ms: 4000 });
    expect(await status()).toMatchObject({ export_status: 'none' });
    expect((await root()('/projects/acme%2Fapi/export', { method: 'POST' })).status).toBe(202);
    expect(await status()).toMatchObject({ export_status: 'queued' });
    expect(await status()).not.toHaveProperty('_links');
    const stage = async () => ((await status()) as { export_status?: string }).export_status;
    let next = await stage();
    for (const deadline = Date.now() + 10_000; next === 'queued' && Date.now() < deadline; next = await stage())
      await sleep(50);
    expect(next).toBe('started');
    await sandbox.state.whenIdle();
    expect(await status()).toMatchObject({
      export_status: 'finished',
      _links: { api_url: expect.stringMatching(/\/api\/v4\/projects\/1\/export\/download$/) as string },
    });
  });

  it('regenerates: the finished archive stays downloadable, without _links, until the new one replaces it', async () => {
    const first = await exported();
    sandbox.state.projects.get(1)!.description = 'Changed since';
    // Long enough for the status and the old archive's download below on a loaded machine.
    await settings({ export_delay_ms: 3000 });
    expect((await root()('/projects/1/export', { method: 'POST' })).status).toBe(202);
    const during = await status();
    expect(during).toMatchObject({ export_status: 'regeneration_in_progress' });
    expect(during).not.toHaveProperty('_links');
    const old = await download();
    expect(old.status).toBe(200);
    expect(old.body.equals(first)).toBe(true);

    await sandbox.state.whenIdle();
    expect(await status()).toMatchObject({ export_status: 'finished' });
    const renewed = await download();
    const read = readProjectArchive(renewed.body, 'x.tar.gz');
    expect(read.ok && read.archive.project.description).toBe('Changed since');
  });

  it('writes the description given to the export instead of the project’s', async () => {
    expect(
      (await root()('/projects/1/export', { method: 'POST', body: { description: 'For the vault' } })).status,
    ).toBe(202);
    await sandbox.state.whenIdle();
    const read = readProjectArchive((await download()).body, 'x.tar.gz');
    expect(read.ok && read.archive.project.description).toBe('For the vault');
    expect(sandbox.state.projects.get(1)!.description).toBe('The API');
  });

  it('fails a project in failingExports: status failed, nothing to download; the next export is fine', async () => {
    await exported();
    projectTransferOf(sandbox.state).failingExports.add(1);
    await root()('/projects/1/export', { method: 'POST' });
    await sandbox.state.whenIdle();
    expect(await status()).toMatchObject({ export_status: 'failed' });
    const none = await download();
    expect([none.status, JSON.parse(none.body.toString())]).toEqual([404, NOT_READY]);
    projectTransferOf(sandbox.state).failingExports.delete(1);
    await exported();
    expect(await status()).toMatchObject({ export_status: 'finished' });
  });

  it('expires an archive 24 hours (sandbox clock) after it was made', async () => {
    await exported();
    await advance('23h');
    expect((await download()).status).toBe(200);
    await advance('1h');
    expect((await download()).status).toBe(404);
    expect(await status()).toMatchObject({ export_status: 'none' });
  });

  it('pads the archive with export_padding_bytes of incompressible bytes, the same for every export of the project', async () => {
    const plain = await listing(await exported());
    await settings({ export_padding_bytes: 300_000 });
    const padded = await exported();
    expect(padded.length).toBeGreaterThan(300_000);
    expect(await listing(padded)).toEqual({ ...plain, 'tree/padding.bin': 300_000 });
    expect(gunzipSync(await exported()).equals(gunzipSync(padded))).toBe(true);
    // Another project pads with other bytes.
    const other = await exported('acme%2Fweb');
    expect(
      gunzipSync(other)
        .subarray(-300_000 - 1024, -1024)
        .equals(gunzipSync(padded).subarray(-300_000 - 1024, -1024)),
    ).toBe(false);
    // The import reads what it knows and leaves the padding.
    expect(await imported(padded, { path: 'padded', namespace: 'vault' })).toMatchObject({ import_status: 'finished' });
    expect(sandbox.state.issue(sandbox.state.project('vault/padded')!.id, 1)).toMatchObject({ title: 'One' });
  });

  it('forgets a deleted project’s export and import', async () => {
    await exported();
    const copy = await importProject(await exported(), { path: 'copy', namespace: 'vault' });
    expect((await control('/projects/1', 'DELETE')).status).toBe(204);
    expect((await control(`/projects/${String(copy.json.id)}`, 'DELETE')).status).toBe(204);
    await sandbox.state.whenIdle();
    const transfer = projectTransferOf(sandbox.state);
    expect([transfer.exports.has(1), transfer.imports.has(Number(copy.json.id))]).toEqual([false, false]);
    expect(sandbox.state.project('vault/copy')).toBeUndefined();
  });
});

describe('sandbox forge: what a project import makes of an archive', () => {
  const projectJson = JSON.stringify({
    name: 'Packed',
    path: 'packed',
    description: 'from a forge',
    visibility: 'internal',
  });

  it('imports an archive GNU tar packed (./ names, directories, unknown entries such as a repository bundle)', async () => {
    const archive = await packed({
      VERSION: '0.2.4\n',
      'tree/project.json': projectJson,
      'tree/project/issues.ndjson': '{"iid":7,"title":"Seven","resource_label_events":[]}\n',
      'tree/project/labels.ndjson': '{"title":"unknown to the sandbox"}\n',
      'project.bundle': 'x'.repeat(2000),
    });
    expect(await imported(archive, { path: 'packed' })).toMatchObject({
      import_status: 'finished',
      failed_relations: [],
      import_error: null,
    });
    const project = sandbox.state.project('root/packed')!;
    expect(project).toMatchObject({ name: 'packed', description: 'from a forge', visibility: 'internal' });
    expect(sandbox.state.issue(project.id, 7)).toMatchObject({ title: 'Seven' });
  });

  it('finishes without the relation lines it cannot use and lists them as failed_relations', async () => {
    const archive = await packed({
      'tree/project.json': projectJson,
      'tree/project/issues.ndjson': [
        '{"iid":1,"title":"Good"}',
        '{"iid":2,"title":',
        '{"iid":-3}',
        '{"iid":4,"title":"Also good"}',
      ].join('\n'),
    });
    const result = await imported(archive, { path: 'partly', namespace: 'vault' });
    expect(result).toMatchObject({ import_status: 'finished', import_error: null });
    expect(result.failed_relations).toEqual([
      {
        id: expect.any(Number) as number,
        created_at: expect.any(String) as string,
        exception_class: 'JSON::ParserError',
        exception_message: expect.any(String) as string,
        source: 'process_relation_item!',
        relation_name: 'issues',
        line_number: 1,
      },
      expect.objectContaining({
        exception_class: 'ActiveRecord::RecordInvalid',
        relation_name: 'issues',
        line_number: 2,
      }),
    ]);
    const project = sandbox.state.project('vault/partly')!;
    expect([1, 4].map((iid) => sandbox.state.issue(project.id, iid)?.title)).toEqual(['Good', 'Also good']);
  });

  it.each([
    [
      'a gzip that is no tar',
      gzipSync(Buffer.from('not a tar at all, but long enough to look at'.repeat(20))),
      /^Unable to decompress export\.tar\.gz: tar: truncated$/,
    ],
    ['another version', null, /^Import version mismatch: Required 0\.2\.4 but was 0\.1\.0$/],
    ['no tree/project.json', null, /^Invalid file format: tree\/project\.json is missing$/],
    ['a project.json that is no project', null, /^Invalid file format: tree\/project\.json: /],
  ])('fails the import of %s with import_error', async (what, given, error) => {
    const archives: Record<string, () => Promise<Buffer>> = {
      'another version': () => packed({ VERSION: '0.1.0\n', 'tree/project.json': projectJson }),
      'no tree/project.json': () => packed({ VERSION: '0.2.4\n', 'tree/group.json': '{}' }),
      'a project.json that is no project': () => packed({ 'tree/project.json': '{"visibility":"secret"}' }),
    };
    const archive = given ?? (await archives[what]());
    const result = await imported(archive, { path: 'bad', namespace: 'vault' });
    expect(result).toMatchObject({ import_status: 'failed', import_error: expect.stringMatching(error) as string });
  });

  it('keeps the visibility, at most the namespace group’s', async () => {
    const archive = await exported();
    expect(readProjectArchive(archive, 'x.tar.gz')).toMatchObject({ archive: { project: { visibility: 'public' } } });
    await imported(archive, { path: 'private-copy', namespace: 'vault' });
    await imported(archive, { path: 'public-copy', namespace: 'acme' });
    expect(sandbox.state.project('vault/private-copy')!.visibility).toBe('private');
    expect(sandbox.state.project('acme/public-copy')!.visibility).toBe('public');
  });

  it('leaves the project it would overwrite in place when the import fails', async () => {
    const result = await imported(gzipSync(Buffer.from('junk')), { path: 'web', namespace: 'acme', overwrite: 'true' });
    expect(result).toMatchObject({ import_status: 'failed', path: expect.stringMatching(/^web-/) as string });
    expect(sandbox.state.project('acme/web')!.id).toBe(2);
  });

  it('takes namespace by id, path or username; another user’s namespace is the administrator’s to pick', async () => {
    const archive = await exported();
    expect((await importProject(archive, { path: 'a', namespace: '12' })).json).toMatchObject({
      path_with_namespace: 'vault/a',
    });
    expect((await importProject(archive, { path: 'b', namespace: 'mia' })).json).toMatchObject({
      path_with_namespace: 'mia/b',
    });
    const mia = await importProject(archive, { path: 'c', namespace: 'alice' }, 'export.tar.gz', MAINTAINER_TOKEN);
    expect(mia).toEqual({ status: 404, json: { message: '404 Namespace Not Found' } });
    expect((await importProject(archive, { path: 'd', namespace: 'nowhere' })).status).toBe(404);
    expect((await importProject(archive, { path: 'Bad.git' })).json).toMatchObject({
      message: expect.stringMatching(/^Path can contain only/) as string,
    });
    expect((await importProject(archive, {})).json).toEqual({ error: 'path is missing' });
    await sandbox.state.whenIdle();
  });
});

describe('sandbox forge: project export and import limits', () => {
  it('takes its project limits and window from the world file', async () => {
    await sandbox.close();
    sandbox = await startSandbox({
      world: transferWorld({ settings: { export_rate_limits: { project_export: 2, window_ms: 10_000 } } }),
      bulkDeleteDelayMs: 0,
    });
    expect((await control('/settings')).json).toMatchObject({
      export_rate_limits: {
        group_export: 6,
        project_export: 2,
        project_download_export: 1,
        project_import: 6,
        window_ms: 10000,
      },
    });
    for (let i = 0; i < 2; i++) expect((await root()('/projects/1/export', { method: 'POST' })).status).toBe(202);
    const refused = await root()('/projects/2/export', { method: 'POST' });
    expect([refused.status, refused.json]).toEqual([429, TOO_MANY]);
    expect(refused.headers.get('retry-after')).toMatch(/^(9|10)$/);
    // An endpoint's own limit: no RateLimit-* headers, as the forge's `check_rate_limit!`.
    expect([...refused.headers.keys()].filter((h) => h.startsWith('ratelimit'))).toEqual([]);
    // Group exports count apart.
    expect((await root()('/groups/acme/export', { method: 'POST' })).status).toBe(202);
    await advance('10s');
    expect((await root()('/projects/2/export', { method: 'POST' })).status).toBe(202);
    await sandbox.state.whenIdle();
  });

  it('counts a download after the role check: a 404 counts, a 403 does not; 0 turns a limit off', async () => {
    const early = await download();
    expect([early.status, JSON.parse(early.body.toString())]).toEqual([404, NOT_READY]);
    await root()('/projects/1/export', { method: 'POST' });
    await sandbox.state.whenIdle();
    const refused = await download();
    expect([refused.status, JSON.parse(refused.body.toString())]).toEqual([429, TOO_MANY]);
    expect((await download('acme%2Fapi', USER_TOKEN)).status).toBe(403);
    expect((await download('acme%2Fapi', USER_TOKEN)).status).toBe(403);
    expect((await download('acme%2Fapi', MAINTAINER_TOKEN)).status).toBe(200);
    await settings({ export_rate_limits: { project_download_export: 0 } });
    expect((await download()).status).toBe(200);
    expect((await download()).status).toBe(200);
  });

  it('checks an import’s limit after its parameters and before the file’s name, and counts per user', async () => {
    await settings({ export_rate_limits: { project_import: 1 } });
    const archive = await exported();
    expect((await importProject(archive, {})).status).toBe(400);
    expect((await importProject(archive, { path: 'one' }, 'one.zip')).status).toBe(422);
    const refused = await importProject(archive, { path: 'two' });
    expect(refused).toEqual({ status: 429, json: TOO_MANY });
    expect((await importProject(archive, { path: 'two' }, 'export.tar.gz', MAINTAINER_TOKEN)).status).toBe(201);
    await sandbox.state.whenIdle();
  });
});
