import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ForgeLimit, PolicyContext } from '../../engine/policy';
import { ApiError, ForbiddenError, NotFoundError } from '../../gitlab/transport/errors';
import { readJsonObject } from '../../engine/json';
import { ArchiveInvalidError, verifyArchive } from './group-backup.archive';
import { partialName, syncFile, syncFolder } from './group-backup.disk';
import { BACKUP_SET_BEHIND } from './group-backup.measures';
import { listSetProjects } from './group-backup.observer';
import { isRelativeProjectPath, type MissingProject, type ProjectArchive, projectArchiveFile, relativeProjectPath } from './group-backup.set';
import type { GroupBackupConfig } from './group-backup.schema';

/**
 * The projects of a backup set: every project of the group tree exported, downloaded and verified into
 * `STAMP/projects/PATH.tar.gz`, within the forge's limits, resumable at every step.
 *
 * - Export requests are paced by the forge's limit (`project_exports_per_minute`, counted in Redis for every replica
 *   and policy of the token), at most that many waiting on the forge at once.
 * - Each export's status is read `download_interval` apart (the first a few seconds after its request); a finished
 *   one is downloaded once (the forge allows one download a minute per project) under a dot-name, verified as a
 *   gzip tar, flushed and renamed into place.
 * - An export that fails, or is not ready within `timeout`, is requested again, up to MAX_EXPORT_ATTEMPTS times; then,
 *   as for a project gone from the forge or one the token may not export, the set goes on without it and says why.
 * - What each project has reached is kept in the policy's state before the step the forge cannot undo: a process
 *   killed anywhere carries the same set on, and a project whose archive is in place is never exported again.
 */

/** How often one project's export is requested before the set goes on without it. */
export const MAX_EXPORT_ATTEMPTS = 3;
/** The first look at an export comes this soon after its request (a small project is ready in seconds). */
const FIRST_LOOK_MS = 5_000;
/** The forge allows one download of a project's export a minute per user. */
const DOWNLOAD_SPACING_MS = 60_000;
/** As long as a set in progress is kept (see group-backup.actions.ts). */
const PROGRESS_TTL_MS = 30 * 86_400_000;

/** A project of the set, as listed when the set began: the set is the tree as it was then. */
interface SetProject {
  readonly id: number;
  /** Relative to the group: `platform/api`. */
  readonly path: string;
  readonly name: string;
}

/** Where one project of the set is, kept in the policy's state. */
interface Progress {
  /** When its export was last requested (read before the request was sent). */
  readonly requested_at?: string;
  /** How many times its export was requested. */
  readonly attempts: number;
  /** When its status was last read. */
  readonly looked_at?: string;
  /** When its download was last tried. */
  readonly downloaded_at?: string;
  /** Its archive, verified and in place. */
  readonly done?: { readonly bytes: number; readonly sha256: string };
  /** Why the set goes on without it. */
  readonly missing?: string;
}

export interface ProjectsOfSet {
  readonly projects: ProjectArchive[];
  readonly missing: MissingProject[];
}

/** What the set's progress is kept under, in the policy's state: the set's name is in each key, so a dropped set's keys run out alone. */
export function progressKeys(groupId: number, set: string): { list: string; project: (id: number) => string } {
  return { list: `set:${groupId}:${set}:projects`, project: (id) => `set:${groupId}:${set}:project:${id}` };
}

/** Removes what a set's progress kept: once the set is written, or when it is dropped. */
export async function forgetProgress(context: PolicyContext, groupId: number, set: string): Promise<void> {
  const keys = progressKeys(groupId, set);
  const stored = readJsonObject(await context.state.get(keys.list));
  const listed: unknown[] = Array.isArray(stored?.projects) ? stored.projects : [];
  for (const project of listed) if (isSetProject(project)) await context.state.delete(keys.project(project.id));
  await context.state.delete(keys.list);
}

export class SetProjects {
  private readonly keys: ReturnType<typeof progressKeys>;
  private readonly progress = new Map<number, Progress>();
  private readonly limit: ForgeLimit;
  private behind: boolean | undefined;

  constructor(
    private readonly config: GroupBackupConfig,
    private readonly context: PolicyContext,
    private readonly group: { readonly id: number; readonly fullPath: string },
    private readonly setFolder: string,
    set: string,
    /** The schedule's next run after the set began: a set that would end after it says so (BACKUP_SET_BEHIND). */
    private readonly nextRun: Date | undefined,
    /** The projects of the newest set before this one, which this one expects (see unseen). */
    private readonly lastSet: () => Promise<{ set: string; projects: ReadonlyArray<{ readonly id: number; readonly path: string }> } | undefined> = async () => undefined,
  ) {
    this.keys = progressKeys(group.id, set);
    this.limit = { name: 'project_export', perMinute: config.project_exports_per_minute };
  }

  private now(): Date {
    return this.context.clock.now();
  }

