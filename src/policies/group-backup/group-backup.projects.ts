import { dirname, join } from 'node:path';
import type { ForgeLimit, ActContext } from '../../engine/policy';
import { ApiError, ForbiddenError, NotFoundError } from '../../gitlab/transport/errors';
import { ArchiveInvalidError, verifyArchive } from './group-backup.archive';
import { partialName } from './group-backup.disk';
import type { ForgeExports } from './group-backup.export';
import { BACKUP_SET_BEHIND } from './group-backup.measures';
import { listSetProjects } from './group-backup.observer';
import { type Progress, ProjectProgress, type SetProject } from './group-backup.project-progress';
import type { GroupBackupConfig } from './group-backup.schema';
import { type MissingProject, type ProjectArchive, projectArchiveFile, relativeProjectPath } from './group-backup.set';
import { type LastSet, unseenProjects } from './group-backup.unseen';

/**
 * The projects of a backup set: each exported, downloaded and verified into `STAMP/projects/PATH.tar.gz`, paced by the
 * forge's limits and resumable (see docs/policies.md, `group_backup`, "How long a set takes" and "Resumable").
 */

/** How often one project's export is requested before the set goes on without it. */
export const MAX_EXPORT_ATTEMPTS = 3;
/** The forge allows one download of a project's export a minute per user. */
const DOWNLOAD_SPACING_MS = 60_000;

export interface ProjectsOfSet {
  readonly projects: ProjectArchive[];
  readonly missing: MissingProject[];
}

export class SetProjects {
  private readonly progress: ProjectProgress;
  private readonly limit: ForgeLimit;
  private behind: boolean | undefined;

  constructor(
    private readonly config: GroupBackupConfig,
    private readonly context: ActContext,
    private readonly exports: ForgeExports,
    private readonly group: { readonly id: number; readonly fullPath: string },
    private readonly setFolder: string,
    set: string,
    /** The schedule's next run after the set began: a set that would end after it says so (BACKUP_SET_BEHIND). */
    private readonly nextRun: Date | undefined,
    /** The projects of the newest set before this one, which this one expects (see unseenProjects). */
    private readonly lastSet: () => Promise<LastSet | undefined> = async () => undefined,
  ) {
    this.progress = new ProjectProgress(context, group.id, set);
    this.limit = { name: 'project_export', perMinute: config.project_exports_per_minute };
  }

  private now(): Date {
    return this.context.clock.now();
  }

  /** Exports every project of the set not yet in place; answers the archives in place and the projects the set lacks. */
  async run(): Promise<ProjectsOfSet> {
    const projects = await this.list();
    for (const project of projects) this.progress.hold(project, await this.load(project));
    for (;;) {
      const open = projects.filter((project) => this.isOpen(project));
      if (open.length === 0) break;
      await this.sayIfBehind(open);
      const waiting = open.filter((project) => this.at(project).requested_at !== undefined);
      for (const project of waiting) if (this.lookDueAt(project) <= this.now().getTime()) await this.look(project);
      let slotAt: number | undefined;
      let inFlight = open.filter(
        (project) => this.isOpen(project) && this.at(project).requested_at !== undefined,
      ).length;
      for (const project of open) {
        if (inFlight >= this.limit.perMinute) break;
        if (!this.isOpen(project) || this.at(project).requested_at !== undefined) continue;
        const slot = await this.exports.take(this.limit);
        if (slot.waitMs > 0) {
          slotAt = this.now().getTime() + slot.waitMs;
          break;
        }
        await this.request(project);
        await slot.answered(this.now());
        inFlight += 1;
      }
      const still = projects.filter((project) => this.isOpen(project));
      if (still.length === 0) break;
      const times = still
        .filter((project) => this.at(project).requested_at !== undefined)
        .map((project) => this.lookDueAt(project));
      if (slotAt !== undefined) times.push(slotAt);
      const next = times.length > 0 ? Math.min(...times) : this.now().getTime() + 1_000;
      const wait = next - this.now().getTime();
      // On the engine's clock: a test's fake clock moves through the wait instead of sleeping it.
      if (wait > 0) await this.context.clock.sleep(wait);
    }
    if (this.behind) await this.context.measures.set(BACKUP_SET_BEHIND, { group: this.group.fullPath }, 0);
    return this.result(projects);
  }

