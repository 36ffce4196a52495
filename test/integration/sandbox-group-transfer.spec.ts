import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { startSandbox, type RunningSandbox, type World } from '../../src/sandbox';
import { groupTransferOf, readArchive } from '../../src/sandbox/group-transfer-state';
import { apiClient, call } from '../support/sandbox-http';
import { ADMIN_TOKEN, baseWorld, MAINTAINER_TOKEN, USER_TOKEN } from '../support/world-builders';

/**
 * The sandbox's group export and import as the forge does them, beyond what the client test covers: the endpoints'
 * rate limits (GitLab's defaults: 6 exports, 1 download per group, 6 imports a minute per user), an export replacing
 * the previous archive, its 24-hour expiry, large (padded) archives, paced downloads, and the round trip.
 */

const TOO_MANY = { message: { error: 'This endpoint has been requested too many times. Try again later.' } };
const EXPIRED = { message: '404 Not found or has expired' };

/** acme (root owner) → platform (alice owner) → infra; acme → docs. Private, as an import makes a top-level group. */
function transferWorld(overrides: Partial<World> = {}): World {
  return baseWorld({
    groups: [
      {
        id: 10,
        path: 'acme',
        name: 'Acme',
        // Longer than a tar block, so tree/group.json spans several.
        description: `The Acme group. ${'Everything the company builds. '.repeat(40)}`,
        members: [
          { user: 'root', access_level: 'owner' },
          { user: 'mia', access_level: 'maintainer' },
          { user: 'alice', access_level: 'developer' },
        ],
      },
      {
        id: 11,
        path: 'platform',
        name: 'Platform',
        parent: 'acme',
        description: 'Platform team',
        members: [{ user: 'alice', access_level: 'owner' }],
      },
      {
        id: 12,
        path: 'infra',
        name: 'Infra',
        parent: 'acme/platform',
        members: [{ user: 'mia', access_level: 'developer' }],
      },
      { id: 13, path: 'docs', name: 'Docs', parent: 'acme' },
    ],
    ...overrides,
  });
}

let sandbox: RunningSandbox;
let dir: string;
const root = (): ReturnType<typeof apiClient> => apiClient(sandbox.url, ADMIN_TOKEN);
const control = (path: string, method = 'GET', body?: unknown): ReturnType<typeof call> =>
  call(sandbox.url, `/__sandbox${path}`, { method, body });
const settings = (body: unknown): ReturnType<typeof call> => control('/settings', 'POST', body);
const advance = (duration: string): ReturnType<typeof call> => control('/clock', 'POST', { advance: duration });

interface Download {
  status: number;
  headers: Headers;
  body: Buffer;
}

async function download(group: string, token = ADMIN_TOKEN): Promise<Download> {
  const response = await fetch(`${sandbox.url}/api/v4/groups/${encodeURIComponent(group)}/export/download`, {
    headers: { 'PRIVATE-TOKEN': token },
  });
  return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) };
}

const json = (d: Download): unknown => JSON.parse(d.body.toString('utf8'));

/** Schedules an export, waits for it and downloads it (with the download limit off, so tests can download at will). */
async function exported(group: string): Promise<Buffer> {
  expect((await root()(`/groups/${encodeURIComponent(group)}/export`, { method: 'POST' })).status).toBe(202);
  await sandbox.state.whenIdle();
  const result = await download(group);
  expect(result.status).toBe(200);
  return result.body;
}

async function importGroup(
  archive: Buffer,
  fields: { name: string; path: string; parent_id?: number },
  token = ADMIN_TOKEN,
): Promise<{ status: number; json: unknown }> {
  const form = new FormData();
  form.append('name', fields.name);
  form.append('path', fields.path);
  if (fields.parent_id !== undefined) form.append('parent_id', String(fields.parent_id));
  form.append('file', new Blob([archive]), 'export.tar.gz');
  const response = await fetch(`${sandbox.url}/api/v4/groups/import`, {
    method: 'POST',
    headers: { 'PRIVATE-TOKEN': token },
    body: form,
  });
  return { status: response.status, json: await response.json() };
}

