import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalFiles } from '../../effects/local-files';
import {
  filesOf,
  isRelativeProjectPath,
  isSetFileName,
  isSetName,
  projectArchiveFile,
  readSetFile,
  relativeProjectPath,
  SET_FILE,
  type SetFileContent,
  setFileProblem,
  setNameTime,
  writeSetFile,
} from './group-backup.set';

/** The disk as the policy sees it: the tests read and write through the same class. */
const files = new LocalFiles();

/** A set.json as group_backup writes it: acme's set of the 24th, two projects, one missing, one relations file. */
function aSetFile(): SetFileContent {
  return {
    version: 1,
    kind: 'forgewarden-backup-set',
    group: { id: 7, full_path: 'acme' },
    set: '2026-11-24T020000Z',
    state: 'partial',
    taken_at: '2026-11-24T02:00:00.000Z',
    finished_at: '2026-11-24T03:30:00.000Z',
    group_archive: { file: 'group.tar.gz', bytes: 1024, sha256: 'a'.repeat(64) },
    relations: [{ file: 'group.relations/self.ndjson.gz', bytes: 4, sha256: 'b'.repeat(64) }],
    projects: [
      {
        id: 31,
        path: 'platform/api',
        name: 'api',
        file: 'projects/platform/api.tar.gz',
        bytes: 2048,
        sha256: 'c'.repeat(64),
      },
      { id: 32, path: 'web', name: 'web', file: 'projects/web.tar.gz', bytes: 512, sha256: 'd'.repeat(64) },
    ],
    missing: [{ id: 33, path: 'platform/db', reason: 'its export failed 3 times' }],
  };
}

describe('group_backup set: names', () => {
  it.each(['2026-11-24T020000Z', '1999-01-01T000000Z'])('takes %s for the name of a set', (name) => {
    expect(isSetName(name)).toBe(true);
  });

  it.each([
    '2026-11-24T02:00:00Z',
    '2026-11-24T020000Z.tar.gz',
    '2026-11-24T020000',
    '2026-11-24',
    '../2026-11-24T020000Z',
    '',
    'manifest.json',
    '2026-13-45T990000Z',
    '2026-02-30T020000Z',
    '2026-11-24T246000Z',
  ])('does not take %j for the name of a set', (name) => {
    expect(isSetName(name)).toBe(false);
  });

  it('gives when a set began from its name', () => {
    expect(setNameTime('2026-11-24T020000Z').toISOString()).toBe('2026-11-24T02:00:00.000Z');
    expect(setNameTime('2027-01-01T235959Z').toISOString()).toBe('2027-01-01T23:59:59.000Z');
  });

  it('refuses a name that is not a set’s, naming it', () => {
    expect(() => setNameTime('2026-11-24T02:00:00Z')).toThrow('2026-11-24T02:00:00Z: not the name of a backup set');
    expect(() => setNameTime('2026-11-24T020000Z.tar.gz')).toThrow(/not the name of a backup set/);
  });
});

describe('group_backup set: project paths', () => {
  it.each(['api', 'platform/api', 'platform/backend/api', 'a.b/c-d_e', '_private/x'])(
    'takes %j for a project path relative to its group',
    (path) => {
      expect(isRelativeProjectPath(path)).toBe(true);
    },
  );

  it.each([
    ['the parent', '..'],
    ['a climb out of the group', '../x'],
    ['a climb in the middle', 'platform/../../x'],
    ['a climb at the end', 'platform/..'],
    ['the folder itself', '.'],
    ['a leading ./', './api'],
    ['an absolute path', '/etc/passwd'],
    ['an empty segment', 'platform//api'],
    ['a trailing slash', 'platform/'],
    ['nothing', ''],
    ['backslashes', 'platform\\..\\x'],
    ['a leading dash', '-rf'],
    ['a space', 'my project'],
  ])('refuses %s (%j)', (_what, path) => {
    expect(isRelativeProjectPath(path)).toBe(false);
  });

  it('places a project’s archive under projects/ at its path', () => {
    expect(projectArchiveFile('platform/api')).toBe('projects/platform/api.tar.gz');
    expect(projectArchiveFile('web')).toBe('projects/web.tar.gz');
  });

  it.each(['../x', '/etc/passwd', 'platform/../../x', ''])('refuses to place an archive for %j', (path) => {
    expect(() => projectArchiveFile(path)).toThrow(`${path}: not a project path relative to its group`);
  });

  it('gives a project’s path relative to its group', () => {
    expect(relativeProjectPath('acme', 'acme/platform/api')).toBe('platform/api');
    expect(relativeProjectPath('acme/platform', 'acme/platform/api')).toBe('api');
  });

  it.each([
    ['a group whose path begins like the group’s', 'acme-tools/api'],
    ['the group itself', 'acme'],
    ['another group', 'zeta/api'],
  ])('refuses a project of %s', (_what, projectPath) => {
    expect(() => relativeProjectPath('acme', projectPath)).toThrow(`${projectPath} is not in the group acme`);
  });
});

