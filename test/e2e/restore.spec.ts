import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import Redis from 'ioredis';
import { type RequestLogEntry, type RunningSandbox, startSandbox } from '../../src/sandbox';
import { UploadedFile } from '../../src/sandbox/http/multipart';
import { childEnv, runCli, type CliResult } from '../support/cli';
import { call } from '../support/sandbox-http';
import { ADMIN_TOKEN, baseWorld } from '../support/world-builders';

const DESCRIPTION = 'The Acme group, as it was backed up';
const IMPORT_PATH = '/api/v4/groups/import';

describe('restore: a group from a backup archive, against the sandbox forge', () => {
  let sandbox: RunningSandbox;
  let dir: string;
  let archive: string;
  let dryRunFile: string;
  let actingFile: string;
  const prefix = `e2e-restore-${process.pid}`;

  const env = (token = ADMIN_TOKEN): NodeJS.ProcessEnv =>
    childEnv({ GITLAB_URL: sandbox.url, GITLAB_TOKEN: token, REDIS_URL: process.env.REDIS_URL });

  const fileIn = (name: string, data: string | Buffer): string => {
    const file = join(dir, name);
    writeFileSync(file, data);
    return file;
  };

  const policyFile = (
    name: string,
    { dryRun, token = '"${GITLAB_TOKEN}"' }: { dryRun?: boolean; token?: string } = {},
  ): string =>
    fileIn(
      name,
      [
        'version: 1',
        `gitlab: { url: "\${GITLAB_URL}", token: ${token}, max_requests_per_minute: 6000 }`,
        `redis: { url: "\${REDIS_URL}", prefix: ${prefix} }`,
        ...(dryRun === undefined ? [] : [`dry_run: ${dryRun}`]),
        'policies: []',
      ].join('\n'),
    );

  /** Runs `restore` and returns its result with the requests the forge received meanwhile. */
  const restore = async (args: string[], token?: string): Promise<CliResult & { requests: RequestLogEntry[] }> => {
    const before = sandbox.state.requestLog.length;
    const result = await runCli(['restore', '--wait', '3', ...args], env(token));
    return { ...result, requests: sandbox.state.requestLog.slice(before) };
  };

  const imports = (requests: RequestLogEntry[]): RequestLogEntry[] =>
    requests.filter((entry) => entry.method === 'POST' && entry.path === IMPORT_PATH);

  /** What the command printed for the user on stderr: everything but the logger's JSON lines. */
  const message = (result: CliResult): string[] =>
    result.stderr.split('\n').filter((line) => line !== '' && !line.startsWith('{'));

  const fingerprint = (file: string): { bytes: number; sha256: string } => {
    const data = readFileSync(file);
    return { bytes: data.length, sha256: createHash('sha256').update(data).digest('hex') };
  };

  beforeAll(async () => {
    sandbox = await startSandbox({
      world: baseWorld({
        groups: [
          {
            id: 10,
            path: 'acme',
            name: 'Acme',
            description: DESCRIPTION,
            members: [
              { user: 'root', access_level: 'owner' },
              { user: 'mia', access_level: 'maintainer' },
              { user: 'alice', access_level: 'developer' },
            ],
          },
          { id: 11, path: 'platform', name: 'Platform', parent: 'acme', description: 'Platform team' },
          { id: 12, path: 'infra', name: 'Infra', parent: 'acme/platform' },
          { id: 20, path: 'restores', name: 'Restores', members: [{ user: 'root', access_level: 'owner' }] },
          { id: 21, path: 'kept', name: 'Kept', parent: 'restores' },
        ],
      }),
      bulkDeleteDelayMs: 0,
    });
    const settings = await call(sandbox.url, '/__sandbox/settings', {
      method: 'POST',
      body: { export_rate_limits: { window_ms: 1000 }, export_delay_ms: 20 },
    });
    expect(settings.status).toBe(200);
    dir = mkdtempSync(join(tmpdir(), 'forgewarden-restore-'));

    const scheduled = await call(sandbox.url, '/api/v4/groups/acme/export', { method: 'POST', token: ADMIN_TOKEN });
    expect(scheduled.status).toBe(202);
    await sandbox.state.whenIdle();
    const download = await fetch(`${sandbox.url}/api/v4/groups/acme/export/download`, {
      headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN },
    });
    expect(download.status).toBe(200);
    archive = fileIn('acme.tar.gz', Buffer.from(await download.arrayBuffer()));

    dryRunFile = policyFile('dry-run.yml');
    actingFile = policyFile('acting.yml', { dryRun: false });
  });

  afterAll(async () => {
    await sandbox?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    const redis = new Redis(process.env.REDIS_URL!);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it("in a dry run (the file's default, or --dry-run) checks the archive and the path, says what it would do and uploads nothing", async () => {
    const { bytes, sha256 } = fingerprint(archive);
    for (const args of [
      ['-c', dryRunFile],
      ['-c', actingFile, '--dry-run'],
    ]) {
      const result = await restore([...args, '--from', archive, '--group', 'acme-restored']);
      expect(result.code).toBe(0);
      expect(result.stdout).toBe(
        `would restore ${archive} (${bytes} bytes, sha256 ${sha256}) as group acme-restored: the archive is valid and the path is free\n` +
          "dry run (the file's dry_run, or --dry-run): run with --no-dry-run to create the group\n",
      );
      expect(result.requests.map((entry) => `${entry.method} ${entry.path}`)).toContain(
        'GET /api/v4/namespaces/acme-restored/exists',
      );
      expect(imports(result.requests)).toEqual([]);
    }
    expect(sandbox.state.group('acme-restored')).toBeUndefined();
  });

  it("with --no-dry-run uploads the archive once and prints the new group's full path and id; the forge fills it from the archive", async () => {
    const { bytes, sha256 } = fingerprint(archive);
    const result = await restore(['-c', dryRunFile, '--no-dry-run', '--from', archive, '--group', 'acme-restored']);
    expect(result.code).toBe(0);
    const created = sandbox.state.group('acme-restored');
    expect(created).toMatchObject({ name: 'acme-restored', parent_id: null });
    expect(result.stdout.split('\n')[0]).toBe(
      `restored ${archive} (${bytes} bytes, sha256 ${sha256}) as group acme-restored (id ${created!.id}, private)`,
    );

    const [upload, ...more] = imports(result.requests);
    expect(more).toEqual([]);
    expect(upload).toMatchObject({ status: 202, body: { name: 'acme-restored', path: 'acme-restored' } });
    expect(upload.body).not.toHaveProperty('parent_id');
    expect(upload.headers['content-type']).toMatch(/^multipart\/form-data; *boundary=/);
    expect(upload.body.file).toBeInstanceOf(UploadedFile);
    expect((upload.body.file as UploadedFile).data.equals(readFileSync(archive))).toBe(true);

    await sandbox.state.whenIdle();
    expect(sandbox.state.group('acme-restored')?.description).toBe(DESCRIPTION);
    expect(sandbox.state.group('acme-restored/platform')).toMatchObject({
      name: 'Platform',
      description: 'Platform team',
    });
    expect(sandbox.state.group('acme-restored/platform/infra')).toMatchObject({ name: 'Infra' });
    const members = sandbox.state.members
      .filter((m) => m.source === 'group' && m.source_id === created!.id)
      .map((m) => [m.user_id, m.access_level]);
    expect(members.sort()).toEqual([
      [1, 50],
      [2, 40],
      [3, 30],
    ]);
  });

  it('with --parent-id creates the group under that parent, named by --name', async () => {
    const result = await restore([
      '-c',
      actingFile,
      '--from',
      archive,
      '--group',
      'child',
      '--parent-id',
      '20',
      '--name',
      'Restored child',
    ]);
    expect(result.code).toBe(0);
    const created = sandbox.state.group('restores/child');
    expect(created).toMatchObject({ name: 'Restored child', parent_id: 20 });
    expect(result.stdout.split('\n')[0]).toMatch(
      new RegExp(` as group restores/child \\(id ${created!.id}, private\\)$`),
    );
    expect(imports(result.requests).map((entry) => entry.body)).toEqual([
      expect.objectContaining({ name: 'Restored child', path: 'child', parent_id: '20' }),
    ]);
  });

  it('with a full path in --group creates the group under the parent that path names', async () => {
    const result = await restore(['-c', actingFile, '--from', archive, '--group', 'restores/nested']);
    expect(result.code).toBe(0);
    const created = sandbox.state.group('restores/nested');
    expect(created).toMatchObject({ name: 'nested', parent_id: 20 });
    expect(result.stdout.split('\n')[0]).toMatch(
      new RegExp(` as group restores/nested \\(id ${created!.id}, private\\)$`),
    );
  });

  it('refuses a path that is taken before uploading anything, naming it and a free one', async () => {
    const groups = sandbox.state.groups.size;
    const cases: Array<[string[], string]> = [
      [['--group', 'acme'], 'forgewarden restore: the path acme is taken; free: acme1; nothing was uploaded'],
      [['--group', 'mia'], 'forgewarden restore: the path mia is taken; free: mia1; nothing was uploaded'],
      [
        ['--group', 'restores/kept'],
        'forgewarden restore: the path restores/kept is taken; free: restores/kept1; nothing was uploaded',
      ],
      [
        ['--group', 'kept', '--parent-id', '20'],
        'forgewarden restore: the path restores/kept is taken; free: restores/kept1; nothing was uploaded',
      ],
    ];
    for (const [args, expected] of cases) {
      const result = await restore(['-c', actingFile, '--from', archive, ...args]);
      expect([result.code, message(result)]).toEqual([1, [expected]]);
      expect(result.stdout).toBe('');
      expect(imports(result.requests)).toEqual([]);
    }
    expect(sandbox.state.groups.size).toBe(groups);
  });

  it('refuses a parent that does not exist, by id or by path, before uploading anything', async () => {
    const cases: Array<[string[], string]> = [
      [
        ['--group', 'orphan', '--parent-id', '999'],
        'forgewarden restore: the parent group with id 999 does not exist, or this token cannot see it; nothing was uploaded',
      ],
      [
        ['--group', 'nope/orphan'],
        'forgewarden restore: the parent group nope does not exist, or this token cannot see it; nothing was uploaded',
      ],
    ];
    for (const [args, expected] of cases) {
      const result = await restore(['-c', dryRunFile, '--from', archive, ...args]);
      expect([result.code, message(result)]).toEqual([1, [expected]]);
      expect(imports(result.requests)).toEqual([]);
    }
  });

  it('refuses a path the forge would refuse after the upload (ending in .git or .atom) as a usage error', async () => {
    const result = await restore(['-c', actingFile, '--from', archive, '--group', 'restores/backup.git']);
    expect([result.code, message(result)]).toEqual([
      2,
      ["forgewarden restore: --group restores/backup.git: a group path cannot end in '.git' or '.atom'"],
    ]);
    expect(result.requests).toEqual([]);
  });

  it('when the answer to the upload is lost after the forge acted, finds the group and reports it restored', async () => {
    sandbox.state.faults.add({ method: 'POST', path: `^${IMPORT_PATH}$`, status: 502, after: true, times: 1 });
    const result = await restore(['-c', actingFile, '--from', archive, '--group', 'acme-lost-answer']);
    expect(result.code).toBe(0);
    const created = sandbox.state.group('acme-lost-answer');
    expect(result.stdout.split('\n').slice(0, 2)).toEqual([
      expect.stringMatching(new RegExp(` as group acme-lost-answer \\(id ${created!.id}, private\\)$`)),
      `the forge's answer to the upload was lost (POST groups/import → 502: 502 Bad Gateway), but the group is there`,
    ]);
    expect(imports(result.requests)).toHaveLength(1);
  });

  it('when the upload fails before the forge acted, says the path is still free and running again is safe', async () => {
    sandbox.state.faults.add({ method: 'POST', path: `^${IMPORT_PATH}$`, status: 502, times: 1 });
    const result = await restore(['-c', actingFile, '--from', archive, '--group', 'acme-not-imported']);
    expect([result.code, message(result)]).toEqual([
      1,
      [
        'forgewarden restore: POST groups/import → 502: 502 Bad Gateway; acme-not-imported does not exist, so the import has not gone through; running this command again is safe (it refuses the path should the group appear meanwhile)',
      ],
    ]);
    expect(sandbox.state.group('acme-not-imported')).toBeUndefined();
    const again = await restore(['-c', actingFile, '--from', archive, '--group', 'acme-not-imported']);
    expect(again.code).toBe(0);
    expect(sandbox.state.group('acme-not-imported')).toBeDefined();
  });

  it('refuses a file that is not a complete group export before contacting the forge, naming the file and the problem', async () => {
    const whole = readFileSync(archive);
    const cases: Array<[string, string | Buffer, string]> = [
      ['notes.txt', 'not an archive at all\n', 'not gzip'],
      ['empty.tar.gz', '', 'empty file'],
      ['half.tar.gz', whole.subarray(0, Math.floor(whole.length / 2)), 'truncated'],
      ['text.gz', gzipSync('plain text, gzip-compressed, but no tar inside\n'.repeat(20)), 'not a tar archive'],
    ];
    for (const [name, data, problem] of cases) {
      const file = fileIn(name, data);
      const result = await restore(['-c', actingFile, '--from', file, '--group', `from-${name.replace(/\W/g, '-')}`]);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      const [line, ...rest] = message(result);
      expect(rest).toEqual([]);
      expect(line.startsWith(`forgewarden restore: ${file} is not a group export archive: ${problem}`)).toBe(true);
      // The file is named once, and nothing hints at a step the command took itself (the archive was gunzipped).
      expect(line.split(file)).toHaveLength(2);
      expect(line).not.toContain('gunzip');
      expect(line).toMatch(/; nothing was uploaded$/);
      expect(result.requests).toEqual([]);
    }
  });

  it('names a --from file that does not exist or is a folder, and a missing --from, as usage errors (exit 2)', async () => {
    const missing = join(dir, 'no-such-backup.tar.gz');
    const absent = await restore(['-c', actingFile, '--from', missing, '--group', 'ghost']);
    expect([absent.code, message(absent)]).toEqual([2, [`forgewarden restore: --from ${missing}: no such file`]]);
    expect(absent.requests).toEqual([]);

    const noFrom = await restore(['-c', actingFile, '--group', 'ghost']);
    expect([noFrom.code, message(noFrom)]).toEqual([
      2,
      ['forgewarden restore: --from PATH is required: the backup archive, or the backup set folder, to restore'],
    ]);

    const folder = await restore(['-c', actingFile, '--from', dir, '--group', 'ghost']);
    expect([folder.code, message(folder)]).toEqual([2, [`forgewarden restore: --from ${dir}: not a file`]]);
  });

  it('stops with one line naming GITLAB_TOKEN when the forge refuses the token, from the environment or the file, and imports nothing', async () => {
    const cases: Array<[string, string]> = [
      [actingFile, 'glpat-wrong-token-in-env'],
      [policyFile('wrong-token.yml', { dryRun: false, token: 'glpat-wrong-token-in-file' }), ADMIN_TOKEN],
    ];
    for (const [file, token] of cases) {
      const result = await restore(['-c', file, '--from', archive, '--group', 'acme-refused'], token);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(message(result)).toEqual([
        `forgewarden restore: the forge at ${sandbox.url} refused the token (401 Unauthorized): check GITLAB_TOKEN (gitlab.token in ${file}) and that GITLAB_URL (gitlab.url) is the forge it belongs to`,
      ]);
      expect(result.requests.map((entry) => `${entry.method} ${entry.path} ${entry.status}`)).toEqual([
        'GET /api/v4/user 401',
      ]);
    }
    expect(sandbox.state.group('acme-refused')).toBeUndefined();
  });
});