  /** Exports every project of the set not yet in place; answers the archives in place and the projects the set lacks. */
  async run(): Promise<ProjectsOfSet> {
    const projects = await this.list();
    for (const project of projects) this.progress.set(project.id, await this.load(project));
    for (;;) {
      const open = projects.filter((project) => this.isOpen(project));
      if (open.length === 0) break;
      await this.sayIfBehind(open);
      const waiting = open.filter((project) => this.at(project).requested_at !== undefined);
      for (const project of waiting) if (this.lookDueAt(project) <= this.now().getTime()) await this.look(project);
      let slotAt: number | undefined;
      let inFlight = open.filter((project) => this.isOpen(project) && this.at(project).requested_at !== undefined).length;
      for (const project of open) {
        if (inFlight >= this.limit.perMinute) break;
        if (!this.isOpen(project) || this.at(project).requested_at !== undefined) continue;
        const slot = await this.context.forgeLimits.take(this.limit, this.now());
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
      const times = still.filter((project) => this.at(project).requested_at !== undefined).map((project) => this.lookDueAt(project));
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
    const stored = readJsonObject(await this.context.state.get(this.keys.list));
    if (stored && Array.isArray(stored.projects) && stored.projects.every(isSetProject)) return stored.projects;
    const projects: SetProject[] = [];
    for await (const project of listSetProjects(this.config, this.context, this.group.id)) {
      projects.push({ id: project.id, path: relativeProjectPath(this.group.fullPath, project.path_with_namespace), name: project.name });
    }
    const unseen = await this.unseen(projects);
    projects.push(...unseen.map(({ project }) => project));
    projects.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    await this.context.state.set(this.keys.list, JSON.stringify({ projects }), PROGRESS_TTL_MS);
    for (const { project, why } of unseen) await this.save(project, { attempts: 0, missing: why });
    return projects;
  }

  /**
   * The last set's projects the listing no longer has, read by id: moved out of the tree or deleted (404 to an
   * administrator) they are left out; out of the token's sight (404 or 403 otherwise) they are missing from this set
   * too, so the set is partial rather than complete without them.
   */
  private async unseen(listed: readonly SetProject[]): Promise<Array<{ project: SetProject; why: string }>> {
    const last = await this.lastSet();
    const ids = new Set(listed.map((project) => project.id));
    const gone = (last?.projects ?? []).filter((project) => !ids.has(project.id));
    if (!last || gone.length === 0) return [];
    const me = await this.context.client.users.current();
    const administrator = 'is_admin' in me && me.is_admin === true;
    const unseen: Array<{ project: SetProject; why: string }> = [];
    for (const project of gone) {
      const where = `${this.group.fullPath}/${project.path} (id ${project.id})`;
      try {
        const now = await this.context.client.projects.show(project.id);
        if (!now.path_with_namespace.toLowerCase().startsWith(`${this.group.fullPath.toLowerCase()}/`)) {
          this.context.logger.log(`${where}: moved out of ${this.group.fullPath} (now ${now.path_with_namespace}); not in this set`);
          continue;
        }
        unseen.push({ project: { id: project.id, path: relativeProjectPath(this.group.fullPath, now.path_with_namespace), name: now.name }, why: `not listed by the forge now although it answers for it (${now.path_with_namespace})` });
      } catch (error) {
        if (!(error instanceof NotFoundError || error instanceof ForbiddenError)) throw error;
        if (error instanceof NotFoundError && administrator) {
          this.context.logger.log(`${where}: deleted (an administrator's token no longer finds it); not in this set`);
          continue;
        }
        unseen.push({ project: { id: project.id, path: project.path, name: project.path }, why: `not visible to the token now (${error.summary}); it was in the set ${last.set}` });
      }
    }
    return unseen;
  }

  private async load(project: SetProject): Promise<Progress> {
    let progress = asProgress(readJsonObject(await this.context.state.get(this.keys.project(project.id))));
    if (progress.missing) return progress;
    if (progress.done) {
      // The disk has the last word: an archive removed or cut since it was recorded is exported again, not listed.
      if ((await sizeOf(this.archivePath(project))) === progress.done.bytes) return progress;
      this.context.logger.warn(`${this.group.fullPath}/${project.path}: its archive is no longer on disk as recorded; it is exported again`);
      progress = await this.save(project, { attempts: 0 });
    }
    // In place but not recorded (killed between the rename and the record): verified again, and taken.
    const final = this.archivePath(project);
    if (await exists(final)) {
      try {
        const check = await verifyArchive(final);
        return this.save(project, { ...progress, done: { bytes: check.bytes, sha256: check.sha256 } });
      } catch (error) {
        if (!(error instanceof ArchiveInvalidError)) throw error;
        await rm(final, { force: true });
      }
    }
    return progress;
  }

  private at(project: SetProject): Progress {
    return this.progress.get(project.id) ?? { attempts: 0 };
  }

  private isOpen(project: SetProject): boolean {
    const progress = this.at(project);
    return progress.done === undefined && progress.missing === undefined;
  }

  private async save(project: SetProject, progress: Progress): Promise<Progress> {
    this.progress.set(project.id, progress);
    await this.context.state.set(this.keys.project(project.id), JSON.stringify(progress), PROGRESS_TTL_MS);
    return progress;
  }

  private archivePath(project: SetProject): string {
    return join(this.setFolder, projectArchiveFile(project.path));
  }

  private lookDueAt(project: SetProject): number {
    const progress = this.at(project);
    const requested = Date.parse(progress.requested_at ?? this.now().toISOString());
    if (progress.looked_at === undefined) return requested + Math.min(FIRST_LOOK_MS, this.config.download_interval);
    return Date.parse(progress.looked_at) + this.config.download_interval;
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
        if (this.now().getTime() - Date.parse(progress.requested_at ?? '') > this.config.timeout) {
          return this.attemptFailed(project, `its export was not ready ${Math.round(this.config.timeout / 60_000)} min after it was requested`);
        }
    }
  }

  private async download(project: SetProject): Promise<void> {
    const progress = this.at(project);
    if (progress.downloaded_at !== undefined && this.now().getTime() - Date.parse(progress.downloaded_at) < DOWNLOAD_SPACING_MS) return;
    await this.save(project, { ...progress, downloaded_at: this.now().toISOString() });
    const final = this.archivePath(project);
    const partial = join(dirname(final), partialName(`${project.path.split('/').at(-1)}.tar.gz`));
    await mkdir(dirname(final), { recursive: true, mode: 0o750 });
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
      check = await verifyArchive(partial);
    } catch (error) {
      await rm(partial, { force: true });
      if (error instanceof ArchiveInvalidError) return this.attemptFailed(project, `its archive was not whole (${error.reason})`);
      throw error;
    }
    await syncFile(partial);
    await rename(partial, final);
    await syncFolder(dirname(final));
    await this.save(project, { ...this.at(project), done: { bytes: check.bytes, sha256: check.sha256 } });
  }