describe('group_backup set: the names of a set’s files', () => {
  it.each([
    'group.tar.gz',
    'group.relations/self.ndjson.gz',
    'group.relations/milestones.ndjson.gz',
    'projects/web.tar.gz',
    'projects/platform/api.tar.gz',
  ])('takes %j for a file of a set', (file) => {
    expect(isSetFileName(file)).toBe(true);
  });

  it.each([
    ['a climb out through projects/', 'projects/../../x.tar.gz'],
    ['a climb inside projects/', 'projects/platform/../api.tar.gz'],
    ['a climb after an archive name', 'projects/x.tar.gz/../../y.tar.gz'],
    ['a climb out through group.relations/', 'group.relations/../../x'],
    ['group.relations/..', 'group.relations/..'],
    ['group.relations/.', 'group.relations/.'],
    ['a relations file in a subfolder', 'group.relations/sub/x.ndjson.gz'],
    ['a relations file with a backslash', 'group.relations/..\\x'],
    ['the relations folder itself', 'group.relations/'],
    ['a project archive of no name', 'projects/.tar.gz'],
    ['a project file that is not an archive', 'projects/api.zip'],
    ['an absolute path', '/etc/passwd'],
    ['a path outside the set', '../../etc/passwd'],
    ['the set’s own description', 'set.json'],
    ['the group’s manifest', '../manifest.json'],
    ['another case', 'GROUP.TAR.GZ'],
    ['an archive of before sets', '2026-11-24T020000Z.tar.gz'],
  ])('refuses %s (%j)', (_what, file) => {
    expect(isSetFileName(file)).toBe(false);
  });

  it('lists the group archive first, then the relations, then the projects', () => {
    expect(filesOf(aSetFile()).map((file) => file.file)).toEqual([
      'group.tar.gz',
      'group.relations/self.ndjson.gz',
      'projects/platform/api.tar.gz',
      'projects/web.tar.gz',
    ]);
    const { relations: _relations, ...withoutRelations } = aSetFile();
    expect(filesOf(withoutRelations).map((file) => file.file)).toEqual([
      'group.tar.gz',
      'projects/platform/api.tar.gz',
      'projects/web.tar.gz',
    ]);
  });
});

