import { join } from 'node:path';
import { type Clock, systemClock } from '../clock';
import { forgeTurn } from '../engine/forge-turn';
import type { ForgeLimit, ForgeLimits, ForgeSlot } from '../engine/policy';
import type { GitlabClient } from '../gitlab/client';
import { ApiError, NotFoundError, ValidationError } from '../gitlab/transport/errors';
import type { GroupDetail } from '../gitlab/types/groups';
import type { Project } from '../gitlab/types/projects';
import type { ProjectImportFailedRelation } from '../gitlab/types/project-transfer';
import type { ProjectArchive, SetFileContent } from '../policies/group-backup/group-backup.set';
import { findGroup, findPlace, importGroup, isProblem, mayHaveActed, pathTakenProblem } from './group-import';
import type { CheckedSet, SetRestoreInput } from './set-check';
import { type ProjectPlace, projectPlace, type ProjectResult } from './set-plan';
import { NOT_RESTORED, type SetRun, type SetRunEnd } from './set-run';

/**
 * `restore --from SET`: a backup set (group-backup.set.ts) restored as a new group with every project in its place.
 *
 * Before anything is uploaded, the set is read and checked (set-check.ts): a bad group archive stops the restore, a
 * bad project archive leaves that project out. The group is imported as `restore --from FILE` imports it; then, once
 * the forge has filled in the subgroups the projects go to, each project is imported into its place through the
 * forge's project import, its path checked free just before, the imports spaced to the forge's limit, each followed
 * until the forge says it finished or failed. `--project` restores one project into the existing group. A dry run
 * checks the archives and paths and says what it would do. Every run ends with a table of the set's projects (the
 * command prints it).
 */

/** The first wait between two looks at an import or a subgroup; it doubles up to MAX_POLL_MS. */
const FIRST_POLL_MS = 250;
const MAX_POLL_MS = 5_000;
/** The forge's limit of project imports: 6 a minute per user, counted with the daemon's other requests of it. */
const PROJECT_IMPORT_LIMIT: ForgeLimit = { name: 'project_import', perMinute: 6 };

/**
 * The checked set restored on the forge: as a new group with its projects, or (`--project`) one project into the
 * existing group. The forge's refusal of a step that is no one project's stops the run, said in the table.
 */
export async function restoreSet(
  checked: CheckedSet,
  client: GitlabClient,
  limits: ForgeLimits,
  dryRun: boolean,
): Promise<SetRunEnd> {
  const restore = new SetRestore(client, limits, checked, dryRun);
  try {
    return checked.groupArchive ? await restore.asNewGroup(checked.groupArchive) : await restore.intoExistingGroup();
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return checked.run.stop(error.summary, `the restore stopped: ${error.summary}`, dryRun);
  }
}

/** The steps that talk to the forge, for one run. */
class SetRestore {
  private readonly clock: Clock = systemClock;
  private readonly input: SetRestoreInput;
  private readonly set: SetFileContent;
  private readonly run: SetRun;

  constructor(
    private readonly client: GitlabClient,
    /** Counted in Redis: imports of a restore and of another process of the same token stay within one limit. */
    private readonly limits: ForgeLimits,
    private readonly checked: CheckedSet,
    private readonly dryRun: boolean,
  ) {
    this.input = checked.input;
    this.set = checked.set;
    this.run = checked.run;
  }

  /** The whole set: the group from its archive at a free path, then every project whose archive is good. */
  async asNewGroup(archive: { bytes: number; sha256: string }): Promise<SetRunEnd> {
    const { client, input, run } = this;
    const place = await findPlace(client, input.target);
    if (isProblem(place)) return run.stop(`${place.problem}; nothing was uploaded`, NOT_RESTORED, this.dryRun);
    run.groupFullPath = place.fullPath;
    const taken = await pathTakenProblem(client, place);
    if (taken) return run.stop(`${taken}; nothing was uploaded`, NOT_RESTORED, this.dryRun);
    const groupFile = join(input.from, this.set.group_archive.file);
    const projects = this.projectsWithGoodArchives();

    if (this.dryRun) {
      // Under a path that is free, every project path is free too: nothing more to ask the forge.
      for (const entry of projects) {
        run.settle(
          entry.path,
          'would restore',
          `would import ${entry.file} into ${projectPlace(place.fullPath, entry.path).namespace}`,
        );
      }
      run.report.say(
        `would restore ${groupFile} (${archive.bytes} bytes, sha256 ${archive.sha256}) as group ${place.fullPath}: the archive is valid and the path is free`,
      );
      run.report.say(
        "dry run (the file's dry_run, or --dry-run): run with --no-dry-run to create the group and its projects",
      );
      return run.end(true);
    }

    const imported = await importGroup(client, place, join(input.folder, this.set.group_archive.file), input.waitMs);
    if (isProblem(imported)) return run.stop(imported.problem, NOT_RESTORED, false);
    const { group } = imported;
    run.groupFullPath = group.full_path;
    run.report.say(
      `restored ${groupFile} (${archive.bytes} bytes, sha256 ${archive.sha256}) as group ${group.full_path} (id ${group.id}, ${group.visibility})`,
    );
    if (imported.lostAnswer)
      run.report.say(`the forge's answer to the upload was lost (${imported.lostAnswer}), but the group is there`);
    run.report.say('members of the group and its projects keep their membership only where their user exists');
    const relations = this.set.relations?.length ?? 0;
    // The forge's group import takes the group archive alone; the relations export is for reading, not restoring.
    if (relations > 0)
      run.report.say(
        `the set's relations export (${relations} ${relations === 1 ? 'file' : 'files'}) is not uploaded: the forge's group import does not take it`,
      );

    const places = projects.map((entry) => ({ entry, place: projectPlace(group.full_path, entry.path) }));
    const namespaces = await this.waitForNamespaces(
      group,
      places.map(({ place }) => place.folder),
    );
    for (const { entry, place } of places) {
      const namespace = namespaces.get(place.folder);
      if (namespace === undefined) {
        run.settle(
          entry.path,
          'skipped',
          `the group ${place.namespace} did not exist ${Math.round(input.waitMs / 1000)} s after the group's import; once it does: ${this.again(entry)}`,
        );
        continue;
      }
      const [result, detail] = await this.importProject(entry, place, namespace);
      run.settle(entry.path, result, detail);
    }
    return run.end(false);
  }

