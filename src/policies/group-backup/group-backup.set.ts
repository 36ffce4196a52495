import { join } from 'node:path';
import type { LocalFiles } from '../../effects/local-files';
import { writeFileAtomically } from './group-backup.disk';

/**
 * A backup set: one run of group_backup for one group, in its own folder `destination/GROUP_PATH/STAMP/`:
 *
 *     STAMP/group.tar.gz                    the forge's group export (the group and its subgroups, no projects)
 *     STAMP/group.relations/NAME.ndjson.gz  the relations export, with `relations: true`
 *     STAMP/projects/PATH.tar.gz            one project export per project of the group tree (PATH relative to the
 *                                           group: `platform/api` for acme/platform/api)
 *     STAMP/set.json                        what the set holds and lacks, written last (see BackupSet)
 *
 * `set.json` makes the folder stand alone (`restore --from FOLDER`); a name without a dot is always a whole, verified
 * archive (see docs/policies.md, `group_backup`, "What a set holds").
 */

export const SET_FILE = 'set.json';
export const GROUP_ARCHIVE = 'group.tar.gz';
export const GROUP_RELATIONS = 'group.relations';
export const PROJECTS_FOLDER = 'projects';

/** `complete`: the group and every project it had when the set began; `partial`: something is missing (`missing` says what). */
export type SetState = 'complete' | 'partial';

/** A file of the set, its path relative to the set's folder. */
export interface SetFile {
  readonly file: string;
  readonly bytes: number;
  readonly sha256: string;
}

/** A project's export in the set. */
export interface ProjectArchive extends SetFile {
  readonly id: number;
  /** The project's path relative to the group (`platform/api`): where a restore puts it under the new group. */
  readonly path: string;
  readonly name: string;
}

/** A project the set lacks, and why (its export kept failing, it went away meanwhile, the token may not export it). */
export interface MissingProject {
  readonly id: number;
  readonly path: string;
  readonly reason: string;
}

/** What `set.json` says of the set (and the group manifest of each set, see group-backup.files.ts). */
export interface BackupSet {
  /** The set's folder name, `YYYY-MM-DDTHHMMSSZ`: when the set began (its group export was requested). */
  readonly set: string;
  readonly state: SetState;
  /** When the set began: every archive in it holds data at least this new. */
  readonly taken_at: string;
  /** When its last archive was verified and the set written. */
  readonly finished_at: string;
  readonly group_archive: SetFile;
  readonly relations?: readonly SetFile[];
  /** In path order. */
  readonly projects: readonly ProjectArchive[];
  readonly missing: readonly MissingProject[];
}

/** `set.json`: the set, with the group it was taken of. */
export interface SetFileContent extends BackupSet {
  readonly version: 1;
  readonly kind: 'forgewarden-backup-set';
  readonly group: { readonly id: number; readonly full_path: string };
}

const SEGMENT = /^[a-zA-Z0-9_.][a-zA-Z0-9_.-]*$/;
const SET_NAME = /^\d{4}-\d{2}-\d{2}T\d{6}Z$/;

/** A set's name: a real instant, to the second, in UTC (`2026-11-24T020000Z`). */
export function isSetName(name: string): boolean {
  return SET_NAME.test(name) && stampTime(name) !== undefined;
}

/** When a set began, from its name: `2026-11-24T020000Z` → 2026-11-24T02:00:00.000Z. */
export function setNameTime(set: string): Date {
  const time = stampTime(set);
  if (!time) throw new Error(`${set}: not the name of a backup set`);
  return time;
}

/** The instant a stamp names, or undefined when it names none (a month 13, a 61st minute, February 30). */
function stampTime(stamp: string): Date | undefined {
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(stamp);
  if (!match) return undefined;
  const text = `${match[1]}T${match[2]}:${match[3]}:${match[4]}.000Z`;
  const time = new Date(text);
  // Date rolls an impossible date over (2026-02-30 → 2026-03-02); a stamp must name the instant it says.
  return !Number.isNaN(time.getTime()) && time.toISOString() === text ? time : undefined;
}

/** Whether `path` is a project path relative to a group: slug segments, none `.` or `..`, so nothing leads outside. */
export function isRelativeProjectPath(path: string): boolean {
  const segments = path.split('/');
  return segments.every((segment) => SEGMENT.test(segment) && segment !== '.' && segment !== '..');
}

/** Where a project's archive lies in its set: `projects/platform/api.tar.gz`. */
export function projectArchiveFile(relativePath: string): string {
  if (!isRelativeProjectPath(relativePath))
    throw new Error(`${relativePath}: not a project path relative to its group`);
  return `${PROJECTS_FOLDER}/${relativePath}.tar.gz`;
}

