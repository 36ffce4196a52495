import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { GitlabClient } from '../gitlab/client';
import { ApiError, NetworkError, NotFoundError } from '../gitlab/transport/errors';
import { ArchiveInvalidError, verifyArchive } from '../policies/group-backup/group-backup.archive';
import { EXIT_INVALID_CONFIG } from './config-file';
import { type AppCommandOptions, withApp } from './with-app';

export interface RestoreOptions extends AppCommandOptions {
  /** The archive: a backup's `.tar.gz` (or any group export of the forge). */
  from?: string;
  /** The new group's path: a slug (`acme-restored`), or a full path whose parent exists (`acme/restored`). */
  group?: string;
  /** The new group's name; the path's last segment when omitted. */
  name?: string;
  /** The parent group's id, for a slug; a full path names its parent itself. */
  parentId?: string;
  /** How long to wait for the forge to create the group, in seconds. */
  wait?: string;
}

const PATH_SEGMENT = /^[a-zA-Z0-9_.][a-zA-Z0-9_.-]*$/;
const POLL_MS = 1_000;
const RESERVED_ENDING = /\.(git|atom)$/;
/** `--wait`'s default when the command is called without the command line's (which declares the same). */
const DEFAULT_WAIT_SECONDS = '600';

/**
 * `restore`: a group created from a backup through the forge's group import (multipart, streamed from disk). Before
 * anything is uploaded, the archive is verified and the path is checked free (`GET /namespaces/:path/exists`); then the
 * import is sent, and the command waits until the forge has created the namespace and says what it holds. The forge
 * fills the group (subgroups, members) in the background: members keep their membership only when their user exists.
 * Like `once`, it follows the file's `dry_run` (or `--dry-run`/`--no-dry-run`): a dry run checks the archive and the path.
 */
export async function restoreCommand(options: RestoreOptions): Promise<number> {
  const usage = (message: string): number => {
    process.stderr.write(`forgewarden restore: ${message}\n`);
    return EXIT_INVALID_CONFIG;
  };
  if (!options.from) return usage('--from FILE is required: the backup archive to restore');
  if (!options.group) return usage('--group PATH is required: the path of the group to create');
  const file = resolve(options.from);
  try {
    if (!(await stat(file)).isFile()) return usage(`--from ${options.from}: not a file`);
  } catch {
    return usage(`--from ${options.from}: no such file`);
  }
  const segments = options.group.split('/');
  const path = segments.at(-1) ?? '';
  const parentPath = segments.slice(0, -1).join('/');
  if (!segments.every((segment) => PATH_SEGMENT.test(segment))) {
    return usage(`--group ${options.group}: a group path is letters, digits, '_', '-' and '.', not starting with '-', segments separated by '/'`);
  }
  // The forge refuses these after the upload, in words that do not match what was typed.
  if (segments.some((segment) => RESERVED_ENDING.test(segment))) return usage(`--group ${options.group}: a group path cannot end in '.git' or '.atom'`);
  if (parentPath && options.parentId) return usage('give either --parent-id or a full path in --group, not both');
  let parentId: number | undefined;
  if (options.parentId !== undefined) {
    parentId = Number(options.parentId);
    if (!Number.isSafeInteger(parentId) || parentId <= 0) return usage(`--parent-id ${options.parentId}: expected a group id (a positive whole number)`);
  }
  const waitMs = Number(options.wait ?? DEFAULT_WAIT_SECONDS) * 1000;
  if (!Number.isFinite(waitMs) || waitMs <= 0) return usage(`--wait ${options.wait}: expected a number of seconds`);

  const fail = (message: string): number => {
    process.stderr.write(`forgewarden restore: ${message}\n`);
    return 1;
  };
  let archive;
  try {
    archive = await verifyArchive(file);
  } catch (error) {
    if (error instanceof ArchiveInvalidError) return fail(`${options.from} is not a group export archive: ${error.reason}; nothing was uploaded`);
    throw error;
  }

  return withApp('restore', options, async (app, config) => {
    const client = app.get(GitlabClient);
    try {
      const parentRef = parentPath || parentId;
      let parent: { id: number; full_path: string } | undefined;
      if (parentRef !== undefined) {
        parent = await findGroup(client, parentRef);
        if (!parent) return fail(`the parent group ${parentPath || `with id ${parentId}`} does not exist, or this token cannot see it; nothing was uploaded`);
      }
      const fullPath = parent ? `${parent.full_path}/${path}` : path;
      const scope = parent ? { parent_id: parent.id } : {};
      const taken = await client.namespaces.exists(path, scope);
      if (taken.exists) {
        const free = taken.suggests.length > 0 ? `; free: ${taken.suggests.map((slug) => (parent ? `${parent.full_path}/${slug}` : slug)).join(', ')}` : '';
        return fail(`the path ${fullPath} is taken${free}; nothing was uploaded`);
      }
      if (config.dry_run) {
        process.stdout.write(
          `would restore ${options.from} (${archive.bytes} bytes, sha256 ${archive.sha256}) as group ${fullPath}: the archive is valid and the path is free\n` +
            "dry run (the file's dry_run, or --dry-run): run with --no-dry-run to create the group\n",
        );
        return 0;
      }
      let lostAnswer: string | undefined;
      try {
        await client.groupTransfer.import({ name: options.name ?? path, path, file, ...(parent ? { parent_id: parent.id } : {}) });
      } catch (error) {
        // An answer lost after the upload (a proxy's 502 on a long upload, a reset) may follow an import that went
        // through: the path, free a moment ago, tells which.
        if (!(error instanceof ApiError) || !mayHaveActed(error)) throw error;
        if (!(await client.namespaces.exists(path, scope)).exists) {
          return fail(`${error.summary}; ${fullPath} does not exist, so the import has not gone through; running this command again is safe (it refuses the path should the group appear meanwhile)`);
        }
        lostAnswer = error.summary;
      }
      const deadline = performance.now() + waitMs;
      for (;;) {
        if ((await client.namespaces.exists(path, scope)).exists) break;
        if (performance.now() >= deadline) return fail(`the forge accepted the import, but ${fullPath} did not exist after ${Math.round(waitMs / 1000)} s; look at the forge's import status`);
        await sleep(POLL_MS);
      }
      const created = await client.groups.show(fullPath, { with_projects: false });
      process.stdout.write(
        `restored ${options.from} (${archive.bytes} bytes, sha256 ${archive.sha256}) as group ${created.full_path} (id ${created.id}, ${created.visibility})\n` +
          (lostAnswer ? `the forge's answer to the upload was lost (${lostAnswer}), but the group is there\n` : '') +
          'the forge fills in its subgroups and members in the background; members keep their membership only where their user exists\n',
      );
      return 0;
    } catch (error) {
      if (error instanceof ApiError) return fail(error.summary);
      throw error;
    }
  });
}

/** The group, or undefined when the forge says it does not exist (404). */
async function findGroup(client: GitlabClient, ref: string | number): Promise<{ id: number; full_path: string } | undefined> {
  try {
    return await client.groups.show(ref, { with_projects: false });
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
}

/** Whether a failed request may still have been carried out: no answer after sending, or a server-side failure. */
function mayHaveActed(error: ApiError): boolean {
  if (error instanceof NetworkError) return error.mayHaveReachedServer;
  return error.status === 0 || error.status >= 500;
}