/** `tree/group.json` of an archive, read by GNU tar (not the sandbox's own reader). */
async function groupJsonByTar(archive: Buffer, name = 'archive'): Promise<unknown> {
  const out = join(dir, name);
  await mkdir(out);
  await writeFile(join(dir, `${name}.tar.gz`), archive);
  execFileSync('tar', ['xzf', join(dir, `${name}.tar.gz`), '-C', out]);
  return JSON.parse(await readFile(join(out, 'tree/group.json'), 'utf8'));
}

/** `tar tzvf` of an archive: entry name → size. */
async function listing(archive: Buffer): Promise<Record<string, number>> {
  const file = join(dir, 'listing.tar.gz');
  await writeFile(file, archive);
  const lines = execFileSync('tar', ['tzvf', file], { encoding: 'utf8' }).trim().split('\n');
  // -rw-r--r-- 0/0   300000 1970-01-01 00:00 tree/padding.bin
  return Object.fromEntries(lines.map((line) => line.trim().split(/\s+/)).map((f) => [f[5], Number(f[2])]));
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'forgewarden-sandbox-transfer-'));
});

afterEach(async () => {
  await sandbox.close();
  await rm(dir, { recursive: true, force: true });
});

describe('sandbox forge: group export and import rate limits', () => {
  beforeEach(async () => {
    sandbox = await startSandbox({ world: transferWorld(), bulkDeleteDelayMs: 0 });
  });

  it("defaults to the forge's limits, changeable through the control API (merged; 0 turns one off)", async () => {
    const defaults = {
      bulk_delete_delay_ms: 0,
      bulk_delete_cap: null,
      export_delay_ms: null,
      export_rate_limits: {
        group_export: 6,
        group_download_export: 1,
        group_import: 6,
        project_export: 6,
        project_download_export: 1,
        project_import: 6,
        window_ms: 60000,
      },
      export_padding_bytes: 0,
      download_bytes_per_second: 0,
    };
    expect((await control('/settings')).json).toEqual(defaults);
    expect((await settings({ export_rate_limits: { group_download_export: 0 } })).json).toEqual({
      ...defaults,
      export_rate_limits: { ...defaults.export_rate_limits, group_download_export: 0 },
    });
    expect(sandbox.state.settings.exportRateLimits).toEqual({
      groupExport: 6,
      groupDownloadExport: 0,
      groupImport: 6,
      projectExport: 6,
      projectDownloadExport: 1,
      projectImport: 6,
      windowMs: 60000,
    });
    for (const bad of [
      { export_rate_limits: { window_ms: 0 } },
      { export_rate_limits: { group_export: -1 } },
      { export_rate_limits: { other: 1 } },
      { export_padding_bytes: -1 },
      { download_bytes_per_second: 1.5 },
    ]) {
      expect((await settings(bad)).status).toBe(400);
    }
    expect((await control('/state')).json).toMatchObject({
      settings: { export_rate_limits: { group_download_export: 0 } },
    });
  });

  it("refuses the 7th export a minute of a user with the forge's 429 and Retry-After; it changes nothing", async () => {
    await settings({ export_rate_limits: { group_download_export: 0 } });
    const first = await exported('acme');
    for (let i = 2; i <= 6; i++) expect((await root()('/groups/acme/export', { method: 'POST' })).status).toBe(202);
    await sandbox.state.whenIdle();

    await advance('45s');
    const refused = await root()('/groups/acme/export', { method: 'POST' });
    expect(refused.status).toBe(429);
    expect(refused.json).toEqual(TOO_MANY);
    expect(['14', '15']).toContain(refused.headers.get('retry-after'));
    // Refused: the finished archive stays, no new export is under way.
    expect(groupTransferOf(sandbox.state).pendingExports.size).toBe(0);
    expect((await download('acme')).body.equals(first)).toBe(true);

    // Per user: alice, owner of acme/platform, has her own budget.
    expect(
      (await apiClient(sandbox.url, USER_TOKEN)('/groups/acme%2Fplatform/export', { method: 'POST' })).status,
    ).toBe(202);
    // Too low a role is refused before the limit is counted: 403, not 429.
    expect((await apiClient(sandbox.url, MAINTAINER_TOKEN)('/groups/acme/export', { method: 'POST' })).status).toBe(
      403,
    );

    // The window started with the first request: 15 s later the next export goes through.
    await advance('15s');
    expect((await root()('/groups/acme/export', { method: 'POST' })).status).toBe(202);
  });

  it("lets a user download a group's export once a minute (a 404 counts), per group", async () => {
    await settings({ export_delay_ms: 500 });
    expect((await root()('/groups/acme/export', { method: 'POST' })).status).toBe(202);
    const early = await download('acme');
    expect([early.status, json(early)]).toEqual([404, EXPIRED]);
    await sandbox.state.whenIdle();

    const refused = await download('acme');
    expect(refused.status).toBe(429);
    expect(json(refused)).toEqual(TOO_MANY);
    expect(refused.headers.get('retry-after')).toMatch(/^(59|60)$/);
    // Another group, another user: their own windows.
    expect((await download('acme/docs')).status).toBe(404);
    expect((await download('acme/platform', USER_TOKEN)).status).toBe(404);
    // A maintainer is refused before the limit counts, every time.
    expect((await download('acme', MAINTAINER_TOKEN)).status).toBe(403);
    expect((await download('acme', MAINTAINER_TOKEN)).status).toBe(403);

    await advance('1m');
    const ready = await download('acme');
    expect(ready.status).toBe(200);
    expect(readArchive(ready.body)).toMatchObject({ path: 'acme', name: 'Acme' });
  });

  it('refuses the 7th import a minute of a user without creating anything; 0 turns the limit off', async () => {
    await settings({ export_rate_limits: { group_download_export: 0 } });
    const archive = await exported('acme/docs');
    for (let i = 1; i <= 6; i++)
      expect((await importGroup(archive, { name: `Copy ${i}`, path: `copy-${i}` })).status).toBe(202);
    const groups = sandbox.state.groups.size;
    const members = sandbox.state.members.length;

    const refused = await importGroup(archive, { name: 'Copy 7', path: 'copy-7' });
    expect(refused).toEqual({ status: 429, json: TOO_MANY });
    expect(sandbox.state.groups.size).toBe(groups);
    expect(sandbox.state.members.length).toBe(members);
    expect(sandbox.state.group('copy-7')).toBeUndefined();
    // Imports are counted apart from exports: an export still goes through.
    expect((await root()('/groups/acme/export', { method: 'POST' })).status).toBe(202);

    await settings({ export_rate_limits: { group_import: 0 } });
    expect((await importGroup(archive, { name: 'Copy 7', path: 'copy-7' })).status).toBe(202);
    await sandbox.state.whenIdle();
  });

  it('takes its limits and window from the world file', async () => {
    await sandbox.close();
    sandbox = await startSandbox({
      world: transferWorld({ settings: { export_rate_limits: { group_export: 2, window_ms: 10_000 } } }),
      bulkDeleteDelayMs: 0,
    });
    expect((await control('/settings')).json).toMatchObject({
      export_rate_limits: {
        group_export: 2,
        group_download_export: 1,
        group_import: 6,
        project_export: 6,
        window_ms: 10000,
      },
    });
    for (let i = 0; i < 2; i++) expect((await root()('/groups/acme/export', { method: 'POST' })).status).toBe(202);
    const refused = await root()('/groups/acme/export', { method: 'POST' });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^(9|10)$/);
    await advance('10s');
    expect((await root()('/groups/acme/export', { method: 'POST' })).status).toBe(202);
    await sandbox.state.whenIdle();
  });
});

