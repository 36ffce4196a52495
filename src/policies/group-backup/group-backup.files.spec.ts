import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { LocalFiles } from '../../effects/local-files';
import {
  archiveName,
  folderContents,
  isArchiveName,
  type ListedSet,
  type Manifest,
  MANIFEST,
  pathOf,
  readManifest,
  relationsFolderName,
  removeSet,
  setLabel,
  setProblem,
  stampOf,
  writeManifest,
} from './group-backup.files';

/** The disk as the policy sees it: the tests read and write through the same class. */
const files = new LocalFiles();

let folder: string;

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'forgewarden-backup-files-'));
});

afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

const STAMP = '2026-11-24T020000Z';
const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

/** Writes `content` at `path` under the group's folder, making its folders, and gives it as a set lists it under `file`. */
async function aFile(path: string, file: string, content: string) {
  await mkdir(dirname(join(folder, path)), { recursive: true });
  await writeFile(join(folder, path), content);
  return { file, bytes: Buffer.byteLength(content), sha256: sha256(content) };
}

/** A set folder on disk, `STAMP/`: its group archive, the project platform/api, and one relations file. */
async function aSetOnDisk(stamp = STAMP): Promise<ListedSet> {
  return {
    set: stamp,
    state: 'complete',
    taken_at: '2026-11-24T02:00:00.000Z',
    finished_at: '2026-11-24T02:05:00.000Z',
    group_archive: await aFile(`${stamp}/group.tar.gz`, 'group.tar.gz', `group archive ${stamp}`),
    relations: [await aFile(`${stamp}/group.relations/self.ndjson.gz`, 'group.relations/self.ndjson.gz', 'self')],
    projects: [
      {
        id: 31,
        path: 'platform/api',
        name: 'api',
        ...(await aFile(
          `${stamp}/projects/platform/api.tar.gz`,
          'projects/platform/api.tar.gz',
          `project api ${stamp}`,
        )),
      },
    ],
    missing: [],
  };
}

/** An archive of before sets on disk, `STAMP.tar.gz` with `STAMP.relations/self.ndjson.gz`, as the manifest lists it. */
async function aLegacySetOnDisk(stamp = STAMP): Promise<ListedSet> {
  return {
    set: stamp,
    legacy: true,
    state: 'complete',
    taken_at: '2026-11-24T02:00:00.000Z',
    finished_at: '2026-11-24T02:01:00.000Z',
    group_archive: await aFile(`${stamp}.tar.gz`, 'group.tar.gz', `archive ${stamp}`),
    relations: [await aFile(`${stamp}.relations/self.ndjson.gz`, 'group.relations/self.ndjson.gz', 'self')],
    projects: [],
    missing: [],
  };
}

async function aManifestFile(content: unknown): Promise<void> {
  await writeFile(join(folder, MANIFEST), typeof content === 'string' ? content : JSON.stringify(content));
}

describe('group_backup: names in the group’s folder', () => {
  it('stamps a time to the second, without colons', () => {
    expect(stampOf(new Date('2026-11-24T02:00:00.123Z'))).toBe('2026-11-24T020000Z');
  });

  it('names an archive of before sets and its relations folder after the stamp', () => {
    expect([archiveName(STAMP), relationsFolderName(STAMP)]).toEqual([
      '2026-11-24T020000Z.tar.gz',
      '2026-11-24T020000Z.relations',
    ]);
    expect([
      isArchiveName('2026-11-24T020000Z.tar.gz'),
      isArchiveName('2026-11-24T020000Z'),
      isArchiveName('group.tar.gz'),
      isArchiveName('x2026-11-24T020000Z.tar.gz'),
    ]).toEqual([true, false, false, false]);
  });

  it('labels a set by its folder, and an archive of before sets by its file', () => {
    expect([setLabel({ set: STAMP }), setLabel({ set: STAMP, legacy: true })]).toEqual([
      '2026-11-24T020000Z/',
      '2026-11-24T020000Z.tar.gz',
    ]);
  });

  it('finds a set’s files in its folder', () => {
    const set = { set: STAMP };
    expect([
      pathOf(folder, set, 'group.tar.gz'),
      pathOf(folder, set, 'projects/platform/api.tar.gz'),
      pathOf(folder, set, 'group.relations/self.ndjson.gz'),
    ]).toEqual([
      join(folder, STAMP, 'group.tar.gz'),
      join(folder, STAMP, 'projects', 'platform', 'api.tar.gz'),
      join(folder, STAMP, 'group.relations', 'self.ndjson.gz'),
    ]);
  });

  it('finds the files of an archive of before sets where that version wrote them, beside the manifest', () => {
    const set = { set: STAMP, legacy: true as const };
    expect([pathOf(folder, set, 'group.tar.gz'), pathOf(folder, set, 'group.relations/self.ndjson.gz')]).toEqual([
      join(folder, '2026-11-24T020000Z.tar.gz'),
      join(folder, '2026-11-24T020000Z.relations', 'self.ndjson.gz'),
    ]);
  });
});

