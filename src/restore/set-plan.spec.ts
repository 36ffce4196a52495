import type { ProjectArchive, SetFileContent } from '../policies/group-backup/group-backup.set';
import { archiveProblem, missingRows, projectPlace, selectProjects } from './set-plan';

const anArchive = (path: string, fields: Partial<ProjectArchive> = {}): ProjectArchive => ({
  id: 1,
  path,
  name: path.split('/').at(-1) ?? path,
  file: `projects/${path}.tar.gz`,
  bytes: 100,
  sha256: 'a'.repeat(64),
  ...fields,
});

const aSet = (paths: string[], missing: SetFileContent['missing'] = []): SetFileContent => ({
  version: 1,
  kind: 'forgewarden-backup-set',
  group: { id: 10, full_path: 'acme' },
  set: '2026-11-24T020000Z',
  state: missing.length > 0 ? 'partial' : 'complete',
  taken_at: '2026-11-24T02:00:00.000Z',
  finished_at: '2026-11-24T02:05:00.000Z',
  group_archive: { file: 'group.tar.gz', bytes: 10, sha256: 'b'.repeat(64) },
  projects: paths.map((path) => anArchive(path)),
  missing,
});

describe('restoring a set: which projects, where, and what is wrong with an archive', () => {
  const set = aSet(
    ['api', 'platform/billing', 'platform/console', 'platform/edge/gateway', 'web', 'zeta'],
    [{ id: 9, path: 'legacy', reason: 'its export kept failing' }],
  );

  it('selects every project without --project, and the one --project names (case-insensitively, as the forge routes)', () => {
    expect(selectProjects(set, undefined, 'SET')).toEqual({ kind: 'projects', projects: set.projects, whole: true });
    expect(selectProjects(set, 'Platform/Console', 'SET')).toEqual({
      kind: 'projects',
      projects: [set.projects[2]],
      whole: false,
    });
    expect(selectProjects(set, 'legacy', 'SET')).toEqual({ kind: 'missing', missing: set.missing[0] });
  });

  it('names a --project the set does not hold, with a few paths it does', () => {
    expect(selectProjects(set, 'platform/nope', 'SET')).toEqual({
      kind: 'unknown',
      problem:
        '--project platform/nope: not a project of the set SET; its projects include api, platform/billing, platform/console, platform/edge/gateway, web and 1 more',
    });
    expect(selectProjects(aSet(['api']), 'web', 'SET')).toMatchObject({
      problem: '--project web: not a project of the set SET; its projects include api',
    });
    expect(selectProjects(aSet([]), 'web', 'SET')).toMatchObject({
      problem: '--project web: not a project of the set SET; it holds no project',
    });
  });

  it("lists the set's missing projects when the whole set is restored, and only the one asked for otherwise", () => {
    const row = { path: 'legacy', result: 'not in the set', detail: 'its export kept failing' };
    expect(missingRows(set, selectProjects(set, undefined, 'SET'))).toEqual([row]);
    expect(missingRows(set, selectProjects(set, 'legacy', 'SET'))).toEqual([row]);
    expect(missingRows(set, selectProjects(set, 'api', 'SET'))).toEqual([]);
  });

  it.each([
    ['acme-restored', 'api', { folder: '', namespace: 'acme-restored', path: 'api', fullPath: 'acme-restored/api' }],
    [
      'acme-restored',
      'platform/api',
      { folder: 'platform', namespace: 'acme-restored/platform', path: 'api', fullPath: 'acme-restored/platform/api' },
    ],
    [
      'restores/acme',
      'platform/edge/gw',
      {
        folder: 'platform/edge',
        namespace: 'restores/acme/platform/edge',
        path: 'gw',
        fullPath: 'restores/acme/platform/edge/gw',
      },
    ],
  ])('puts %s + %s in its place', (group, relative, place) => {
    expect(projectPlace(group, relative)).toEqual(place);
  });

  it.each([
    [{ state: 'read', bytes: 100, sha256: 'a'.repeat(64) } as const, undefined],
    [{ state: 'missing' } as const, 'its archive projects/api.tar.gz is missing'],
    [
      { state: 'invalid', reason: 'truncated' } as const,
      'its archive projects/api.tar.gz is not a whole archive: truncated',
    ],
    [
      { state: 'read', bytes: 99, sha256: 'a'.repeat(64) } as const,
      'its archive projects/api.tar.gz has 99 bytes, the set says 100',
    ],
    [
      { state: 'read', bytes: 100, sha256: 'c'.repeat(64) } as const,
      "its archive's SHA-256 is not the set's (projects/api.tar.gz changed since the backup verified it)",
    ],
  ])('judges an archive found as %j', (finding, problem) => {
    expect(archiveProblem('its archive', anArchive('api'), finding)).toBe(problem);
  });
});