describe('sandbox forge: group export archives', () => {
  beforeEach(async () => {
    sandbox = await startSandbox({ world: transferWorld(), bulkDeleteDelayMs: 0 });
    await settings({ export_rate_limits: { group_download_export: 0 } });
  });

  it('removes the previous archive when a new export starts; the new one comes after export_delay_ms', async () => {
    const first = await exported('acme');
    expect((await settings({ export_delay_ms: 1500 })).json).toMatchObject({
      bulk_delete_delay_ms: 0,
      export_delay_ms: 1500,
    });

    expect((await root()('/groups/acme/export', { method: 'POST' })).status).toBe(202);
    const gone = await download('acme');
    expect([gone.status, json(gone)]).toEqual([404, EXPIRED]);
    // bulk_delete_delay_ms is 0: the export waits for its own delay.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await download('acme')).status).toBe(404);

    await sandbox.state.whenIdle();
    const second = await download('acme');
    expect(second.status).toBe(200);
    expect(readArchive(second.body)).toEqual(readArchive(first));
  });

  it('expires an archive 24 hours (sandbox clock) after it was made', async () => {
    await exported('acme');
    await advance('23h');
    await advance('59m');
    expect((await download('acme')).status).toBe(200);
    await advance('1m');
    const expired = await download('acme');
    expect([expired.status, json(expired)]).toEqual([404, EXPIRED]);
    expect(groupTransferOf(sandbox.state).exports.has(10)).toBe(false);
  });

  it('writes a valid gzip tar, multi-block entries and the incompressible padding included', async () => {
    const plain = await exported('acme');
    expect(await listing(plain)).toEqual({ VERSION: 6, 'tree/group.json': expect.any(Number) as number });
    const groupJson = (await groupJsonByTar(plain, 'plain')) as { description: string };
    expect(Buffer.byteLength(JSON.stringify(groupJson))).toBeGreaterThan(512);
    expect(groupJson).toEqual(readArchive(plain));

    await settings({ export_padding_bytes: 300_000 });
    const padded = await exported('acme');
    expect(padded.length).toBeGreaterThan(300_000);
    expect(await listing(padded)).toEqual({
      VERSION: 6,
      'tree/group.json': Buffer.byteLength(JSON.stringify(groupJson)),
      'tree/padding.bin': 300_000,
    });
    expect(await groupJsonByTar(padded, 'padded')).toEqual(groupJson);
    const paddingBytes = await readFile(join(dir, 'padded', 'tree/padding.bin'));
    // Pseudo-random: not a run of one byte, and every byte value occurs.
    expect(new Set(paddingBytes).size).toBe(256);
    // Deterministic: the next export of the group pads with the same bytes.
    expect(gunzipSync(await exported('acme')).equals(gunzipSync(padded))).toBe(true);

    // The import reads tree/group.json and ignores the padding.
    expect((await importGroup(padded, { name: 'Padded', path: 'padded' })).status).toBe(202);
    await sandbox.state.whenIdle();
    expect(sandbox.state.group('padded/platform/infra')).toBeDefined();
  });

  it('imports an archive GNU tar packed (./ names, directories, unknown entries), ignoring what it does not know', async () => {
    const tree = join(dir, 'repacked');
    await mkdir(join(tree, 'tree', 'project'), { recursive: true });
    await writeFile(join(tree, 'VERSION'), '0.2.4\n');
    await writeFile(
      join(tree, 'tree', 'group.json'),
      JSON.stringify({
        name: 'X',
        path: 'x',
        description: 'from a forge',
        visibility: 'private',
        members: [],
        subgroups: [{ name: 'Sub', path: 'sub', description: '', visibility: 'private', subgroups: [] }],
      }),
    );
    await writeFile(join(tree, 'tree', 'project', 'issues.ndjson'), '{"title":"unknown to a group import"}\n');
    await writeFile(join(tree, 'LICENSE'), 'x'.repeat(2000));
    execFileSync('tar', ['czf', join(dir, 'repacked.tar.gz'), '-C', tree, '.']);

    const archive = await readFile(join(dir, 'repacked.tar.gz'));
    expect((await importGroup(archive, { name: 'Repacked', path: 'repacked' })).status).toBe(202);
    await sandbox.state.whenIdle();
    expect(sandbox.state.group('repacked')).toMatchObject({ name: 'Repacked', description: 'from a forge' });
    expect(sandbox.state.group('repacked/sub')).toMatchObject({ name: 'Sub' });
  });
});

