import { readdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { LocalFiles } from '../effects/local-files';
import { GitlabClient } from '../gitlab/client';
import { ApiError } from '../gitlab/transport/errors';
import { ArchiveInvalidError, verifyArchive } from '../policies/group-backup/group-backup.archive';
import { GROUP_ARCHIVE, GROUP_RELATIONS, isRelativeProjectPath, isSetName, PROJECTS_FOLDER, SET_FILE } from '../policies/group-backup/group-backup.set';
import { EXIT_INVALID_CONFIG } from './config-file';
import { findPlace, importGroup, isProblem, parseGroupTarget, pathTakenProblem } from './restore-group';
import { restoreSet } from './restore-set';
import { type AppCommandOptions, withApp } from './with-app';

export interface RestoreOptions extends AppCommandOptions {
  /** The archive: a backup's `.tar.gz` (or any group export of the forge); or a backup set's folder. */
  from?: string;
  /** The new group's path: a slug (`acme-restored`), or a full path whose parent exists (`acme/restored`). */
  group?: string;
  /** The new group's name; the path's last segment when omitted. */
  name?: string;
  /** The parent group's id, for a slug; a full path names its parent itself. */
  parentId?: string;
  /** How long to wait for the forge to create the group (and, from a set, each namespace and project), in seconds. */
  wait?: string;
  /** From a set: only this project (its path relative to the group, as in `set.json`), into the existing group. */
  project?: string;
}

/** `--wait`'s default when the command is called without the command line's (which declares the same). */
const DEFAULT_WAIT_SECONDS = '600';

/**
 * `restore`: a group created from a backup through the forge's group import (multipart, streamed from disk). Before
 * anything is uploaded, the archive is verified and the path is checked free (`GET /namespaces/:path/exists`); then the
 * import is sent, and the command waits until the forge has created the namespace and says what it holds. The forge
 * fills the group (subgroups, members) in the background: members keep their membership only when their user exists.
 * Like `once`, it follows the file's `dry_run` (or `--dry-run`/`--no-dry-run`): a dry run checks the archive and the path.
 *
 * `--from` naming a backup set's folder restores the group and then each of its projects (restore-set.ts).
 */
export async function restoreCommand(options: RestoreOptions): Promise<number> {
  const usage = (message: string): number => {
    process.stderr.write(`forgewarden restore: ${message}\n`);
    return EXIT_INVALID_CONFIG;
  };
  if (!options.from) return usage('--from PATH is required: the backup archive, or the backup set folder, to restore');
  if (!options.group) return usage('--group PATH is required: the path of the group to create');
  const from = resolve(options.from);
  let found;
  try {
    found = await stat(from);
  } catch {
    return usage(`--from ${options.from}: no such file`);
  }
  let kind: 'file' | 'set';
  if (found.isFile()) kind = 'file';
  else if (found.isDirectory() && (await looksLikeSet(from))) kind = 'set';
  else {
    const sets = found.isDirectory() ? await setsIn(from) : [];
    if (sets.length > 0) return usage(`--from ${options.from}: a folder of backup sets, not one; name one of them, such as ${join(options.from, sets.at(-1) ?? '')} (the newest)`);
    return usage(`--from ${options.from}: not a file`);
  }
  const target = parseGroupTarget({ group: options.group, parentId: options.parentId, name: options.name });
  if (isProblem(target)) return usage(target.problem);
  const waitMs = Number(options.wait ?? DEFAULT_WAIT_SECONDS) * 1000;
  if (!Number.isFinite(waitMs) || waitMs <= 0) return usage(`--wait ${options.wait}: expected a number of seconds`);
  if (options.project !== undefined) {
    if (kind === 'file') return usage(`--project ${options.project}: a project is restored from a backup set; --from names a set's folder, not an archive`);
    if (!isRelativeProjectPath(options.project)) return usage(`--project ${options.project}: expected a project's path relative to the group, as the set lists it (platform/api)`);
    if (options.name !== undefined) return usage('--name names a group to create; with --project the group exists already');
  }
  if (kind === 'set') return restoreSet({ options, from: options.from, folder: from, target, waitMs, project: options.project });

  const fail = (message: string): number => {
    process.stderr.write(`forgewarden restore: ${message}\n`);
    return 1;
  };
  let archive;
  try {
    archive = await verifyArchive(new LocalFiles(), from);
  } catch (error) {
    if (error instanceof ArchiveInvalidError) return fail(`${options.from} is not a group export archive: ${error.reason}; nothing was uploaded`);
    throw error;
  }

  return withApp('restore', options, async (app, config) => {
    const client = app.get(GitlabClient);
    try {
      const place = await findPlace(client, target);
      if (isProblem(place)) return fail(`${place.problem}; nothing was uploaded`);
      const taken = await pathTakenProblem(client, place);
      if (taken) return fail(`${taken}; nothing was uploaded`);
      if (config.dry_run) {
        process.stdout.write(
          `would restore ${options.from} (${archive.bytes} bytes, sha256 ${archive.sha256}) as group ${place.fullPath}: the archive is valid and the path is free\n` +
            "dry run (the file's dry_run, or --dry-run): run with --no-dry-run to create the group\n",
        );
        return 0;
      }
      const imported = await importGroup(client, place, from, waitMs);
      if (isProblem(imported)) return fail(imported.problem);
      const created = imported.group;
      process.stdout.write(
        `restored ${options.from} (${archive.bytes} bytes, sha256 ${archive.sha256}) as group ${created.full_path} (id ${created.id}, ${created.visibility})\n` +
          (imported.lostAnswer ? `the forge's answer to the upload was lost (${imported.lostAnswer}), but the group is there\n` : '') +
          'the forge fills in its subgroups and members in the background; members keep their membership only where their user exists\n',
      );
      return 0;
    } catch (error) {
      if (error instanceof ApiError) return fail(error.summary);
      throw error;
    }
  });
}

/**
 * Whether a folder is a backup set: it holds `set.json` or what a set holds beside it. One without `set.json` is then
 * named as an unfinished set (the file is written last), not as a folder that is not an archive.
 */
async function looksLikeSet(folder: string): Promise<boolean> {
  const names = await readdir(folder);
  return [SET_FILE, GROUP_ARCHIVE, GROUP_RELATIONS, PROJECTS_FOLDER].some((name) => names.includes(name));
}

/** The set folders a group's backup folder holds (`DEST/acme`), oldest first. */
async function setsIn(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { withFileTypes: true });
  return entries
    .filter((entry) => entry.isDirectory() && isSetName(entry.name))
    .map((entry) => entry.name)
    .sort();
}