  /** The projects of the set: listed once, when the set began, and kept, so a set carried on is the same set. */
  private async list(): Promise<SetProject[]> {
    const stored = await this.progress.listed();
    if (stored) return stored;
    const projects: SetProject[] = [];
    for await (const project of listSetProjects(this.config, this.context, this.group.id)) {
      projects.push({
        id: project.id,
        path: relativeProjectPath(this.group.fullPath, project.path_with_namespace),
        name: project.name,
      });
    }
    const unseen = await unseenProjects(this.context, this.group.fullPath, projects, await this.lastSet());
    projects.push(...unseen.map(({ project }) => project));
    projects.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    await this.progress.keepList(projects);
    for (const { project, why } of unseen) await this.save(project, { attempts: 0, missing: why });
    return projects;
  }

  private async load(project: SetProject): Promise<Progress> {
    let progress = await this.progress.stored(project);
    if (progress.missing) return progress;
    if (progress.done) {
      // The disk has the last word: an archive removed or cut since it was recorded is exported again, not listed.
      if ((await this.context.files.stat(this.archivePath(project)))?.size === progress.done.bytes) return progress;
      this.context.logger.warn(
        `${this.group.fullPath}/${project.path}: its archive is no longer on disk as recorded; it is exported again`,
      );
      progress = await this.save(project, { attempts: 0 });
    }
    // In place but not recorded (killed between the rename and the record): verified again, and taken.
    const final = this.archivePath(project);
    if (await this.context.files.exists(final)) {
      try {
        const check = await verifyArchive(this.context.files, final);
        return this.save(project, { ...progress, done: { bytes: check.bytes, sha256: check.sha256 } });
      } catch (error) {
        if (!(error instanceof ArchiveInvalidError)) throw error;
        await this.context.files.remove(final);
      }
    }
    return progress;
  }

  private at(project: SetProject): Progress {
    return this.progress.at(project);
  }

  private isOpen(project: SetProject): boolean {
    return this.progress.isOpen(project);
  }

  private save(project: SetProject, progress: Progress): Promise<Progress> {
    return this.progress.save(project, progress);
  }

  private archivePath(project: SetProject): string {
    return join(this.setFolder, projectArchiveFile(project.path));
  }

  private lookDueAt(project: SetProject): number {
    const progress = this.at(project);
    const requested = Date.parse(progress.requested_at ?? this.now().toISOString());
    return this.exports.lookDueAt(
      requested,
      progress.looked_at === undefined ? undefined : Date.parse(progress.looked_at),
    );
  }

  /**
   * Requests the project's export. The request is recorded before it is sent: a process killed after sending it finds
   * the export on the forge (queued, started or finished) and waits for it rather than asking for a second one; one
   * killed before sending finds none and asks again.
   */
  private async request(project: SetProject): Promise<void> {
    const progress = this.at(project);
    const at = this.now().toISOString();
    await this.save(project, { attempts: progress.attempts + 1, requested_at: at });
    try {
      await this.context.client.projectTransfer.scheduleExport(project.id);
    } catch (error) {
      if (await this.goesWithout(project, error)) return;
      throw error;
    }
  }

  /** Reads the export's status and acts on it: waits, downloads, or requests it again. */
  private async look(project: SetProject): Promise<void> {
    let status;
    try {
      status = await this.context.client.projectTransfer.exportStatus(project.id);
    } catch (error) {
      if (await this.goesWithout(project, error)) return;
      throw error;
    }
    const progress = await this.save(project, { ...this.at(project), looked_at: this.now().toISOString() });
    switch (status.export_status) {
      case 'finished':
        return this.download(project);
      case 'failed':
        return this.attemptFailed(project, 'the forge says its export failed');
      case 'none':
        return this.attemptFailed(project, 'the forge has no export of it (it was dropped or expired)');
      default:
        if (this.exports.overdue(Date.parse(progress.requested_at ?? '')))
          return this.attemptFailed(project, `its export was ${this.exports.notReady}`);
    }
  }