describe('group_backup set: what set.json says', () => {
  it('finds nothing wrong with a set.json as group_backup writes it', () => {
    expect(setFileProblem(aSetFile())).toBeUndefined();
  });

  it('takes a complete set with no relations and no projects (projects: false)', () => {
    const { relations: _relations, ...set } = aSetFile();
    expect(setFileProblem({ ...set, state: 'complete', projects: [], missing: [] })).toBeUndefined();
  });

  const project = aSetFile().projects[0];
  it.each<[string, (content: SetFileContent) => unknown, string]>([
    ['a list', () => [], 'not a JSON object'],
    ['null', () => null, 'not a JSON object'],
    [
      'another version',
      (content) => ({ ...content, version: 2 }),
      'not a backup set (version 1, kind forgewarden-backup-set)',
    ],
    [
      'another kind',
      (content) => ({ ...content, kind: 'forgewarden-manifest' }),
      'not a backup set (version 1, kind forgewarden-backup-set)',
    ],
    ['no group', (content) => ({ ...content, group: undefined }), 'group: expected { id, full_path }'],
    ['a group without its path', (content) => ({ ...content, group: { id: 7 } }), 'group: expected { id, full_path }'],
    [
      'a set name that is not a stamp',
      (content) => ({ ...content, set: '../..' }),
      'set: expected the folder name YYYY-MM-DDTHHMMSSZ',
    ],
    ['an unknown state', (content) => ({ ...content, state: 'done' }), 'state: expected complete or partial'],
    ['a start that is not a time', (content) => ({ ...content, taken_at: 'yesterday' }), 'taken_at: expected a time'],
    ['no end', (content) => ({ ...content, finished_at: undefined }), 'finished_at: expected a time'],
    [
      'a group archive of another name',
      (content) => ({ ...content, group_archive: { ...content.group_archive, file: 'other.tar.gz' } }),
      'group_archive: expected { file: group.tar.gz, bytes, sha256 }',
    ],
    [
      'a group archive without its size',
      (content) => ({ ...content, group_archive: { file: 'group.tar.gz', sha256: 'x' } }),
      'group_archive: expected { file: group.tar.gz, bytes, sha256 }',
    ],
    [
      'a relations file outside its folder',
      (content) => ({ ...content, relations: [{ file: 'group.relations/../../x', bytes: 1, sha256: 'x' }] }),
      'relations: expected files under group.relations/',
    ],
    [
      'a relations file that is a project archive',
      (content) => ({ ...content, relations: [{ ...project }] }),
      'relations: expected files under group.relations/',
    ],
    [
      'relations that are not a list',
      (content) => ({ ...content, relations: 'self' }),
      'relations: expected files under group.relations/',
    ],
    ['no projects', (content) => ({ ...content, projects: undefined }), 'projects: expected a list'],
    [
      'a project without its id',
      (content) => ({ ...content, projects: [content.projects[0], { ...project, id: 'api' }] }),
      'projects[1]: expected { id, path, name, file, bytes, sha256 }',
    ],
    [
      'a project archive leading outside',
      (content) => ({ ...content, projects: [{ ...project, file: 'projects/../../x.tar.gz' }] }),
      'projects[0]: expected { id, path, name, file, bytes, sha256 }',
    ],
    [
      'a project archive not at its path',
      (content) => ({ ...content, projects: [{ ...project, file: 'projects/web.tar.gz' }] }),
      'projects[0]: platform/api is not a project path with its archive under projects/',
    ],
    [
      'a project path leading outside',
      (content) => ({ ...content, projects: [{ ...project, path: '../api', file: 'projects/api.tar.gz' }] }),
      'projects[0]: ../api is not a project path with its archive under projects/',
    ],
    [
      'missing projects without their reason',
      (content) => ({ ...content, missing: [{ id: 33, path: 'platform/db' }] }),
      'missing: expected a list of { id, path, reason }',
    ],
    [
      'no missing list',
      (content) => ({ ...content, missing: undefined }),
      'missing: expected a list of { id, path, reason }',
    ],
  ])('says what is wrong with %s', (_what, edit, problem) => {
    expect(setFileProblem(edit(aSetFile()))).toBe(problem);
  });
});

describe('group_backup set: reading and writing set.json', () => {
  let setFolder: string;

  beforeEach(async () => {
    setFolder = await mkdtemp(join(tmpdir(), 'forgewarden-backup-set-'));
  });

  afterEach(async () => {
    await rm(setFolder, { recursive: true, force: true });
  });

  it('reads back what was written, leaving only set.json in the folder', async () => {
    await writeSetFile(files, setFolder, aSetFile());
    expect(await readSetFile(files, setFolder)).toEqual(aSetFile());
    expect(await readdir(setFolder)).toEqual([SET_FILE]);
  });

  it('says a folder without set.json is not a finished set, naming the file', async () => {
    await expect(readSetFile(files, setFolder)).rejects.toThrow(
      `${join(setFolder, 'set.json')}: no such file: ${setFolder} is not a finished backup set`,
    );
  });

  it('says set.json is not JSON, naming the file', async () => {
    await writeFile(join(setFolder, SET_FILE), '{"version": 1,');
    await expect(readSetFile(files, setFolder)).rejects.toThrow(
      new RegExp(`^${escapeRegExp(join(setFolder, 'set.json'))}: not JSON \\(`),
    );
  });

  it('says what is wrong with its content, naming the file', async () => {
    await writeFile(join(setFolder, SET_FILE), JSON.stringify({ ...aSetFile(), state: 'done' }));
    await expect(readSetFile(files, setFolder)).rejects.toThrow(
      `${join(setFolder, 'set.json')}: state: expected complete or partial`,
    );
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
