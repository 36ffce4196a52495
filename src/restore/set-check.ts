import { join } from 'node:path';
import type { LocalFiles } from '../effects/local-files';
import { ArchiveInvalidError, verifyArchive } from '../policies/group-backup/group-backup.archive';
import { readSetFile, type SetFile, type SetFileContent } from '../policies/group-backup/group-backup.set';
import type { GroupTarget } from './group-import';
import type { RestoreReport } from './report';
import { type ArchiveFinding, archiveProblem, selectProjects } from './set-plan';
import { NOT_RESTORED, SetRun, type SetRunEnd } from './set-run';

/**
 * A backup set read from disk before anything is uploaded (set-restore.ts restores it): `set.json` read, the projects
 * the run restores chosen, and every archive it lists verified and compared with it (size and SHA-256).
 */

export interface SetRestoreInput {
  /** `--from` as typed: messages name the set as the person named it. */
  readonly from: string;
  /** The set's folder, resolved. */
  readonly folder: string;
  readonly target: GroupTarget;
  /** How long each wait may take: the group's creation, its subgroups, each project's import. */
  readonly waitMs: number;
  /** `--project`: the one project to restore, its path relative to the group. */
  readonly project: string | undefined;
}

/** A set read from disk with its archives checked, ready for the forge. */
export interface CheckedSet {
  readonly input: SetRestoreInput;
  readonly set: SetFileContent;
  readonly run: SetRun;
  /** What is wrong with each selected project's archive, by its path (undefined: nothing). */
  readonly archiveProblems: ReadonlyMap<string, string | undefined>;
  /** The group archive as read, when the whole set is restored (not with `--project`). */
  readonly groupArchive: { readonly bytes: number; readonly sha256: string } | undefined;
}

/**
 * What reading the set from disk came to, each said in the report: a `set.json` that cannot be read, a `--project`
 * the set does not hold (a usage error), a run that ends before the forge (the project asked for is one the set lacks,
 * its group archive is not whole), or a set ready for the forge.
 */
export type SetOnDisk =
  | { readonly kind: 'unreadable' }
  | { readonly kind: 'unknown project' }
  | { readonly kind: 'ended'; readonly end: SetRunEnd }
  | { readonly kind: 'checked'; readonly checked: CheckedSet };

export async function readSet(files: LocalFiles, input: SetRestoreInput, report: RestoreReport): Promise<SetOnDisk> {
  const { from, folder, target } = input;
  let set: SetFileContent;
  try {
    set = await readSetFile(files, folder);
  } catch (error) {
    if (!(error instanceof Error)) throw error;
    report.complain(`${error.message}; nothing was uploaded`);
    return { kind: 'unreadable' };
  }
  const selection = selectProjects(set, input.project, from);
  if (selection.kind === 'unknown') {
    report.complain(selection.problem);
    return { kind: 'unknown project' };
  }
  const run = new SetRun(
    set,
    selection,
    target.parentPath ? `${target.parentPath}/${target.path}` : target.path,
    report,
  );
  if (selection.kind === 'missing') {
    report.complain(
      `${selection.missing.path} is not in the set ${from}: ${selection.missing.reason}; there is no archive of it to restore`,
    );
    return { kind: 'ended', end: run.end(false) };
  }

  let groupArchive: { bytes: number; sha256: string } | undefined;
  if (input.project === undefined) {
    const finding = await inspect(files, folder, set.group_archive);
    const problem = archiveProblem('the group archive', set.group_archive, finding);
    if (problem || finding.state !== 'read')
      return { kind: 'ended', end: run.stop(`${from}: ${problem}; nothing was uploaded`, NOT_RESTORED, false) };
    groupArchive = finding;
  }
  const archiveProblems = new Map<string, string | undefined>();
  for (const entry of selection.projects)
    archiveProblems.set(entry.path, archiveProblem('its archive', entry, await inspect(files, folder, entry)));
  return { kind: 'checked', checked: { input, set, run, archiveProblems, groupArchive } };
}

/** What one archive of the set is on disk: missing, not a whole archive (and why), or its size and SHA-256. */
async function inspect(files: LocalFiles, folder: string, file: SetFile): Promise<ArchiveFinding> {
  try {
    const { bytes, sha256 } = await verifyArchive(files, join(folder, file.file));
    return { state: 'read', bytes, sha256 };
  } catch (error) {
    if (error instanceof ArchiveInvalidError) return { state: 'invalid', reason: error.reason };
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { state: 'missing' };
    throw error;
  }
}
