import { readJsonObject } from '../../engine/json';
import type { ActContext } from '../../engine/policy';
import { IN_PROGRESS_TTL_MS } from './group-backup.inflight';
import { isRelativeProjectPath } from './group-backup.set';

/**
 * Where each project of a set in progress is, kept in the policy's state before each step the forge cannot undo: a
 * process killed anywhere carries the same set on, and a project whose archive is in place is never exported again.
 */

/** A project of the set, as listed when the set began: the set is the tree as it was then. */
export interface SetProject {
  readonly id: number;
  /** Relative to the group: `platform/api`. */
  readonly path: string;
  readonly name: string;
}

/** Where one project of the set is. */
export interface Progress {
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

/** What the set's progress is kept under: the set's name is in each key, so a dropped set's keys run out alone. */
function progressKeys(groupId: number, set: string): { list: string; project: (id: number) => string } {
  return { list: `set:${groupId}:${set}:projects`, project: (id) => `set:${groupId}:${set}:project:${id}` };
}

/** Removes what a set's progress kept: once the set is written, or when it is dropped. */
export async function forgetProgress(context: ActContext, groupId: number, set: string): Promise<void> {
  const keys = progressKeys(groupId, set);
  const stored = readJsonObject(await context.state.get(keys.list));
  const listed: unknown[] = Array.isArray(stored?.projects) ? stored.projects : [];
  for (const project of listed) if (isSetProject(project)) await context.state.delete(keys.project(project.id));
  await context.state.delete(keys.list);
}

/** The progress of one set's projects: what Redis holds, and what this process holds of it now. */
export class ProjectProgress {
  private readonly keys: ReturnType<typeof progressKeys>;
  private readonly progress = new Map<number, Progress>();

  constructor(
    private readonly context: ActContext,
    groupId: number,
    set: string,
  ) {
    this.keys = progressKeys(groupId, set);
  }

  /** The set's projects as listed when it began, or undefined before it was listed. */
  async listed(): Promise<SetProject[] | undefined> {
    const stored = readJsonObject(await this.context.state.get(this.keys.list));
    return stored && Array.isArray(stored.projects) && stored.projects.every(isSetProject)
      ? stored.projects
      : undefined;
  }

  async keepList(projects: readonly SetProject[]): Promise<void> {
    await this.context.state.set(this.keys.list, JSON.stringify({ projects }), IN_PROGRESS_TTL_MS);
  }

  /** The project's progress as Redis holds it. */
  async stored(project: SetProject): Promise<Progress> {
    return asProgress(readJsonObject(await this.context.state.get(this.keys.project(project.id))));
  }

  /** Takes `progress` as the project's, as it was read (nothing written). */
  hold(project: SetProject, progress: Progress): void {
    this.progress.set(project.id, progress);
  }

  at(project: SetProject): Progress {
    return this.progress.get(project.id) ?? { attempts: 0 };
  }

  /** Neither in place nor given up. */
  isOpen(project: SetProject): boolean {
    const progress = this.at(project);
    return progress.done === undefined && progress.missing === undefined;
  }

  async save(project: SetProject, progress: Progress): Promise<Progress> {
    this.progress.set(project.id, progress);
    await this.context.state.set(this.keys.project(project.id), JSON.stringify(progress), IN_PROGRESS_TTL_MS);
    return progress;
  }
}

/**
 * A project's progress as Redis holds it, or none when it is not one (edited by hand, cut short): the project starts
 * over, rather than a time that cannot be read making its next look never due, or due at every turn.
 */
function asProgress(stored: Record<string, unknown> | undefined): Progress {
  if (!stored || typeof stored.attempts !== 'number' || !Number.isInteger(stored.attempts) || stored.attempts < 0)
    return { attempts: 0 };
  for (const field of ['requested_at', 'looked_at', 'downloaded_at'] as const) {
    if (stored[field] !== undefined && (typeof stored[field] !== 'string' || Number.isNaN(Date.parse(stored[field]))))
      return { attempts: 0 };
  }
  const done = stored.done as Record<string, unknown> | undefined;
  if (
    done !== undefined &&
    (typeof done !== 'object' || done === null || typeof done.bytes !== 'number' || typeof done.sha256 !== 'string')
  )
    return { attempts: 0 };
  if (stored.missing !== undefined && typeof stored.missing !== 'string') return { attempts: 0 };
  return stored as unknown as Progress;
}

function isSetProject(value: unknown): value is SetProject {
  const record = value as Record<string, unknown> | null;
  return (
    typeof record === 'object' &&
    record !== null &&
    typeof record.id === 'number' &&
    typeof record.path === 'string' &&
    isRelativeProjectPath(record.path) &&
    typeof record.name === 'string'
  );
}