  private async download(project: SetProject): Promise<void> {
    const progress = this.at(project);
    if (
      progress.downloaded_at !== undefined &&
      this.now().getTime() - Date.parse(progress.downloaded_at) < DOWNLOAD_SPACING_MS
    )
      return;
    await this.save(project, { ...progress, downloaded_at: this.now().toISOString() });
    const final = this.archivePath(project);
    const partial = join(dirname(final), partialName(`${project.path.split('/').at(-1)}.tar.gz`));
    await this.context.files.makeFolder(dirname(final), 0o750);
    try {
      await this.context.client.projectTransfer.downloadExport(project.id, partial);
    } catch (error) {
      // Finished a moment ago and gone now: another export of it began meanwhile; looked at again later.
      if (error instanceof NotFoundError) return;
      if (await this.goesWithout(project, error)) return;
      throw error;
    }
    let check;
    try {
      check = await this.exports.verified(partial);
    } catch (error) {
      if (error instanceof ArchiveInvalidError)
        return this.attemptFailed(project, `its archive was not whole (${error.reason})`);
      throw error;
    }
    await this.exports.placed(partial, final);
    await this.save(project, { ...this.at(project), done: { bytes: check.bytes, sha256: check.sha256 } });
  }

  /** An export that did not give an archive: requested again, or after MAX_EXPORT_ATTEMPTS the set goes on without it. */
  private async attemptFailed(project: SetProject, why: string): Promise<void> {
    const progress = this.at(project);
    if (progress.attempts >= MAX_EXPORT_ATTEMPTS) {
      await this.save(project, { ...progress, missing: `${why}, after ${progress.attempts} export requests` });
      this.context.logger.warn(
        `${this.group.fullPath}/${project.path}: ${why}, after ${progress.attempts} export requests; the set goes on without it`,
      );
      return;
    }
    await this.save(project, {
      attempts: progress.attempts,
      ...(progress.downloaded_at ? { downloaded_at: progress.downloaded_at } : {}),
    });
  }

  /**
   * Whether the forge's answer is about this project alone and final (gone, not exportable by this token, refused):
   * the set goes on without it, saying why. The forge away or over its limits is not: the backup stops, and the next
   * pass carries the set on.
   */
  private async goesWithout(project: SetProject, error: unknown): Promise<boolean> {
    let why: string | undefined;
    if (error instanceof NotFoundError) why = 'it is gone from the forge, or this token can no longer see it (404)';
    else if (error instanceof ForbiddenError)
      why = 'this token may not export it (403: exports need the Maintainer role)';
    else if (
      error instanceof ApiError &&
      error.status >= 400 &&
      error.status < 500 &&
      error.status !== 401 &&
      error.status !== 408 &&
      error.status !== 429
    )
      why = error.summary;
    if (why === undefined) return false;
    await this.save(project, { ...this.at(project), missing: why });
    this.context.logger.warn(`${this.group.fullPath}/${project.path}: ${why}; the set goes on without it`);
    return true;
  }

  /**
   * When what is left cannot be requested before the schedule's next run, at the forge's limit: said once on the
   * policy's measure (the console's overview and the alert read it) and in the log.
   */
  private async sayIfBehind(open: readonly SetProject[]): Promise<void> {
    if (!this.nextRun) return;
    const unrequested = open.filter((project) => this.at(project).requested_at === undefined).length;
    const endsAt = this.now().getTime() + (Math.ceil(unrequested / this.limit.perMinute) + 1) * 60_000;
    const behind = endsAt > this.nextRun.getTime();
    if (behind === this.behind) return;
    this.behind = behind;
    await this.context.measures.set(BACKUP_SET_BEHIND, { group: this.group.fullPath }, behind ? 1 : 0);
    if (behind) {
      this.context.logger.warn(
        `${this.group.fullPath}: the set cannot finish before the next scheduled one at ${this.nextRun.toISOString()}: ${open.length} projects left, about ${Math.ceil((endsAt - this.now().getTime()) / 60_000)} min at ${this.limit.perMinute} exports a minute`,
      );
    }
  }

  private result(projects: readonly SetProject[]): ProjectsOfSet {
    const archives: ProjectArchive[] = [];
    const missing: MissingProject[] = [];
    for (const project of projects) {
      const progress = this.at(project);
      if (progress.done)
        archives.push({
          id: project.id,
          path: project.path,
          name: project.name,
          file: projectArchiveFile(project.path),
          ...progress.done,
        });
      else missing.push({ id: project.id, path: project.path, reason: progress.missing ?? 'not exported' });
    }
    return { projects: archives, missing };
  }
}