/** A project's path relative to the group it is backed up with: `acme/platform/api` in acme → `platform/api`. */
export function relativeProjectPath(groupFullPath: string, projectFullPath: string): string {
  const prefix = `${groupFullPath}/`;
  if (!projectFullPath.startsWith(prefix)) throw new Error(`${projectFullPath} is not in the group ${groupFullPath}`);
  return projectFullPath.slice(prefix.length);
}

/**
 * Whether `file` may be listed by a set: its group archive, a relations file, or a project archive, each under the
 * names above. A hand-edited `set.json` or manifest cannot make a check read, or a prune remove, anything else.
 */
export function isSetFileName(file: string): boolean {
  if (file === GROUP_ARCHIVE) return true;
  if (file.startsWith(`${GROUP_RELATIONS}/`))
    return /^[^/\\]+$/.test(file.slice(GROUP_RELATIONS.length + 1)) && !file.endsWith('/.') && !file.endsWith('/..');
  const project = /^projects\/(.+)\.tar\.gz$/.exec(file);
  return project !== null && isRelativeProjectPath(project[1] ?? '');
}

/** Every file the set lists, group archive first. */
export function filesOf(set: BackupSet): SetFile[] {
  return [set.group_archive, ...(set.relations ?? []), ...set.projects];
}

/** Reads and checks `set.json` in `setFolder`; an error names the file and what is wrong with it. */
export async function readSetFile(files: LocalFiles, setFolder: string): Promise<SetFileContent> {
  const path = join(setFolder, SET_FILE);
  const text = await files.readText(path);
  if (text === undefined) throw new Error(`${path}: no such file: ${setFolder} is not a finished backup set`);
  let content: unknown;
  try {
    content = JSON.parse(text);
  } catch (error) {
    throw new Error(`${path}: not JSON (${(error as Error).message})`);
  }
  const problem = setFileProblem(content);
  if (problem) throw new Error(`${path}: ${problem}`);
  return content as SetFileContent;
}

export async function writeSetFile(files: LocalFiles, setFolder: string, content: SetFileContent): Promise<void> {
  await writeFileAtomically(files, join(setFolder, SET_FILE), `${JSON.stringify(content, null, 2)}\n`);
}

/** What is wrong with a `set.json`'s content, or undefined. */
export function setFileProblem(value: unknown): string | undefined {
  if (!isObject(value)) return 'not a JSON object';
  if (value.version !== 1 || value.kind !== 'forgewarden-backup-set')
    return 'not a backup set (version 1, kind forgewarden-backup-set)';
  if (!isObject(value.group) || typeof value.group.id !== 'number' || typeof value.group.full_path !== 'string')
    return 'group: expected { id, full_path }';
  return backupSetProblem(value);
}

/** What is wrong with a set as `set.json` or the group manifest lists it, or undefined. */
export function backupSetProblem(value: Record<string, unknown>): string | undefined {
  if (typeof value.set !== 'string' || !isSetName(value.set)) return 'set: expected the folder name YYYY-MM-DDTHHMMSSZ';
  if (value.state !== 'complete' && value.state !== 'partial') return 'state: expected complete or partial';
  for (const field of ['taken_at', 'finished_at'] as const) {
    if (typeof value[field] !== 'string' || Number.isNaN(Date.parse(value[field]))) return `${field}: expected a time`;
  }
  if (!isSetFile(value.group_archive) || value.group_archive.file !== GROUP_ARCHIVE)
    return `group_archive: expected { file: ${GROUP_ARCHIVE}, bytes, sha256 }`;
  if (
    value.relations !== undefined &&
    !(
      Array.isArray(value.relations) &&
      value.relations.every((file) => isSetFile(file) && file.file.startsWith(`${GROUP_RELATIONS}/`))
    )
  ) {
    return `relations: expected files under ${GROUP_RELATIONS}/`;
  }
  if (!Array.isArray(value.projects)) return 'projects: expected a list';
  for (const [index, project] of value.projects.entries()) {
    if (
      !isSetFile(project) ||
      typeof project.id !== 'number' ||
      typeof project.path !== 'string' ||
      typeof project.name !== 'string'
    ) {
      return `projects[${index}]: expected { id, path, name, file, bytes, sha256 }`;
    }
    if (!isRelativeProjectPath(project.path) || project.file !== projectArchiveFile(project.path))
      return `projects[${index}]: ${project.path} is not a project path with its archive under projects/`;
  }
  if (
    !Array.isArray(value.missing) ||
    !value.missing.every(
      (entry) => isObject(entry) && typeof entry.path === 'string' && typeof entry.reason === 'string',
    )
  ) {
    return 'missing: expected a list of { id, path, reason }';
  }
  return undefined;
}

function isSetFile(value: unknown): value is SetFile & Record<string, unknown> {
  return (
    isObject(value) &&
    typeof value.file === 'string' &&
    isSetFileName(value.file) &&
    typeof value.bytes === 'number' &&
    typeof value.sha256 === 'string'
  );
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