  /** `--project`: one project into the group, which exists already with the subgroup the project goes to. */
  async intoExistingGroup(): Promise<SetRunEnd> {
    const { client, input, run } = this;
    const { target } = input;
    let fullPath = target.parentPath ? `${target.parentPath}/${target.path}` : target.path;
    if (target.parentId !== undefined) {
      const parent = await findGroup(client, target.parentId);
      if (!parent)
        return run.stop(
          `the parent group with id ${target.parentId} does not exist, or this token cannot see it; nothing was uploaded`,
          `the parent group with id ${target.parentId} does not exist`,
          this.dryRun,
        );
      fullPath = `${parent.full_path}/${target.path}`;
    }
    const group = await findGroup(client, fullPath);
    if (!group) {
      return run.stop(
        `the group ${fullPath} does not exist, or this token cannot see it: --project restores into an existing group (without --project, restore creates the group and its projects); nothing was uploaded`,
        `the group ${fullPath} does not exist`,
        this.dryRun,
      );
    }
    run.groupFullPath = group.full_path;
    const [entry] = this.projectsWithGoodArchives();
    if (!entry) return run.end(this.dryRun);
    const place = projectPlace(group.full_path, entry.path);
    const namespace = place.folder ? await findGroup(client, place.namespace) : group;
    if (!namespace) {
      return run.stop(
        `the group ${place.namespace} does not exist, or this token cannot see it; ${entry.path} goes there, so it must exist first; nothing was uploaded`,
        `the group ${place.namespace} does not exist`,
        this.dryRun,
      );
    }
    if (this.dryRun) {
      const existing = await findProject(client, place.fullPath);
      if (existing) run.settle(entry.path, 'would skip', this.taken(existing, entry));
      else run.settle(entry.path, 'would restore', `would import ${entry.file} into ${namespace.full_path}`);
      run.report.say("dry run (the file's dry_run, or --dry-run): run with --no-dry-run to import the project");
      return run.end(true);
    }
    const [result, detail] = await this.importProject(entry, place, namespace.id);
    run.settle(entry.path, result, detail);
    return run.end(false);
  }

  /** The selected projects whose archive is whole and the set's; the others are settled as skipped, with why. */
  private projectsWithGoodArchives(): ProjectArchive[] {
    const good: ProjectArchive[] = [];
    for (const entry of this.run.unsettled()) {
      const problem = this.checked.archiveProblems.get(entry.path);
      if (problem) this.run.settle(entry.path, this.dryRun ? 'would skip' : 'skipped', problem);
      else good.push(entry);
    }
    return good;
  }

  /**
   * Waits (at most `--wait`) until the subgroups the projects go to exist: the forge creates them in the background
   * after the group's import. Answers the id of each that does, by its folder relative to the group ('' the group).
   */
  private async waitForNamespaces(group: GroupDetail, folders: readonly string[]): Promise<Map<string, number>> {
    const found = new Map<string, number>([['', group.id]]);
    let waiting = [...new Set(folders)].filter((folder) => !found.has(folder));
    const deadline = this.clock.monotonic() + this.input.waitMs;
    for (let delay = FIRST_POLL_MS; ; delay = Math.min(delay * 2, MAX_POLL_MS)) {
      for (const folder of waiting) {
        const subgroup = await findGroup(this.client, `${group.full_path}/${folder}`);
        if (subgroup) found.set(folder, subgroup.id);
      }
      waiting = waiting.filter((folder) => !found.has(folder));
      const left = deadline - this.clock.monotonic();
      if (waiting.length === 0 || left <= 0) return found;
      await this.clock.sleep(Math.min(delay, left));
    }
  }