describe('sandbox forge: paced downloads', () => {
  beforeEach(async () => {
    sandbox = await startSandbox({ world: transferWorld(), bulkDeleteDelayMs: 0 });
    await settings({ export_rate_limits: { group_download_export: 0 }, export_padding_bytes: 200_000 });
    await exported('acme');
    await settings({ download_bytes_per_second: 250_000 });
  });

  /** GET of the acme export over plain node:http: headers, bytes received, and how long it took. */
  function get(stopAfterBytes?: number): Promise<{ status: number; length: number; received: number; ms: number }> {
    const startedAt = performance.now();
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        `${sandbox.url}/api/v4/groups/10/export/download`,
        { headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN } },
        (res) => {
          let received = 0;
          const done = (): void =>
            resolve({
              status: res.statusCode ?? 0,
              length: Number(res.headers['content-length']),
              received,
              ms: performance.now() - startedAt,
            });
          res.on('data', (chunk: Buffer) => {
            received += chunk.length;
            if (stopAfterBytes !== undefined && received >= stopAfterBytes) {
              req.destroy();
              done();
            }
          });
          res.on('end', done);
          res.on('error', () => undefined);
        },
      );
      req.on('error', (error) => (stopAfterBytes === undefined ? reject(error) : undefined));
      req.end();
    });
  }

  it('sends the whole Content-Length up front, then the bytes at download_bytes_per_second', async () => {
    const result = await get();
    expect(result.status).toBe(200);
    expect(result.length).toBeGreaterThan(200_000);
    expect(result.received).toBe(result.length);
    // ≈ 0.8 s at 250 kB/s; unpaced it takes a few milliseconds.
    expect(result.ms).toBeGreaterThan(600);
    // JSON answers are not paced.
    expect((await root()('/groups/10')).status).toBe(200);
  });

  it('lets a client go away mid-download; the sandbox carries on', async () => {
    const cut = await get(1);
    expect(cut.received).toBeLessThan(cut.length);
    expect(cut.ms).toBeLessThan(500);
    expect((await control('/requests?path=export/download')).json).toMatchObject([{ status: 200 }, { status: 200 }]);
    await settings({ download_bytes_per_second: 0 });
    const whole = await download('acme');
    expect(whole.status).toBe(200);
    expect(Number(whole.headers.get('content-length'))).toBe(whole.body.length);
  });
});