describe('group_backup: a listed set compared with the disk', () => {
  it.each(['size', 'sha256'] as const)('finds nothing wrong with a set folder as recorded (%s)', async (check) => {
    expect(await setProblem(files, folder, await aSetOnDisk(), check)).toBeUndefined();
  });

  it.each(['size', 'sha256'] as const)(
    'finds nothing wrong with an archive of before sets as recorded (%s)',
    async (check) => {
      expect(await setProblem(files, folder, await aLegacySetOnDisk(), check)).toBeUndefined();
    },
  );

  it('says the group archive is missing', async () => {
    const set = await aSetOnDisk();
    await rm(join(folder, STAMP, 'group.tar.gz'));
    expect(await setProblem(files, folder, set, 'size')).toBe('its group archive is missing from disk');
  });

  it('says a project’s archive is missing', async () => {
    const set = await aSetOnDisk();
    await rm(join(folder, STAMP, 'projects', 'platform', 'api.tar.gz'));
    expect(await setProblem(files, folder, set, 'size')).toBe(
      'its file projects/platform/api.tar.gz is missing from disk',
    );
  });

  it('says a relations file is missing', async () => {
    const set = await aSetOnDisk();
    await rm(join(folder, STAMP, 'group.relations', 'self.ndjson.gz'));
    expect(await setProblem(files, folder, set, 'size')).toBe(
      'its file group.relations/self.ndjson.gz is missing from disk',
    );
  });

  it('says the whole set is missing when its folder is gone, by its group archive first', async () => {
    const set = await aSetOnDisk();
    await rm(join(folder, STAMP), { recursive: true });
    expect(await setProblem(files, folder, set, 'size')).toBe('its group archive is missing from disk');
  });

  it('says the archive of before sets is missing, or its relations file, where that version wrote them', async () => {
    const set = await aLegacySetOnDisk();
    await rm(join(folder, '2026-11-24T020000Z.relations', 'self.ndjson.gz'));
    expect(await setProblem(files, folder, set, 'size')).toBe(
      'its file group.relations/self.ndjson.gz is missing from disk',
    );
    await rm(join(folder, '2026-11-24T020000Z.tar.gz'));
    expect(await setProblem(files, folder, set, 'size')).toBe('its group archive is missing from disk');
  });

  it('says a file has another size, by a stat alone', async () => {
    const set = await aSetOnDisk();
    await writeFile(join(folder, STAMP, 'group.tar.gz'), 'shorter');
    expect(await setProblem(files, folder, set, 'size')).toBe(
      `its group archive is 7 bytes on disk, ${set.group_archive.bytes} in the manifest`,
    );
  });

  it('finds other bytes of the same size only by hashing them', async () => {
    const set = await aSetOnDisk();
    const project = set.projects[0];
    await writeFile(join(folder, STAMP, 'projects', 'platform', 'api.tar.gz'), 'x'.repeat(project.bytes));
    expect(await setProblem(files, folder, set, 'size')).toBeUndefined();
    expect(await setProblem(files, folder, set, 'sha256')).toBe(
      "its file projects/platform/api.tar.gz has changed on disk: its SHA-256 is not the manifest's",
    );
  });

  it('finds changed bytes in an archive of before sets by hashing it', async () => {
    const set = await aLegacySetOnDisk();
    await writeFile(join(folder, '2026-11-24T020000Z.tar.gz'), 'x'.repeat(set.group_archive.bytes));
    expect(await setProblem(files, folder, set, 'sha256')).toBe(
      "its group archive has changed on disk: its SHA-256 is not the manifest's",
    );
  });

  describe('never counts a name a hand-edited manifest leads outside the set with, though the file it points at is there as recorded', () => {
    it('a project archive `projects/../../x.tar.gz`', async () => {
      const set = await aSetOnDisk();
      // STAMP/projects/../../x.tar.gz is x.tar.gz beside the manifest: there, with the recorded size and hash.
      const outside = await aFile('x.tar.gz', 'projects/../../x.tar.gz', 'outside');
      const edited = { ...set, projects: [{ ...set.projects[0], ...outside }] };
      expect(await setProblem(files, folder, edited, 'sha256')).toBe(
        'projects/../../x.tar.gz is not the name of a file of a set',
      );
    });

    it('a group archive `../../etc/passwd`', async () => {
      const set = await aSetOnDisk();
      const edited = { ...set, group_archive: { ...set.group_archive, file: '../../etc/passwd' } };
      expect(await setProblem(files, folder, edited, 'size')).toBe(
        '../../etc/passwd is not the name of a file of a set',
      );
    });

    it('a relations file `group.relations/../../x.tar.gz`', async () => {
      const set = await aSetOnDisk();
      const outside = await aFile('x.tar.gz', 'group.relations/../../x.tar.gz', 'outside');
      expect(await setProblem(files, folder, { ...set, relations: [outside] }, 'sha256')).toBe(
        'group.relations/../../x.tar.gz is not the name of a file of a set',
      );
    });

    it('a relations file of an archive of before sets `group.relations/../x.tar.gz`', async () => {
      const set = await aLegacySetOnDisk();
      // STAMP.relations/../x.tar.gz is x.tar.gz beside the manifest.
      const outside = await aFile('x.tar.gz', 'group.relations/../x.tar.gz', 'outside');
      expect(await setProblem(files, folder, { ...set, relations: [outside] }, 'sha256')).toBe(
        'group.relations/../x.tar.gz is not the name of a file of a set',
      );
    });

    it('a set named `../..`', async () => {
      const set = await aSetOnDisk();
      expect(await setProblem(files, folder, { ...set, set: '../..' }, 'size')).toBe(
        'not the name of a set of this folder',
      );
    });

    it('an archive of before sets that lists projects', async () => {
      const set = await aSetOnDisk();
      expect(await setProblem(files, folder, { ...set, legacy: true }, 'size')).toBe(
        'an archive of before sets cannot list projects',
      );
    });
  });
});