  /**
   * One project: its path checked free, the archive uploaded in its turn, and the import followed until the forge
   * says it finished or failed. Everything the forge answers is this project's result; the others go on.
   */
  private async importProject(
    entry: ProjectArchive,
    place: ProjectPlace,
    namespaceId: number,
  ): Promise<[ProjectResult, string]> {
    const { client } = this;
    try {
      const existing = await findProject(client, place.fullPath);
      if (existing) return ['skipped', this.taken(existing, entry)];
      const slot = await this.importTurn();
      let projectId: number;
      let lostAnswer: string | undefined;
      try {
        projectId = (
          await client.projectTransfer.import({
            file: join(this.input.folder, entry.file),
            namespace: namespaceId,
            path: place.path,
            name: entry.name,
          })
        ).id;
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        // Taken between the check and the upload, or a project of the same name (the forge wants names unique too).
        if (error instanceof ValidationError && /taken/i.test(error.message)) {
          return [
            'skipped',
            `the forge refused the import (${error.summary}): another project has its path or name; ${this.moveFirst(entry)}`,
          ];
        }
        if (!mayHaveActed(error)) return ['failed', error.summary];
        // The answer was lost after the upload: the path, free a moment ago, tells whether the import went through.
        const found = await findProject(client, place.fullPath);
        if (!found)
          return [
            'failed',
            `${error.summary}; ${place.fullPath} does not exist, so the import has not gone through; running ${this.again(entry)} is safe`,
          ];
        projectId = found.id;
        lostAnswer = error.summary;
      } finally {
        await slot.answered(new Date(this.clock.now()));
      }
      return await this.followImport(entry, place, projectId, lostAnswer);
    } catch (error) {
      if (error instanceof ApiError) return ['failed', error.summary];
      throw error;
    }
  }

  /**
   * Waits until one more project import is within the forge's limit, saying so while it waits: a 429's retry would
   * send the whole upload again.
   */
  private importTurn(): Promise<ForgeSlot> {
    const clock = { now: () => new Date(this.clock.now()), sleep: (ms: number) => this.clock.sleep(ms) };
    return forgeTurn(this.limits, PROJECT_IMPORT_LIMIT, clock, (waitMs) =>
      this.run.report.complain(
        `waiting ${Math.ceil(waitMs / 1000)} s before the next project import: the forge takes ${PROJECT_IMPORT_LIMIT.perMinute} a minute from one user`,
      ),
    );
  }

  /** Looks at the import until it finished or failed, at most `--wait`. */
  private async followImport(
    entry: ProjectArchive,
    place: ProjectPlace,
    projectId: number,
    lostAnswer: string | undefined,
  ): Promise<[ProjectResult, string]> {
    const deadline = this.clock.monotonic() + this.input.waitMs;
    for (let delay = FIRST_POLL_MS; ; delay = Math.min(delay * 2, MAX_POLL_MS)) {
      const status = await this.client.projectTransfer.importStatus(projectId);
      switch (status.import_status) {
        case 'finished':
          return ['restored', restoredDetail(projectId, entry, status.failed_relations, lostAnswer)];
        case 'failed':
          return [
            'failed',
            `the forge's import failed: ${status.import_error ?? 'it gave no reason'}; it leaves project ${projectId} at the path: delete it, then run ${this.again(entry)}`,
          ];
        case 'canceled':
          return [
            'failed',
            `the import of project ${projectId} was canceled on the forge; delete it, then run ${this.again(entry)}`,
          ];
        case 'none':
          return ['failed', `${place.fullPath} (project ${projectId}) is there, but not made by an import`];
        default:
          break;
      }
      const left = deadline - this.clock.monotonic();
      if (left <= 0) {
        return [
          'failed',
          `the import had not finished after ${Math.round(this.input.waitMs / 1000)} s (${status.import_status}); the forge may still finish it: look at ${place.fullPath}`,
        ];
      }
      await this.clock.sleep(Math.min(delay, left));
    }
  }

  private taken(existing: Project, entry: ProjectArchive): string {
    return `the path is taken by project ${existing.id} (${existing.name}); ${this.moveFirst(entry)}`;
  }

  private moveFirst(entry: ProjectArchive): string {
    return `move or rename that project, then run ${this.again(entry)}`;
  }

  /** The command that restores this one project into the group, for the person to run later. */
  private again(entry: ProjectArchive): string {
    return `forgewarden restore --group ${this.run.groupFullPath} --from ${this.input.from} --project ${entry.path}`;
  }
}

function restoredDetail(
  projectId: number,
  entry: ProjectArchive,
  failed: readonly ProjectImportFailedRelation[],
  lostAnswer: string | undefined,
): string {
  const parts = [`project ${projectId}, from ${entry.file}`];
  if (failed.length > 0) {
    const relations = [...new Set(failed.map((relation) => relation.relation_name))].join(', ');
    parts.push(`${failed.length} ${failed.length === 1 ? 'record' : 'records'} of ${relations} could not be imported`);
  }
  if (lostAnswer) parts.push(`the answer to the upload was lost (${lostAnswer}), but the import went through`);
  return parts.join('; ');
}

/** The project at `fullPath`, or undefined when the forge says there is none (404). */
async function findProject(client: GitlabClient, fullPath: string): Promise<Project | undefined> {
  try {
    return await client.projects.show(fullPath);
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
}
