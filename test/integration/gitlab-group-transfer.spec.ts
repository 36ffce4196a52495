import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { acmeGroup, baseWorld, MAINTAINER_TOKEN, OUTSIDER_TOKEN, USER_TOKEN } from '../support/world-builders';
import { groupTransferOf, readArchive } from '../../src/sandbox/group-transfer-state';
import {
  ForbiddenError,
  GitlabClient,
  NotFoundError,
  RateLimitedError,
  UnauthorizedError,
  ValidationError,
} from '../../src/gitlab';
import { FakeClock } from '../support/gitlab/fake-clock';
import { useSandboxClients } from '../support/sandbox-clients';

/** Group export, download, import and relations export through the client over real HTTP. */

describe('GitlabClient group transfer against the sandbox', () => {
  const forge = useSandboxClients(() =>
    baseWorld({
      groups: [
        acmeGroup({ description: 'The Acme group', visibility: 'internal' }),
        {
          id: 11,
          path: 'platform',
          name: 'Platform',
          parent: 'acme',
          visibility: 'public',
          members: [{ user: 'alice', access_level: 'maintainer' }],
        },
      ],
    }),
  );
  const client = (token?: string): GitlabClient => forge.client(token);
  const groupByPath = (fullPath: string) => forge.sandbox.state.group(fullPath);
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forgewarden-group-transfer-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function exportedArchive(group: string | number = 'acme'): Promise<string> {
    const gl = client();
    await gl.groupTransfer.scheduleExport(group);
    await forge.sandbox.state.whenIdle();
    const file = join(dir, `${String(group).replace(/\//g, '_')}.tar.gz`);
    await gl.groupTransfer.downloadExport(group, file);
    return file;
  }

  describe('export and download', () => {
    it('schedules (202), answers 404 until the archive is ready, then streams it to the file', async () => {
      const gl = client();
      const file = join(dir, 'acme.tar.gz');
      // Long enough that the download below surely comes before the archive is ready, even on a loaded machine.
      const delay = forge.sandbox.state.settings.exportDelayMs;
      forge.sandbox.state.settings.exportDelayMs = 2_000;
      await expect(gl.groupTransfer.scheduleExport('acme')).resolves.toEqual({ message: '202 Accepted' });
      forge.sandbox.state.settings.exportDelayMs = delay;
      const early = gl.groupTransfer.downloadExport('acme', file);
      await expect(early).rejects.toBeInstanceOf(NotFoundError);
      await expect(early).rejects.toMatchObject({ status: 404, body: { message: '404 Not found or has expired' } });
      expect(existsSync(file)).toBe(false);

      await forge.sandbox.state.whenIdle();
      // The forge lets a user download a group's export once a minute, the 404 above included.
      forge.sandbox.state.clock.advance(60_000);
      const result = await gl.groupTransfer.downloadExport(10, file);
      expect(result).toEqual({ path: file, bytes: (await stat(file)).size });
      expect(result.bytes).toBeGreaterThan(0);
      const archive = readArchive(await readFile(file));
      expect(archive).toMatchObject({
        name: 'Acme',
        path: 'acme',
        description: 'The Acme group',
        subgroups: [{ path: 'platform', name: 'Platform', subgroups: [] }],
      });
    });

    it('a second download within the minute is that download’s own 429: the client pauses no other request for it', async () => {
      const clock = new FakeClock(forge.sandbox.state.clock.now());
      const gl = forge.client(undefined, { clock, maxRequestsPerMinute: 0 });
      await exportedArchive();
      const limited = await gl.groupTransfer
        .downloadExport('acme', join(dir, 'again.tar.gz'))
        .catch((error: unknown) => error);
      expect(limited).toBeInstanceOf(RateLimitedError);
      expect(limited).toMatchObject({ status: 429, headers: { 'retry-after': expect.stringMatching(/^\d+$/) } });
      // Another group's read goes out at once: the limiter waited for nothing.
      await expect(gl.groups.show('acme/platform')).resolves.toMatchObject({ id: 11 });
      expect(clock.sleeps).toEqual([]);
    });

    it('a 404 leaves an existing destination file untouched', async () => {
      const file = join(dir, 'keep.bin');
      await writeFile(file, 'old');
      await expect(client().groupTransfer.downloadExport('acme', file)).rejects.toBeInstanceOf(NotFoundError);
      expect(await readFile(file, 'utf8')).toBe('old');
    });

    it('needs an owner: maintainers 403, outsiders and unknown groups 404, bad tokens 401', async () => {
      await expect(client(MAINTAINER_TOKEN).groupTransfer.scheduleExport('acme')).rejects.toBeInstanceOf(
        ForbiddenError,
      );
      await expect(
        client(MAINTAINER_TOKEN).groupTransfer.downloadExport('acme', join(dir, 'x')),
      ).rejects.toBeInstanceOf(ForbiddenError);
      forge.sandbox.state.groups.get(10)!.visibility = 'private';
      await expect(client(OUTSIDER_TOKEN).groupTransfer.scheduleExport('acme')).rejects.toMatchObject({
        status: 404,
        body: { message: '404 Group Not Found' },
      });
      await expect(client().groupTransfer.scheduleExport('nope')).rejects.toBeInstanceOf(NotFoundError);
      await expect(client('glpat-wrong').groupTransfer.scheduleExport('acme')).rejects.toBeInstanceOf(
        UnauthorizedError,
      );
    });
  });

  describe('import', () => {
    it('creates a private top-level group from an exported archive, its contents after the worker ran', async () => {
      const file = await exportedArchive();
      await expect(client().groupTransfer.import({ name: 'Acme copy', path: 'acme-copy', file })).resolves.toEqual({
        message: '202 Accepted',
      });
      const copy = groupByPath('acme-copy');
      expect(copy).toMatchObject({ name: 'Acme copy', parent_id: null, visibility: 'private' });
      expect(forge.sandbox.state.member('group', copy!.id, 1)?.access_level).toBe(50);

      await forge.sandbox.state.whenIdle();
      expect(copy!.description).toBe('The Acme group');
      const sub = groupByPath('acme-copy/platform');
      expect(sub).toMatchObject({ name: 'Platform', parent_id: copy!.id, visibility: 'private' });
      // Members whose user exists keep their membership.
      expect(forge.sandbox.state.member('group', copy!.id, 2)?.access_level).toBe(40);
      expect(forge.sandbox.state.member('group', sub!.id, 3)?.access_level).toBe(40);

      const log = forge.sandbox.state.requestLog.find((e) => e.path === '/api/v4/groups/import')!;
      expect(log.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
      expect(log.body).toMatchObject({ name: 'Acme copy', path: 'acme-copy', file: { filename: 'acme.tar.gz' } });
    });

    it('imports into a parent group (parent_id) with at most the parent visibility', async () => {
      const file = await exportedArchive('acme/platform');
      await client(MAINTAINER_TOKEN).groupTransfer.import({ name: 'Imported', path: 'imported', file, parent_id: 10 });
      await forge.sandbox.state.whenIdle();
      // The archive says public, the parent is internal.
      expect(groupByPath('acme/imported')).toMatchObject({ parent_id: 10, visibility: 'internal' });
    });

    it('rejects a taken path, a file that is no archive, a missing field, and too low a role on the parent', async () => {
      const file = await exportedArchive();
      const gl = client();
      await expect(gl.groupTransfer.import({ name: 'Acme', path: 'acme', file })).rejects.toMatchObject({
        status: 400,
        body: { message: 'Group could not be imported: Path has already been taken' },
      });
      await expect(gl.groupTransfer.import({ name: 'Root', path: 'root', file })).rejects.toBeInstanceOf(
        ValidationError,
      );
      const junk = join(dir, 'junk.tar.gz');
      await writeFile(junk, 'not an archive');
      await expect(gl.groupTransfer.import({ name: 'J', path: 'junk', file: junk })).rejects.toMatchObject({
        status: 400,
        body: { error: 'file is invalid' },
      });
      await expect(gl.groupTransfer.import({ name: '', path: 'x', file })).rejects.toMatchObject({
        body: { error: 'name is missing' },
      });
      await expect(
        client(USER_TOKEN).groupTransfer.import({ name: 'Dev', path: 'dev', file, parent_id: 10 }),
      ).rejects.toBeInstanceOf(ForbiddenError);
      await expect(gl.groupTransfer.import({ name: 'P', path: 'p', file, parent_id: 999 })).rejects.toBeInstanceOf(
        NotFoundError,
      );
      expect(groupByPath('junk') ?? groupByPath('dev') ?? groupByPath('p')).toBeUndefined();
    });

    it('fails locally, without a request, when the archive does not exist', async () => {
      const before = forge.sandbox.state.requestLog.length;
      await expect(
        client().groupTransfer.import({ name: 'X', path: 'x', file: join(dir, 'missing.tar.gz') }),
      ).rejects.toMatchObject({ code: 'ENOENT' });
      expect(forge.sandbox.state.requestLog.length).toBe(before);
    });
  });

  describe('relations export', () => {
    it('schedules, reports status per relation, and streams each relation as gzip NDJSON', async () => {
      const gl = client();
      const { settings } = forge.sandbox.state;
      await expect(gl.groupTransfer.relationsExportStatus('acme')).resolves.toEqual([]);
      // An export that surely outlasts the checks below, however loaded the machine; the one after it ends at once.
      settings.exportDelayMs = 600_000;
      await expect(gl.groupTransfer.scheduleRelationsExport('acme')).resolves.toEqual({ message: '202 Accepted' });

      const started = await gl.groupTransfer.relationsExportStatus('acme');
      expect(started.map((s) => s.relation)).toEqual(['self', 'labels', 'milestones', 'badges', 'boards', 'members']);
      expect(started.every((s) => s.status === 0 && s.error === null && typeof s.updated_at === 'string')).toBe(true);
      await expect(gl.groupTransfer.downloadRelation('acme', 'members', join(dir, 'm'))).rejects.toBeInstanceOf(
        NotFoundError,
      );

      // Scheduled again, the export starts afresh; the first one's work never lands in it.
      settings.exportDelayMs = 0;
      await gl.groupTransfer.scheduleRelationsExport('acme');
      let finished = await gl.groupTransfer.relationsExportStatus(10);
      for (let tries = 0; tries < 200 && !finished.every((s) => s.status === 1); tries += 1) {
        await new Promise((resolve) => setTimeout(resolve, 25));
        finished = await gl.groupTransfer.relationsExportStatus(10);
      }
      expect(finished.every((s) => s.status === 1)).toBe(true);

      const members = join(dir, 'members.ndjson.gz');
      const result = await gl.groupTransfer.downloadRelation('acme', 'members', members);
      expect(result.bytes).toBe((await stat(members)).size);
      const lines = gunzipSync(await readFile(members))
        .toString('utf8')
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as unknown);
      expect(lines).toEqual([
        { user_id: 2, username: 'mia', access_level: 40 },
        { user_id: 3, username: 'alice', access_level: 30 },
      ]);

      const self = join(dir, 'self.ndjson.gz');
      await gl.groupTransfer.downloadRelation('acme', 'self', self);
      expect(JSON.parse(gunzipSync(await readFile(self)).toString('utf8'))).toEqual({
        name: 'Acme',
        path: 'acme',
        description: 'The Acme group',
        visibility: 'internal',
      });
      const labels = join(dir, 'labels.ndjson.gz');
      await gl.groupTransfer.downloadRelation('acme', 'labels', labels);
      expect(gunzipSync(await readFile(labels)).length).toBe(0);

      await expect(gl.groupTransfer.downloadRelation('acme', 'wikis', join(dir, 'w'))).rejects.toMatchObject({
        status: 404,
        body: { message: '404 Not found' },
      });
    });

    it('reports a failed relation as -1 with its error; its file is not available', async () => {
      groupTransferOf(forge.sandbox.state).failingRelations.add('boards');
      const gl = client();
      await gl.groupTransfer.scheduleRelationsExport('acme');
      await forge.sandbox.state.whenIdle();
      const boards = (await gl.groupTransfer.relationsExportStatus('acme')).find((s) => s.relation === 'boards');
      expect(boards).toMatchObject({ status: -1, error: 'Failed to export boards' });
      await expect(gl.groupTransfer.downloadRelation('acme', 'boards', join(dir, 'b'))).rejects.toBeInstanceOf(
        NotFoundError,
      );
    });

    it('needs an owner and a relation', async () => {
      await expect(client(MAINTAINER_TOKEN).groupTransfer.scheduleRelationsExport('acme')).rejects.toBeInstanceOf(
        ForbiddenError,
      );
      await expect(client(MAINTAINER_TOKEN).groupTransfer.relationsExportStatus('acme')).rejects.toBeInstanceOf(
        ForbiddenError,
      );
      await expect(client().groupTransfer.downloadRelation('acme', '', join(dir, 'r'))).rejects.toMatchObject({
        status: 400,
        body: { error: 'relation is missing' },
      });
    });
  });
});