describe('group_backup: removing a set', () => {
  it('removes a set’s folder with everything in it, and leaves the others', async () => {
    const set = await aSetOnDisk();
    await aSetOnDisk('2026-11-23T020000Z');
    await removeSet(files, folder, set);
    expect(existsSync(join(folder, STAMP))).toBe(false);
    expect(existsSync(join(folder, '2026-11-23T020000Z', 'group.tar.gz'))).toBe(true);
  });

  it('removes an archive of before sets and its relations, and leaves a set folder of the same stamp', async () => {
    const legacy = await aLegacySetOnDisk();
    await aSetOnDisk();
    await removeSet(files, folder, legacy);
    expect([
      existsSync(join(folder, '2026-11-24T020000Z.tar.gz')),
      existsSync(join(folder, '2026-11-24T020000Z.relations')),
    ]).toEqual([false, false]);
    expect(existsSync(join(folder, STAMP, 'group.tar.gz'))).toBe(true);
  });

  it('takes a set already gone as removed (a prune cut short)', async () => {
    const set = await aSetOnDisk();
    await removeSet(files, folder, set);
    await expect(removeSet(files, folder, set)).resolves.toBeUndefined();
    await expect(removeSet(files, folder, { set: '2026-11-01T020000Z', legacy: true })).resolves.toBeUndefined();
  });

  it.each(['manifest.json', '..', '../..', '2026-11-24T020000Z/../..', ''])(
    'refuses to remove %j, which is not the name of a set, and removes nothing',
    async (name) => {
      await aSetOnDisk();
      await aManifestFile({ version: 2 });
      await expect(removeSet(files, folder, { set: name })).rejects.toThrow(
        `${join(folder, name)}: not the name of a backup set; not removed`,
      );
      await expect(removeSet(files, folder, { set: name, legacy: true })).rejects.toThrow(
        /not the name of a backup set; not removed/,
      );
      expect([existsSync(join(folder, MANIFEST)), existsSync(join(folder, STAMP, 'group.tar.gz'))]).toEqual([
        true,
        true,
      ]);
    },
  );
});

