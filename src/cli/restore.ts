import { join, resolve } from 'node:path';
import { LocalFiles } from '../effects/local-files';
import { RedisForgeLimits } from '../engine/stores/forge-limits';
import { GitlabClient } from '../gitlab/client';
import { isRelativeProjectPath } from '../policies/group-backup/group-backup.set';
import { checkArchive, restoreArchive } from '../restore/archive-restore';
import { type GroupTarget, isProblem, type Problem } from '../restore/group-import';
import type { RestoreReport } from '../restore/report';
import { readSet, type SetRestoreInput } from '../restore/set-check';
import { allRestored } from '../restore/set-plan';
import { restoreSet } from '../restore/set-restore';
import type { SetRunEnd } from '../restore/set-run';
import { restoreSource } from '../restore/source';
import { EXIT_INVALID_CONFIG } from './config-file';
import { resultTable } from './restore-table';
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
const PATH_SEGMENT = /^[a-zA-Z0-9_.][a-zA-Z0-9_.-]*$/;
const RESERVED_ENDING = /\.(git|atom)$/;

/**
 * `restore`: a group created from a backup (src/restore/archive-restore.ts), or from a backup set's folder with each of
 * its projects (src/restore/set-restore.ts). This command reads and checks the options, prints what the restore says
 * as it goes and the table that ends a set's, and chooses the exit code. Like `once`, it follows the file's `dry_run`
 * (or `--dry-run`/`--no-dry-run`).
 */
export async function restoreCommand(options: RestoreOptions): Promise<number> {
  const report = new TerminalReport();
  const usage = (message: string): number => {
    report.complain(message);
    return EXIT_INVALID_CONFIG;
  };
  if (!options.from) return usage('--from PATH is required: the backup archive, or the backup set folder, to restore');
  if (!options.group) return usage('--group PATH is required: the path of the group to create');
  const files = new LocalFiles();
  const from = resolve(options.from);
  const source = await restoreSource(files, from);
  if (source.kind === 'none') return usage(`--from ${options.from}: no such file`);
  if (source.kind === 'sets')
    return usage(
      `--from ${options.from}: a folder of backup sets, not one; name one of them, such as ${join(options.from, source.newest)} (the newest)`,
    );
  if (source.kind === 'other') return usage(`--from ${options.from}: not a file`);
  const target = parseGroupTarget({ group: options.group, parentId: options.parentId, name: options.name });
  if (isProblem(target)) return usage(target.problem);
  const waitMs = Number(options.wait ?? DEFAULT_WAIT_SECONDS) * 1000;
  if (!Number.isFinite(waitMs) || waitMs <= 0) return usage(`--wait ${options.wait}: expected a number of seconds`);
  if (options.project !== undefined) {
    if (source.kind === 'archive')
      return usage(
        `--project ${options.project}: a project is restored from a backup set; --from names a set's folder, not an archive`,
      );
    if (!isRelativeProjectPath(options.project))
      return usage(
        `--project ${options.project}: expected a project's path relative to the group, as the set lists it (platform/api)`,
      );
    if (options.name !== undefined)
      return usage('--name names a group to create; with --project the group exists already');
  }
  if (source.kind === 'set')
    return fromSet(
      files,
      options,
      { from: options.from, folder: from, target, waitMs, project: options.project },
      report,
    );

  const input = { from: options.from, path: from, target, waitMs };
  const archive = await checkArchive(files, input, report);
  if (!archive) return 1;
  return withApp('restore', options, async (app, config) =>
    (await restoreArchive(app.get(GitlabClient), input, archive, config.dry_run, report)) ? 0 : 1,
  );
}

/** A set: read and checked from disk, then (unless that ended it) restored on the forge; every run ends with its table. */
async function fromSet(
  files: LocalFiles,
  options: AppCommandOptions,
  input: SetRestoreInput,
  report: TerminalReport,
): Promise<number> {
  const onDisk = await readSet(files, input, report);
  if (onDisk.kind === 'unreadable') return 1;
  if (onDisk.kind === 'unknown project') return EXIT_INVALID_CONFIG;
  if (onDisk.kind === 'ended') return report.table(onDisk.end);
  const { checked } = onDisk;
  // Counted in Redis: imports of a restore and of another process of the same token stay within one limit.
  return withApp('restore', options, async (app, config) =>
    report.table(await restoreSet(checked, app.get(GitlabClient), app.get(RedisForgeLimits), config.dry_run)),
  );
}

/** The group `--group`, `--parent-id` and `--name` name, or what is wrong with them (a usage error). */
function parseGroupTarget(options: { group: string; parentId?: string; name?: string }): GroupTarget | Problem {
  const segments = options.group.split('/');
  const path = segments.at(-1) ?? '';
  const parentPath = segments.slice(0, -1).join('/');
  if (!segments.every((segment) => PATH_SEGMENT.test(segment))) {
    return {
      problem: `--group ${options.group}: a group path is letters, digits, '_', '-' and '.', not starting with '-', segments separated by '/'`,
    };
  }
  // The forge refuses these after the upload, in words that do not match what was typed.
  if (segments.some((segment) => RESERVED_ENDING.test(segment)))
    return { problem: `--group ${options.group}: a group path cannot end in '.git' or '.atom'` };
  if (parentPath && options.parentId) return { problem: 'give either --parent-id or a full path in --group, not both' };
  let parentId: number | undefined;
  if (options.parentId !== undefined) {
    parentId = Number(options.parentId);
    if (!Number.isSafeInteger(parentId) || parentId <= 0)
      return { problem: `--parent-id ${options.parentId}: expected a group id (a positive whole number)` };
  }
  return { path, parentPath, parentId, name: options.name };
}

/** What the restore says, at the terminal as it says it: its result on stdout, problems and waits on stderr. */
class TerminalReport implements RestoreReport {
  private said = false;

  say(line: string): void {
    process.stdout.write(`${line}\n`);
    this.said = true;
  }

  complain(line: string): void {
    process.stderr.write(`forgewarden restore: ${line}\n`);
  }

  /** Prints the table below what was said; 0 when every project of the run was restored (or would be). */
  table(end: SetRunEnd): number {
    process.stdout.write(`${this.said ? '\n' : ''}${resultTable(end.groupFullPath, end.rows, end.dryRun)}`);
    return allRestored(end.rows) ? 0 : 1;
  }
}
