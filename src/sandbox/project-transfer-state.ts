import type {
  ProjectExportStatusValue,
  ProjectImportFailedRelation,
  ProjectImportStatusValue,
} from '../gitlab/types/project-transfer';
import { EXPORT_TTL_MS, type ExportedArchive } from './group-transfer-state';
import type { SandboxState } from './state';

/**
 * Project exports and imports in flight and done (GitLab's "Project import and export API"; `api/project-transfer.ts`
 * drives them, `project-archive.ts` writes and reads the archives). One export per project, whoever asked for it
 * (newer forges keep one per user); work runs after `exportDelayMs(state)` like the group exports'.
 */

/** The export being made: `queued` until the worker takes it, halfway through the delay; then `started`. */
export interface PendingExport {
  /** Only the latest request of a project stores its archive. */
  request: symbol;
  phase: 'queued' | 'started';
}

export interface ProjectExportRecord {
  pending: PendingExport | null;
  /** The last finished archive: downloadable (also while a newer one is made) until it expires. */
  archive: ExportedArchive | null;
  /** The last export failed (`failingExports`): no archive. */
  failed: boolean;
}

export interface ProjectImportRecord {
  status: Exclude<ProjectImportStatusValue, 'none' | 'canceled'>;
  /** One per import, as the forge's request correlation id. */
  correlation_id: string;
  /** Why the import failed (archive unreadable), else null. */
  error: string | null;
  /** Lines of relation files the import could not use; it finished without them. */
  failed_relations: ProjectImportFailedRelation[];
  /** With `overwrite`: the project whose path the import takes once it finishes (it is deleted then). */
  replaces: { projectId: number; path: string } | null;
}

export class ProjectTransferState {
  readonly exports = new Map<number, ProjectExportRecord>();
  /** Project id → the import that created it. */
  readonly imports = new Map<number, ProjectImportRecord>();
  /** Projects whose export fails (tests set this to see `export_status: failed`). */
  readonly failingExports = new Set<number>();
  private lastFailedRelationId = 0;

  exportRecord(projectId: number): ProjectExportRecord {
    let record = this.exports.get(projectId);
    if (!record) this.exports.set(projectId, (record = { pending: null, archive: null, failed: false }));
    return record;
  }

  /** The finished archive of a project, unless it has expired (then it is gone, as on the forge). */
  archive(projectId: number, now: number): ExportedArchive | undefined {
    const record = this.exports.get(projectId);
    if (record?.archive && now - record.archive.madeAt >= EXPORT_TTL_MS) record.archive = null;
    return record?.archive ?? undefined;
  }

  /** The forge's `Project#export_status`: a request in flight beside a downloadable archive is a regeneration. */
  exportStatus(projectId: number, now: number): ProjectExportStatusValue {
    const archive = this.archive(projectId, now);
    const record = this.exports.get(projectId);
    if (record?.pending) return archive ? 'regeneration_in_progress' : record.pending.phase;
    if (archive) return 'finished';
    return record?.failed ? 'failed' : 'none';
  }

  nextFailedRelationId(): number {
    this.lastFailedRelationId += 1;
    return this.lastFailedRelationId;
  }

  /** A deleted project's exports and import record go with it. */
  forgetProject(projectId: number): void {
    this.exports.delete(projectId);
    this.imports.delete(projectId);
    this.failingExports.delete(projectId);
  }
}

const states = new WeakMap<SandboxState, ProjectTransferState>();

export function projectTransferOf(state: SandboxState): ProjectTransferState {
  let transfer = states.get(state);
  if (!transfer) states.set(state, (transfer = new ProjectTransferState()));
  return transfer;
}
