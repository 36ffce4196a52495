import { join } from 'node:path';
import type { LocalFiles } from '../../effects/local-files';
import { sha256File } from './group-backup.archive';
import { isPartialName, writeFileAtomically } from './group-backup.disk';
import {
  type BackupSet,
  backupSetProblem,
  filesOf,
  GROUP_ARCHIVE,
  GROUP_RELATIONS,
  isSetFileName,
  isSetName,
} from './group-backup.set';

/**
 * The backup folder of one group: `destination/GROUP_PATH/`, holding one folder per backup set,
 * `YYYY-MM-DDTHHMMSSZ/` (see group-backup.set.ts), and `manifest.json`, which lists the sets with their state and
 * every file's size and SHA-256. Archives of versions before sets, `YYYY-MM-DDTHHMMSSZ.tar.gz` (with
 * `YYYY-MM-DDTHHMMSSZ.relations/` beside them), stay listed as sets of a group archive alone, kept and pruned alike.
 * Nothing is ever written under a final name before it is complete: files are written under a dot-name ending in
 * `.partial`, flushed, and renamed into place.
 */

export const MANIFEST = 'manifest.json';
const ARCHIVE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2})(\d{2})(\d{2})Z\.tar\.gz$/;

/** A set as the group's manifest lists it. */
export interface ListedSet extends BackupSet {
  /**
   * An archive of a version before sets: `STAMP.tar.gz` beside the manifest (its relations in `STAMP.relations/`),
   * listed as a complete set of its group archive alone. Its files are named as a set's (`group.tar.gz`,
   * `group.relations/NAME`) and found where that version wrote them (see pathOf).
   */
  readonly legacy?: true;
}

export interface Manifest {
  readonly version: 2;
  readonly group: { readonly id: number; readonly full_path: string };
  readonly updated_at: string;
  /** Newest first. */
  readonly sets: readonly ListedSet[];
}

/** `2026-11-24T02:00:00.123Z` → `2026-11-24T020000Z`: sortable, no colons (which some file systems refuse). */
export function stampOf(time: Date): string {
  return time
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replace(/:/g, '');
}

export function archiveName(stamp: string): string {
  return `${stamp}.tar.gz`;
}

export function relationsFolderName(stamp: string): string {
  return `${stamp}.relations`;
}

export function isArchiveName(name: string): boolean {
  return ARCHIVE.test(name);
}

/**
 * The group's manifest, or undefined when there is none yet. A manifest that cannot be read is an error naming the
 * file: the backups it lists must not be pruned, or added to, on a guess.
 */
export async function readManifest(files: LocalFiles, folder: string): Promise<Manifest | undefined> {
  const path = join(folder, MANIFEST);
  const text = await files.readText(path);
  if (text === undefined) return undefined;
  let manifest: unknown;
  try {
    manifest = JSON.parse(text);
  } catch (error) {
    throw new Error(`${path}: not JSON (${(error as Error).message}); move it aside to start a new manifest`);
  }
  const read = asManifest(manifest);
  if (typeof read === 'string') throw new Error(`${path}: ${read}; move it aside to start a new one`);
  return read;
}

/** The manifest, or what is wrong with it. A version 1 manifest (archives before sets) is read as sets of one archive. */
function asManifest(value: unknown): Manifest | string {
  if (typeof value !== 'object' || value === null) return 'not a backup manifest (a JSON object)';
  const record = value as Record<string, unknown>;
  const group = record.group as Manifest['group'];
  if (record.version === 1) {
    if (!Array.isArray(record.archives) || !record.archives.every(isVersion1Archive))
      return 'not a backup manifest (version 1 with group and archives)';
    const sets = record.archives.map(fromVersion1);
    for (const [index, set] of sets.entries()) {
      const problem = backupSetProblem(set as unknown as Record<string, unknown>);
      if (problem) return `archives[${index}]: ${problem}`;
    }
    return { version: 2, group, updated_at: String(record.updated_at), sets };
  }
  if (record.version !== 2 || !Array.isArray(record.sets))
    return 'not a backup manifest (version 2 with group and sets)';
  for (const [index, set] of (record.sets as unknown[]).entries()) {
    const problem =
      typeof set === 'object' && set !== null ? backupSetProblem(set as Record<string, unknown>) : 'not an object';
    if (problem) return `sets[${index}]: ${problem}`;
  }
  return record as unknown as Manifest;
}

interface Version1Archive {
  readonly file: string;
  readonly bytes: number;
  readonly sha256: string;
  readonly taken_at: string;
  readonly finished_at?: string;
  readonly relations?: readonly { readonly file: string; readonly bytes: number; readonly sha256: string }[];
}

function isVersion1Archive(entry: unknown): entry is Version1Archive {
  if (typeof entry !== 'object' || entry === null) return false;
  const record = entry as Record<string, unknown>;
  const isFile = (file: unknown) =>
    typeof file === 'object' &&
    file !== null &&
    typeof (file as Record<string, unknown>).file === 'string' &&
    typeof (file as Record<string, unknown>).bytes === 'number' &&
    typeof (file as Record<string, unknown>).sha256 === 'string';
  return (
    isFile(record) &&
    ARCHIVE.test(record.file as string) &&
    typeof record.taken_at === 'string' &&
    (record.relations === undefined || (Array.isArray(record.relations) && record.relations.every(isFile)))
  );
}