describe('group_backup: the manifest', () => {
  const GROUP = { id: 7, full_path: 'acme' };

  it('is undefined when the folder has none yet, or no folder exists', async () => {
    expect(await readManifest(files, folder)).toBeUndefined();
    expect(await readManifest(files, join(folder, 'not-there'))).toBeUndefined();
  });

  it('is read back as written, leaving no temporary file', async () => {
    const manifest: Manifest = {
      version: 2,
      group: GROUP,
      updated_at: '2026-11-24T02:05:00.000Z',
      sets: [await aSetOnDisk(), await aLegacySetOnDisk('2026-11-20T020000Z')],
    };
    await writeManifest(files, folder, manifest);
    expect(await readManifest(files, folder)).toEqual(manifest);
    expect((await readdir(folder)).filter((name) => name.startsWith('.'))).toEqual([]);
    expect((await readFile(join(folder, MANIFEST), 'utf8')).endsWith('}\n')).toBe(true);
  });

  it('reads a version 1 manifest as complete sets of a group archive alone, found where version 1 wrote them', async () => {
    const archive = await aFile('2026-11-24T020000Z.tar.gz', '2026-11-24T020000Z.tar.gz', 'archive of version 1');
    const relations = await aFile(
      '2026-11-24T020000Z.relations/self.ndjson.gz',
      '2026-11-24T020000Z.relations/self.ndjson.gz',
      'self',
    );
    const older = await aFile('2026-11-23T020000Z.tar.gz', '2026-11-23T020000Z.tar.gz', 'older archive');
    await aManifestFile({
      version: 1,
      group: GROUP,
      updated_at: '2026-11-24T02:01:00.000Z',
      archives: [
        {
          ...archive,
          taken_at: '2026-11-24T02:00:00.000Z',
          finished_at: '2026-11-24T02:01:00.000Z',
          relations: [relations],
        },
        { ...older, taken_at: '2026-11-23T02:00:00.000Z' },
      ],
    });

    const manifest = await readManifest(files, folder);

    expect(manifest).toEqual({
      version: 2,
      group: GROUP,
      updated_at: '2026-11-24T02:01:00.000Z',
      sets: [
        {
          set: '2026-11-24T020000Z',
          legacy: true,
          state: 'complete',
          taken_at: '2026-11-24T02:00:00.000Z',
          finished_at: '2026-11-24T02:01:00.000Z',
          group_archive: { file: 'group.tar.gz', bytes: archive.bytes, sha256: archive.sha256 },
          relations: [{ file: 'group.relations/self.ndjson.gz', bytes: 4, sha256: sha256('self') }],
          projects: [],
          missing: [],
        },
        {
          set: '2026-11-23T020000Z',
          legacy: true,
          state: 'complete',
          // Version 1 could leave out when an archive finished: taken as when it was taken.
          taken_at: '2026-11-23T02:00:00.000Z',
          finished_at: '2026-11-23T02:00:00.000Z',
          group_archive: { file: 'group.tar.gz', bytes: older.bytes, sha256: older.sha256 },
          projects: [],
          missing: [],
        },
      ],
    });
    const [newest] = manifest?.sets ?? [];
    expect([
      setLabel(newest),
      pathOf(folder, newest, 'group.tar.gz'),
      pathOf(folder, newest, 'group.relations/self.ndjson.gz'),
    ]).toEqual([
      '2026-11-24T020000Z.tar.gz',
      join(folder, '2026-11-24T020000Z.tar.gz'),
      join(folder, '2026-11-24T020000Z.relations', 'self.ndjson.gz'),
    ]);
    for (const set of manifest?.sets ?? []) expect(await setProblem(files, folder, set, 'sha256')).toBeUndefined();
  });

  it('refuses a version 1 manifest whose relations file is named outside its archive’s relations folder, naming the entry', async () => {
    const archive = await aFile('2026-11-24T020000Z.tar.gz', '2026-11-24T020000Z.tar.gz', 'archive of version 1');
    const sneaky = await aFile('x.tar.gz', '2026-11-24T020000Z.relations/../x.tar.gz', 'outside');
    await aManifestFile({
      version: 1,
      group: GROUP,
      updated_at: '2026-11-24T02:01:00.000Z',
      archives: [{ ...archive, taken_at: '2026-11-24T02:00:00.000Z', relations: [sneaky] }],
    });
    await expect(readManifest(files, folder)).rejects.toThrow(
      `${join(folder, MANIFEST)}: archives[0]: relations: expected files under group.relations/; move it aside to start a new one`,
    );
  });

  it('refuses a version 1 manifest whose relations are not files, or whose archive has no size or no readable date', async () => {
    const archive = { file: '2026-11-24T020000Z.tar.gz', bytes: 1, sha256: 'x', taken_at: '2026-11-24T02:00:00.000Z' };
    for (const entry of [
      { ...archive, relations: [{}] },
      { ...archive, relations: 'x' },
      { ...archive, bytes: undefined },
    ]) {
      await aManifestFile({ version: 1, group: GROUP, updated_at: '2026-11-24T02:01:00.000Z', archives: [entry] });
      await expect(readManifest(files, folder)).rejects.toThrow(
        'not a backup manifest (version 1 with group and archives)',
      );
    }
    await aManifestFile({
      version: 1,
      group: GROUP,
      updated_at: '2026-11-24T02:01:00.000Z',
      archives: [{ ...archive, taken_at: 'yesterday' }],
    });
    await expect(readManifest(files, folder)).rejects.toThrow('archives[0]: taken_at: expected a time');
  });

  it('refuses a version 1 manifest with an entry that is not an archive of its folder', async () => {
    await aManifestFile({
      version: 1,
      group: GROUP,
      updated_at: '2026-11-24T02:01:00.000Z',
      archives: [{ file: '../../etc/passwd', bytes: 1, sha256: 'x', taken_at: '2026-11-24T02:00:00.000Z' }],
    });
    await expect(readManifest(files, folder)).rejects.toThrow(
      `${join(folder, MANIFEST)}: not a backup manifest (version 1 with group and archives); move it aside to start a new one`,
    );
  });

  it.each<[string, (set: ListedSet) => unknown, string]>([
    ['a set of an unknown state', (set) => ({ ...set, state: 'done' }), 'sets[0]: state: expected complete or partial'],
    [
      'a set whose name is not a stamp',
      (set) => ({ ...set, set: '../x' }),
      'sets[0]: set: expected the folder name YYYY-MM-DDTHHMMSSZ',
    ],
    [
      'a set with a project path leading outside',
      (set) => ({ ...set, projects: [{ ...set.projects[0], path: '../x', file: 'projects/../x.tar.gz' }] }),
      'sets[0]: projects[0]: expected { id, path, name, file, bytes, sha256 }',
    ],
    [
      'a set with a project archive not at its path',
      (set) => ({ ...set, projects: [{ ...set.projects[0], file: 'projects/other.tar.gz' }] }),
      'sets[0]: projects[0]: platform/api is not a project path with its archive under projects/',
    ],
    ['a string in place of a set', () => 'a set', 'sets[0]: not an object'],
  ])('refuses a version 2 manifest listing %s, naming the set', async (_what, edit, problem) => {
    await aManifestFile({
      version: 2,
      group: GROUP,
      updated_at: '2026-11-24T02:05:00.000Z',
      sets: [edit(await aSetOnDisk())],
    });
    await expect(readManifest(files, folder)).rejects.toThrow(
      `${join(folder, MANIFEST)}: ${problem}; move it aside to start a new one`,
    );
  });

  it('names the set by its place in the list', async () => {
    const good = await aSetOnDisk();
    await aManifestFile({
      version: 2,
      group: GROUP,
      updated_at: '2026-11-24T02:05:00.000Z',
      sets: [good, { ...good, missing: 'none' }],
    });
    await expect(readManifest(files, folder)).rejects.toThrow(
      'sets[1]: missing: expected a list of { id, path, reason }',
    );
  });

  it.each<[string, unknown, string]>([
    ['not JSON', '{"version": 2,', 'not JSON'],
    ['not an object', 'null', 'not a backup manifest (a JSON object)'],
    [
      'another version',
      { version: 3, group: GROUP, sets: [] },
      'not a backup manifest (version 2 with group and sets)',
    ],
    [
      'version 2 without sets',
      { version: 2, group: GROUP, archives: [] },
      'not a backup manifest (version 2 with group and sets)',
    ],
  ])('refuses a manifest that is %s, naming the file', async (_what, content, problem) => {
    await aManifestFile(content);
    await expect(readManifest(files, folder)).rejects.toThrow(`${join(folder, MANIFEST)}: ${problem}`);
  });
});

