import type { LocalFiles } from '../effects/local-files';
import type { GitlabClient } from '../gitlab/client';
import { ApiError } from '../gitlab/transport/errors';
import { type ArchiveCheck, ArchiveInvalidError, verifyArchive } from '../policies/group-backup/group-backup.archive';
import { findPlace, type GroupTarget, importGroup, isProblem, pathTakenProblem } from './group-import';
import type { RestoreReport } from './report';

/**
 * `restore --from FILE`: a group created from a backup through the forge's group import (multipart, streamed from
 * disk). Before anything is uploaded, the archive is verified and the path is checked free (`GET
 * /namespaces/:path/exists`); then the import is sent, and the restore waits until the forge has created the namespace
 * and says what it holds. The forge fills the group (subgroups, members) in the background: members keep their
 * membership only when their user exists. A dry run checks the archive and the path.
 */

export interface ArchiveRestoreInput {
  /** `--from` as typed: messages name the archive as the person named it. */
  readonly from: string;
  /** The archive, resolved. */
  readonly path: string;
  readonly target: GroupTarget;
  /** How long to wait for the forge to create the group. */
  readonly waitMs: number;
}

/** The archive verified as a whole group export, or undefined when it is not one (said in the report). */
export async function checkArchive(
  files: LocalFiles,
  input: ArchiveRestoreInput,
  report: RestoreReport,
): Promise<ArchiveCheck | undefined> {
  try {
    return await verifyArchive(files, input.path);
  } catch (error) {
    if (!(error instanceof ArchiveInvalidError)) throw error;
    report.complain(`${input.from} is not a group export archive: ${error.reason}; nothing was uploaded`);
    return undefined;
  }
}

/** Whether the group was restored from the checked archive (or, in a dry run, would be); what happened is in the report. */
export async function restoreArchive(
  client: GitlabClient,
  input: ArchiveRestoreInput,
  archive: ArchiveCheck,
  dryRun: boolean,
  report: RestoreReport,
): Promise<boolean> {
  const failed = (message: string): boolean => {
    report.complain(message);
    return false;
  };
  try {
    const place = await findPlace(client, input.target);
    if (isProblem(place)) return failed(`${place.problem}; nothing was uploaded`);
    const taken = await pathTakenProblem(client, place);
    if (taken) return failed(`${taken}; nothing was uploaded`);
    if (dryRun) {
      report.say(
        `would restore ${input.from} (${archive.bytes} bytes, sha256 ${archive.sha256}) as group ${place.fullPath}: the archive is valid and the path is free`,
      );
      report.say("dry run (the file's dry_run, or --dry-run): run with --no-dry-run to create the group");
      return true;
    }
    const imported = await importGroup(client, place, input.path, input.waitMs);
    if (isProblem(imported)) return failed(imported.problem);
    const created = imported.group;
    report.say(
      `restored ${input.from} (${archive.bytes} bytes, sha256 ${archive.sha256}) as group ${created.full_path} (id ${created.id}, ${created.visibility})`,
    );
    if (imported.lostAnswer)
      report.say(`the forge's answer to the upload was lost (${imported.lostAnswer}), but the group is there`);
    report.say(
      'the forge fills in its subgroups and members in the background; members keep their membership only where their user exists',
    );
    return true;
  } catch (error) {
    if (error instanceof ApiError) return failed(error.summary);
    throw error;
  }
}
