import type {
  MissingProject,
  ProjectArchive,
  SetFile,
  SetFileContent,
} from '../policies/group-backup/group-backup.set';

/**
 * The pure part of restoring a backup set (set-restore.ts does the rest): which projects a run restores, where each
 * goes under the new group, what is wrong with an archive on disk, and what became of each project.
 */

/** What became of a project of the set; a dry run says `would restore` and `would skip`. */
export type ProjectResult = 'restored' | 'would restore' | 'skipped' | 'would skip' | 'failed' | 'not in the set';

export interface ProjectRow {
  /** The project's path relative to the group, as `set.json` lists it. */
  readonly path: string;
  readonly result: ProjectResult;
  readonly detail: string;
}

/** The projects a run restores: all of the set, or the one `--project` names. */
export type Selection =
  /** `whole`: the set's every project (its `missing` entries are listed too), not the one `--project` names. */
  | { readonly kind: 'projects'; readonly projects: readonly ProjectArchive[]; readonly whole: boolean }
  /** `--project` names a project the set lacks (`missing`): there is no archive to restore. */
  | { readonly kind: 'missing'; readonly missing: MissingProject }
  /** `--project` names no project of the set: a usage error. */
  | { readonly kind: 'unknown'; readonly problem: string };

/** How many of the set's paths a usage error lists. */
const PATHS_LISTED = 5;

export function selectProjects(set: SetFileContent, project: string | undefined, setFolder: string): Selection {
  if (project === undefined) return { kind: 'projects', projects: set.projects, whole: true };
  // The forge routes paths case-insensitively, and so does the lookup of one.
  const same = (path: string): boolean => path.toLowerCase() === project.toLowerCase();
  const found = set.projects.find((entry) => same(entry.path));
  if (found) return { kind: 'projects', projects: [found], whole: false };
  const missing = set.missing.find((entry) => same(entry.path));
  if (missing) return { kind: 'missing', missing };
  const paths = set.projects.map((entry) => entry.path);
  const listed =
    paths.length === 0
      ? 'it holds no project'
      : `its projects include ${paths.slice(0, PATHS_LISTED).join(', ')}${paths.length > PATHS_LISTED ? ` and ${paths.length - PATHS_LISTED} more` : ''}`;
  return { kind: 'unknown', problem: `--project ${project}: not a project of the set ${setFolder}; ${listed}` };
}

/** Where a project of the set goes under the group at `groupFullPath`. */
export interface ProjectPlace {
  /** The project's folder relative to the group, empty for one directly in it (`platform` for `platform/api`). */
  readonly folder: string;
  /** The namespace it is imported into: the group, or the subgroup `folder` names. */
  readonly namespace: string;
  /** Its own path, the last segment. */
  readonly path: string;
  readonly fullPath: string;
}

export function projectPlace(groupFullPath: string, relativePath: string): ProjectPlace {
  const segments = relativePath.split('/');
  const folder = segments.slice(0, -1).join('/');
  return {
    folder,
    namespace: folder ? `${groupFullPath}/${folder}` : groupFullPath,
    path: segments.at(-1) ?? relativePath,
    fullPath: `${groupFullPath}/${relativePath}`,
  };
}

/** What reading an archive of the set from disk found. */
export type ArchiveFinding =
  | { readonly state: 'missing' }
  | { readonly state: 'invalid'; readonly reason: string }
  | { readonly state: 'read'; readonly bytes: number; readonly sha256: string };

/**
 * What is wrong with an archive against what `set.json` says of it, with `subject` (`its archive`, `the group
 * archive`) as the sentence's subject; undefined when it is whole and the one the backup verified.
 */
export function archiveProblem(subject: string, expected: SetFile, finding: ArchiveFinding): string | undefined {
  if (finding.state === 'missing') return `${subject} ${expected.file} is missing`;
  if (finding.state === 'invalid') return `${subject} ${expected.file} is not a whole archive: ${finding.reason}`;
  if (finding.bytes !== expected.bytes)
    return `${subject} ${expected.file} has ${finding.bytes} bytes, the set says ${expected.bytes}`;
  if (finding.sha256 !== expected.sha256)
    return `${subject}'s SHA-256 is not the set's (${expected.file} changed since the backup verified it)`;
  return undefined;
}

/** The rows of the set's `missing` entries that a run lists (all of them, unless `--project` names another). */
export function missingRows(set: SetFileContent, selection: Selection): ProjectRow[] {
  const listed =
    selection.kind === 'missing'
      ? [selection.missing]
      : selection.kind === 'projects' && selection.whole
        ? set.missing
        : [];
  return listed.map((entry) => ({ path: entry.path, result: 'not in the set', detail: entry.reason }));
}

/** Whether every project of the run was restored (or would be, in a dry run). */
export function allRestored(rows: readonly ProjectRow[]): boolean {
  return rows.every((row) => row.result === 'restored' || row.result === 'would restore');
}