/** `STAMP.tar.gz` of version 1 as the set it is: its group archive alone, complete; relations under the set's names. */
function fromVersion1(entry: Version1Archive): ListedSet {
  const stamp = entry.file.replace(/\.tar\.gz$/, '');
  const relationsPrefix = `${stamp}.relations/`;
  return {
    set: stamp,
    legacy: true,
    state: 'complete',
    taken_at: entry.taken_at,
    finished_at: entry.finished_at ?? entry.taken_at,
    group_archive: { file: GROUP_ARCHIVE, bytes: entry.bytes, sha256: entry.sha256 },
    // A name outside the archive's relations folder stays as it was, and the manifest is refused for it (see
    // asManifest) rather than the file being read, or removed, where it points.
    ...(entry.relations
      ? {
          relations: entry.relations.map((file) => ({
            ...file,
            file: file.file.startsWith(relationsPrefix)
              ? `${GROUP_RELATIONS}/${file.file.slice(relationsPrefix.length)}`
              : file.file,
          })),
        }
      : {}),
    projects: [],
    missing: [],
  };
}

/** Writes the manifest in place of the old one, atomically: a reader sees the old one or the new one, never half. */
export async function writeManifest(files: LocalFiles, folder: string, manifest: Manifest): Promise<void> {
  await writeFileAtomically(files, join(folder, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
}

/** What else lies in the group's folder: sets and archives the manifest does not list, leftovers of interrupted writes. */
export interface FolderContents {
  /** Set folders (`STAMP/`) and archives (`STAMP.tar.gz`) the manifest does not list. */
  readonly unlisted: string[];
  readonly partials: string[];
}

export async function folderContents(
  files: LocalFiles,
  folder: string,
  manifest: Manifest | undefined,
): Promise<FolderContents> {
  const entries = await files.list(folder);
  const listed = new Set(manifest?.sets.map((set) => setLabel(set)) ?? []);
  const labels = entries.flatMap((entry) =>
    entry.isFolder && isSetName(entry.name) ? [`${entry.name}/`] : isArchiveName(entry.name) ? [entry.name] : [],
  );
  return {
    unlisted: labels.filter((label) => !listed.has(label)).sort(),
    partials: entries
      .map((entry) => entry.name)
      .filter(isPartialName)
      .sort(),
  };
}

/** How a set is named to people and in the folder: `STAMP/`, or `STAMP.tar.gz` for an archive of before sets. */
export function setLabel(set: Pick<ListedSet, 'set' | 'legacy'>): string {
  return set.legacy ? archiveName(set.set) : `${set.set}/`;
}

/** Where a file of a set lies on disk: in the set's folder, or beside the manifest for an archive of before sets. */
export function pathOf(folder: string, set: Pick<ListedSet, 'set' | 'legacy'>, file: string): string {
  if (!set.legacy) return join(folder, set.set, file);
  if (file === GROUP_ARCHIVE) return join(folder, archiveName(set.set));
  return join(folder, relationsFolderName(set.set), file.slice(GROUP_RELATIONS.length + 1));
}

/**
 * How closely a listed set is compared with the disk: `size` (every file present, with its recorded size: a stat
 * each) or `sha256` (every file read whole again, and hashed).
 */
export type DiskCheck = 'size' | 'sha256';

/**
 * Why a listed set does not stand on disk as the manifest records it (a file missing, of another size, other bytes,
 * or a name that is not one a set may list), or undefined when it does. A name that is not a set's is never counted,
 * so a hand-edited manifest cannot make a prune remove, or a check read, anything outside the group's sets.
 */
export async function setProblem(
  files: LocalFiles,
  folder: string,
  set: ListedSet,
  check: DiskCheck,
): Promise<string | undefined> {
  if (!isSetName(set.set)) return 'not the name of a set of this folder';
  if (set.legacy && set.projects.length > 0) return 'an archive of before sets cannot list projects';
  for (const file of filesOf(set)) {
    if (!isSetFileName(file.file)) return `${file.file} is not the name of a file of a set`;
    const path = pathOf(folder, set, file.file);
    const what = file.file === GROUP_ARCHIVE ? 'its group archive' : `its file ${file.file}`;
    const size = (await files.stat(path))?.size;
    if (size === undefined) return `${what} is missing from disk`;
    if (size !== file.bytes) return `${what} is ${size} bytes on disk, ${file.bytes} in the manifest`;
    if (check === 'sha256' && (await sha256File(files, path)).sha256 !== file.sha256)
      return `${what} has changed on disk: its SHA-256 is not the manifest's`;
  }
  return undefined;
}

/** Removes a set: its folder, or an archive of before sets and its relations; one already gone is fine (a prune cut short). */
export async function removeSet(
  files: LocalFiles,
  folder: string,
  set: Pick<ListedSet, 'set' | 'legacy'>,
): Promise<void> {
  // Names come from the manifest and the policy's state, both of which a person can edit.
  if (!isSetName(set.set)) throw new Error(`${join(folder, set.set)}: not the name of a backup set; not removed`);
  if (set.legacy) {
    await files.remove(join(folder, archiveName(set.set)));
    await files.remove(join(folder, relationsFolderName(set.set)));
    return;
  }
  await files.remove(join(folder, set.set));
}