describe('group_backup: what else lies in the group’s folder', () => {
  it('lists set folders and archives the manifest does not list, and leftovers of interrupted writes', async () => {
    const listedSet = await aSetOnDisk('2026-11-24T020000Z');
    const listedLegacy = await aLegacySetOnDisk('2026-11-20T020000Z');
    await aSetOnDisk('2026-11-23T020000Z');
    await aLegacySetOnDisk('2026-11-19T020000Z');
    // A set folder of the same stamp as a listed archive of before sets is another thing, not listed.
    await aFile('2026-11-20T020000Z/group.tar.gz', 'group.tar.gz', 'a folder beside the archive');
    await aFile('.group.tar.gz.partial', '', 'cut short');
    await aFile('.0a1b2c3d.tmp.partial', '', 'cut short');
    await aFile('notes/readme.txt', '', 'not a set');
    await aFile('2026-11-22T020000Z', '', 'a file named like a set folder');
    await aFile('2026-11-24T020000Z/.projects-x.partial', '', 'inside a set: the set’s own business');
    const manifest: Manifest = {
      version: 2,
      group: { id: 7, full_path: 'acme' },
      updated_at: '2026-11-24T02:05:00.000Z',
      sets: [listedSet, listedLegacy],
    };
    await writeManifest(files, folder, manifest);

    expect(await folderContents(files, folder, manifest)).toEqual({
      unlisted: ['2026-11-19T020000Z.tar.gz', '2026-11-20T020000Z/', '2026-11-23T020000Z/'],
      partials: ['.0a1b2c3d.tmp.partial', '.group.tar.gz.partial'],
    });
  });

  it('lists every set and archive as unlisted when there is no manifest', async () => {
    await aSetOnDisk('2026-11-24T020000Z');
    await aLegacySetOnDisk('2026-11-20T020000Z');
    expect(await folderContents(files, folder, undefined)).toEqual({
      unlisted: ['2026-11-20T020000Z.tar.gz', '2026-11-24T020000Z/'],
      partials: [],
    });
  });

  it('finds nothing in a folder that does not exist yet', async () => {
    expect(await folderContents(files, join(folder, 'acme'), undefined)).toEqual({ unlisted: [], partials: [] });
  });
});