  /** An export that did not give an archive: requested again, or after MAX_EXPORT_ATTEMPTS the set goes on without it. */
  private async attemptFailed(project: SetProject, why: string): Promise<void> {
    const progress = this.at(project);
    if (progress.attempts >= MAX_EXPORT_ATTEMPTS) {
      await this.save(project, { ...progress, missing: `${why}, after ${progress.attempts} export requests` });
      this.context.logger.warn(`${this.group.fullPath}/${project.path}: ${why}, after ${progress.attempts} export requests; the set goes on without it`);
      return;
    }
    await this.save(project, { attempts: progress.attempts, ...(progress.downloaded_at ? { downloaded_at: progress.downloaded_at } : {}) });
  }

  /**
   * Whether the forge's answer is about this project alone and final (gone, not exportable by this token, refused):
   * the set goes on without it, saying why. The forge away or over its limits is not: the backup stops, and the next
   * pass carries the set on.
   */
  private async goesWithout(project: SetProject, error: unknown): Promise<boolean> {
    let why: string | undefined;
    if (error instanceof NotFoundError) why = 'it is gone from the forge, or this token can no longer see it (404)';
    else if (error instanceof ForbiddenError) why = 'this token may not export it (403: exports need the Maintainer role)';
    else if (error instanceof ApiError && error.status >= 400 && error.status < 500 && error.status !== 401 && error.status !== 408 && error.status !== 429) why = error.summary;
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
      if (progress.done) archives.push({ id: project.id, path: project.path, name: project.name, file: projectArchiveFile(project.path), ...progress.done });
      else missing.push({ id: project.id, path: project.path, reason: progress.missing ?? 'not exported' });
    }
    return { projects: archives, missing };
  }
}

/**
 * A project's progress as Redis holds it, or none when it is not one (edited by hand, cut short): the project starts
 * over, rather than a time that cannot be read making its next look never due, or due at every turn.
 */
function asProgress(stored: Record<string, unknown> | undefined): Progress {
  if (!stored || typeof stored.attempts !== 'number' || !Number.isInteger(stored.attempts) || stored.attempts < 0) return { attempts: 0 };
  for (const field of ['requested_at', 'looked_at', 'downloaded_at'] as const) {
    if (stored[field] !== undefined && (typeof stored[field] !== 'string' || Number.isNaN(Date.parse(stored[field])))) return { attempts: 0 };
  }
  const done = stored.done as Record<string, unknown> | undefined;
  if (done !== undefined && (typeof done !== 'object' || done === null || typeof done.bytes !== 'number' || typeof done.sha256 !== 'string')) return { attempts: 0 };
  if (stored.missing !== undefined && typeof stored.missing !== 'string') return { attempts: 0 };
  return stored as unknown as Progress;
}

function isSetProject(value: unknown): value is SetProject {
  const record = value as Record<string, unknown> | null;
  return typeof record === 'object' && record !== null && typeof record.id === 'number' && typeof record.path === 'string' && isRelativeProjectPath(record.path) && typeof record.name === 'string';
}

async function sizeOf(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}
