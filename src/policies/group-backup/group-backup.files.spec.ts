import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { archiveProblem, type ManifestEntry, removeBackup } from './group-backup.files';

let folder: string;

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'forgewarden-backup-files-'));
});

afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

/** An archive written to the folder and its manifest entry, with one relations file when asked. */
async function anArchive(stamp = '2026-11-24T020000Z', relations = false): Promise<ManifestEntry> {
  const bytes = Buffer.from(`archive ${stamp}`);
  await writeFile(join(folder, `${stamp}.tar.gz`), bytes);
  const entry: ManifestEntry = { file: `${stamp}.tar.gz`, bytes: bytes.length, sha256: sha256(bytes), taken_at: '2026-11-24T02:00:00.000Z', finished_at: '2026-11-24T02:01:00.000Z' };
  if (!relations) return entry;
  await mkdir(join(folder, `${stamp}.relations`));
  await writeFile(join(folder, `${stamp}.relations`, 'self.ndjson.gz'), 'self');
  return { ...entry, relations: [{ file: `${stamp}.relations/self.ndjson.gz`, bytes: 4, sha256: sha256('self') }] };
}

describe('group_backup: a listed archive compared with the disk', () => {
  it.each(['size', 'sha256'] as const)('finds nothing wrong with an archive as recorded (%s)', async (check) => {
    expect(await archiveProblem(folder, await anArchive('2026-11-24T020000Z', true), check)).toBeUndefined();
  });

  it('says an archive is missing', async () => {
    const entry = await anArchive();
    await rm(join(folder, entry.file));
    expect(await archiveProblem(folder, entry, 'size')).toBe('missing from disk');
  });

  it('says an archive has another size, by a stat alone', async () => {
    const entry = await anArchive();
    await writeFile(join(folder, entry.file), 'shorter');
    expect(await archiveProblem(folder, entry, 'size')).toBe(`is 7 bytes on disk, ${entry.bytes} in the manifest`);
  });

  it('finds other bytes of the same size only by hashing them', async () => {
    const entry = await anArchive();
    await writeFile(join(folder, entry.file), 'x'.repeat(entry.bytes));
    expect(await archiveProblem(folder, entry, 'size')).toBeUndefined();
    expect(await archiveProblem(folder, entry, 'sha256')).toBe("has changed on disk: its SHA-256 is not the manifest's");
  });

  it('counts the relations files with their archive', async () => {
    const entry = await anArchive('2026-11-24T020000Z', true);
    await rm(join(folder, '2026-11-24T020000Z.relations', 'self.ndjson.gz'));
    expect(await archiveProblem(folder, entry, 'size')).toBe('its relations file 2026-11-24T020000Z.relations/self.ndjson.gz is missing from disk');
  });

  it.each([
    ['a file that is not an archive', { file: '../../etc/passwd' }, 'not the name of an archive of this folder'],
    ['a relations file outside the archive’s folder', { relations: [{ file: '2026-11-24T020000Z.relations/../../x', bytes: 1, sha256: 'x' }] }, 'its relations file 2026-11-24T020000Z.relations/../../x is not in 2026-11-24T020000Z.relations/'],
  ])('never counts %s, whatever a hand-edited manifest says', async (_what, fields, problem) => {
    expect(await archiveProblem(folder, { ...(await anArchive()), ...fields }, 'size')).toBe(problem);
  });

  it('removes an archive and its relations, and refuses a name that is not an archive’s', async () => {
    const entry = await anArchive('2026-11-24T020000Z', true);
    await removeBackup(folder, entry);
    expect([existsSync(join(folder, entry.file)), existsSync(join(folder, '2026-11-24T020000Z.relations'))]).toEqual([false, false]);
    await expect(removeBackup(folder, { file: 'manifest.json' })).rejects.toThrow(/not the name of an archive; not removed/);
  });
});
