import { randomBytes } from 'node:crypto';
import { open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { sha256File } from './group-backup.archive';

/**
 * The backup folder of one group: `destination/GROUP_PATH/`, holding `YYYY-MM-DDTHHMMSSZ.tar.gz` archives (with
 * `YYYY-MM-DDTHHMMSSZ.relations/` beside them when relations are kept), `manifest.json`, and while a download runs a
 * dot-file ending in `.partial`. Nothing is ever written under a final name before it is complete: files are written
 * under a temporary name, flushed, and renamed into place.
 */

export const MANIFEST = 'manifest.json';
const ARCHIVE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2})(\d{2})(\d{2})Z\.tar\.gz$/;
export const PARTIAL_SUFFIX = '.partial';

/** A relations file kept beside an archive. */
export interface ManifestFile {
  readonly file: string;
  readonly bytes: number;
  readonly sha256: string;
}

/** One kept archive, as manifest.json lists it. */
export interface ManifestEntry extends ManifestFile {
  /**
   * When the export it holds was requested from the forge (the archive's name says the same, to the second): its data
   * is at least this new. Archives written before this rule say when their backup began, which was the same moment
   * unless the backup was carried on later.
   */
  readonly taken_at: string;
  /** When it was verified and put in place. */
  readonly finished_at: string;
  readonly relations?: readonly ManifestFile[];
}

export interface Manifest {
  readonly version: 1;
  readonly group: { readonly id: number; readonly full_path: string };
  readonly updated_at: string;
  /** Newest first. */
  readonly archives: readonly ManifestEntry[];
}

/** `2026-11-24T02:00:00.123Z` → `2026-11-24T020000Z`: sortable, no colons (which some file systems refuse). */
export function stampOf(time: Date): string {
  return time.toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/:/g, '');
}

export function archiveName(stamp: string): string {
  return `${stamp}.tar.gz`;
}

export function relationsFolderName(stamp: string): string {
  return `${stamp}.relations`;
}

export function partialName(name: string): string {
  return `.${name}${PARTIAL_SUFFIX}`;
}

export function isArchiveName(name: string): boolean {
  return ARCHIVE.test(name);
}

/**
 * The group's manifest, or undefined when there is none yet. A manifest that cannot be read is an error naming the
 * file: the backups it lists must not be pruned, or added to, on a guess.
 */
export async function readManifest(folder: string): Promise<Manifest | undefined> {
  const path = join(folder, MANIFEST);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  let manifest: unknown;
  try {
    manifest = JSON.parse(text);
  } catch (error) {
    throw new Error(`${path}: not JSON (${(error as Error).message}); move it aside to start a new manifest`);
  }
  if (!isManifest(manifest)) throw new Error(`${path}: not a backup manifest (version 1 with group and archives); move it aside to start a new one`);
  return manifest;
}

function isManifest(value: unknown): value is Manifest {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  return (
    record.version === 1 &&
    Array.isArray(record.archives) &&
    record.archives.every(
      (entry: unknown) =>
        typeof entry === 'object' &&
        entry !== null &&
        typeof (entry as Record<string, unknown>).file === 'string' &&
        typeof (entry as Record<string, unknown>).taken_at === 'string' &&
        typeof (entry as Record<string, unknown>).sha256 === 'string',
    )
  );
}

/** Writes the manifest in place of the old one, atomically: a reader sees the old one or the new one, never half. */
export async function writeManifest(folder: string, manifest: Manifest): Promise<void> {
  await writeFileAtomically(join(folder, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
}

/** Temp file beside the target, flushed to disk, renamed over it, and the folder flushed so the rename lasts. */
export async function writeFileAtomically(path: string, content: string): Promise<void> {
  const temporary = join(dirname(path), partialName(`${randomBytes(4).toString('hex')}.tmp`));
  const handle = await open(temporary, 'w', 0o644);
  try {
    await handle.writeFile(content);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, path);
  await syncFolder(dirname(path));
}

/** Flushes a file already written (a download) before it is renamed into place. */
export async function syncFile(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** A rename is durable once its folder is flushed; a file system that cannot flush a folder (some network ones) is let be. */
export async function syncFolder(folder: string): Promise<void> {
  try {
    const handle = await open(folder, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // EISDIR/EINVAL/EPERM on file systems without directory fsync: the rename itself has happened.
  }
}

/** What else lies in the group's folder: archives the manifest does not list, and leftovers of interrupted downloads. */
export interface FolderContents {
  readonly unlisted: string[];
  readonly partials: string[];
}

export async function folderContents(folder: string, manifest: Manifest | undefined): Promise<FolderContents> {
  let names: string[];
  try {
    names = await readdir(folder);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { unlisted: [], partials: [] };
    throw error;
  }
  const listed = new Set(manifest?.archives.map((entry) => entry.file) ?? []);
  return {
    unlisted: names.filter((name) => isArchiveName(name) && !listed.has(name)).sort(),
    partials: names.filter((name) => name.startsWith('.') && name.endsWith(PARTIAL_SUFFIX)).sort(),
  };
}

/**
 * How closely a listed archive is compared with the disk: `size` (present, with the recorded size of the archive and
 * of each relations file: a stat each) or `sha256` (read whole again, and hashed).
 */
export type DiskCheck = 'size' | 'sha256';

/**
 * Why a listed archive does not stand on disk as the manifest records it (missing, another size, other bytes, or a
 * name that is not one of this folder's archives), or undefined when it does. A name that is not an archive's is never
 * counted, so a hand-edited manifest cannot make a prune remove a file outside the group's archives.
 */
export async function archiveProblem(folder: string, entry: ManifestEntry, check: DiskCheck): Promise<string | undefined> {
  if (!isArchiveName(entry.file)) return 'not the name of an archive of this folder';
  const relationsFolder = `${relationsFolderName(entry.file.replace(/\.tar\.gz$/, ''))}/`;
  for (const file of [entry, ...(entry.relations ?? [])]) {
    if (file !== entry && !isRelationsFileOf(relationsFolder, file.file)) return `its relations file ${file.file} is not in ${relationsFolder}`;
    const path = join(folder, file.file);
    let size: number;
    try {
      size = (await stat(path)).size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return file === entry ? 'missing from disk' : `its relations file ${file.file} is missing from disk`;
      throw error;
    }
    const what = file === entry ? '' : `its relations file ${file.file} `;
    if (typeof file.bytes === 'number' && size !== file.bytes) return `${what}is ${size} bytes on disk, ${file.bytes} in the manifest`;
    if (check === 'sha256' && (await sha256File(path)).sha256 !== file.sha256) return `${what}has changed on disk: its SHA-256 is not the manifest's`;
  }
  return undefined;
}

/** `STAMP.relations/NAME`, NAME a plain file name: nothing a manifest lists leads out of the archive's own folder. */
function isRelationsFileOf(relationsFolder: string, file: string): boolean {
  const name = file.slice(relationsFolder.length);
  return file.startsWith(relationsFolder) && /^[^/\\]+$/.test(name) && name !== '.' && name !== '..';
}

/** Removes an archive and its relations folder; one already gone is fine (a prune that was interrupted). */
export async function removeBackup(folder: string, entry: Pick<ManifestEntry, 'file'>): Promise<void> {
  // Names come from the manifest and the policy's state, both of which a person can edit.
  if (!isArchiveName(entry.file)) throw new Error(`${join(folder, entry.file)}: not the name of an archive; not removed`);
  await rm(join(folder, entry.file), { force: true });
  const stamp = entry.file.replace(/\.tar\.gz$/, '');
  await rm(join(folder, relationsFolderName(stamp)), { recursive: true, force: true });
}
