import type { LocalFiles } from '../effects/local-files';
import {
  GROUP_ARCHIVE,
  GROUP_RELATIONS,
  isSetName,
  PROJECTS_FOLDER,
  SET_FILE,
} from '../policies/group-backup/group-backup.set';

/**
 * What a restore's `--from` names: an archive (a backup's `.tar.gz`, or any group export of the forge), a backup
 * set's folder, a group's folder of sets (`DEST/acme`, which names none of them), nothing, or something else.
 */
export type RestoreSource =
  | { readonly kind: 'archive' }
  | { readonly kind: 'set' }
  | { readonly kind: 'sets'; readonly newest: string }
  | { readonly kind: 'none' }
  | { readonly kind: 'other' };

export async function restoreSource(files: LocalFiles, path: string): Promise<RestoreSource> {
  // Whatever keeps the path from being looked at, there is nothing there to restore from.
  const found = await files.stat(path).catch(() => undefined);
  if (!found) return { kind: 'none' };
  if (found.isFile) return { kind: 'archive' };
  if (!found.isFolder) return { kind: 'other' };
  const entries = await files.list(path);
  // A set without `set.json` (it is written last) is named as an unfinished set, not as a folder that is no archive.
  if (
    [SET_FILE, GROUP_ARCHIVE, GROUP_RELATIONS, PROJECTS_FOLDER].some((name) =>
      entries.some((entry) => entry.name === name),
    )
  )
    return { kind: 'set' };
  const sets = entries.filter((entry) => entry.isFolder && isSetName(entry.name)).map((entry) => entry.name);
  const newest = sets.at(-1);
  return newest === undefined ? { kind: 'other' } : { kind: 'sets', newest };
}