describe('sandbox forge: export → import → export round trip', () => {
  it('keeps tree/group.json but for the top-level path and name given at import', async () => {
    sandbox = await startSandbox({ world: transferWorld(), bulkDeleteDelayMs: 0 });
    await settings({ export_rate_limits: { group_download_export: 0 } });
    const original = readArchive(await exported('acme'));
    expect(original).toMatchObject({
      subgroups: [{ path: 'platform', subgroups: [{ path: 'infra' }] }, { path: 'docs' }],
    });

    expect((await importGroup(await exported('acme'), { name: 'Acme copy', path: 'acme-copy' })).status).toBe(202);
    await sandbox.state.whenIdle();
    const copy = readArchive(await exported('acme-copy'));
    expect(copy).toEqual({ ...original, path: 'acme-copy', name: 'Acme copy' });
  });

  it('differs in visibility only when the original was not private: a top-level import is private, subgroups follow', async () => {
    const world = transferWorld();
    for (const group of world.groups ?? []) group.visibility = 'internal';
    sandbox = await startSandbox({ world, bulkDeleteDelayMs: 0 });
    await settings({ export_rate_limits: { group_download_export: 0 } });
    const original = readArchive(await exported('acme'))!;

    await importGroup(await exported('acme'), { name: 'Acme copy', path: 'acme-copy' });
    await sandbox.state.whenIdle();
    const copy = readArchive(await exported('acme-copy'));
    const privately = (group: typeof original): typeof original => ({
      ...group,
      visibility: 'private',
      subgroups: group.subgroups.map(privately),
    });
    expect(copy).toEqual({ ...privately(original), path: 'acme-copy', name: 'Acme copy' });
  });
});
