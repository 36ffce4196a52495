import type { Timestamp } from './common';
import type { ProjectSummary } from './jobs';

/**
 * Project export and import, as GitLab's public API docs describe them ("Project import and export API"); the forge's
 * API specification does not cover them. Field names are the forge's (`API::Entities::ProjectExportStatus`,
 * `ProjectImportStatus`).
 */

/** Who the answer is about: the forge's `ProjectIdentity`, the fields it also answers for a job token's agents. */
export type ProjectIdentity = ProjectSummary;

/**
 * `none`: no export; `queued`, `started`: one is being made; `finished`: the archive can be downloaded;
 * `regeneration_in_progress`: an archive can be downloaded and a newer one is being made; `failed` (newer forges):
 * the last export failed.
 */
export const PROJECT_EXPORT_STATUSES = [
  'none',
  'queued',
  'started',
  'finished',
  'regeneration_in_progress',
  'failed',
] as const;
export type ProjectExportStatusValue = (typeof PROJECT_EXPORT_STATUSES)[number];

/** Where the finished archive is downloaded. */
export interface ProjectExportLinks {
  /** `GET /projects/:id/export/download`. */
  api_url: string;
  web_url: string;
}

/** `GET /projects/:id/export`. */
export interface ProjectExportStatus extends ProjectIdentity {
  export_status: ProjectExportStatusValue;
  /** Only while `export_status` is `finished`. */
  _links?: ProjectExportLinks;
}

export interface ScheduleProjectExportParams {
  /** Overrides the project's description in the archive. */
  description?: string;
}

/** `none` for a project that was not imported; `canceled` only for imports a person stopped. */
export const PROJECT_IMPORT_STATUSES = ['none', 'scheduled', 'started', 'finished', 'failed', 'canceled'] as const;
export type ProjectImportStatusValue = (typeof PROJECT_IMPORT_STATUSES)[number];

/** A relation the import could not restore (`API::Entities::ProjectImportFailedRelation`). */
export interface ProjectImportFailedRelation {
  id: number;
  created_at: Timestamp;
  exception_class: string;
  exception_message: string;
  source: string;
  relation_name: string;
  line_number: number | null;
}

/** `POST /projects/import` (201) and `GET /projects/:id/import`. */
export interface ProjectImportStatus extends ProjectIdentity {
  import_status: ProjectImportStatusValue;
  /** `gitlab_project` for an import of an export archive; null for a project that was not imported. */
  import_type: string | null;
  correlation_id: string | null;
  failed_relations: ProjectImportFailedRelation[];
  /**
   * Why the import failed; to a caller below maintainer the forge answers "Ask a maintainer to check the import
   * status for more details." instead.
   */
  import_error: string | null;
  /** Counts of imported objects, for imports from GitHub only. */
  stats?: Record<string, unknown> | null;
}

export interface ImportProjectParams {
  /** Local path of the export archive (its name must end in `.gz`); it is streamed from disk, never read whole. */
  file: string;
  /** Path of the new project. */
  path: string;
  /** The namespace (id or full path) the project is created in; the caller's own namespace when omitted. */
  namespace?: number | string;
  /** Name of the new project; the path when omitted. */
  name?: string;
  /**
   * Replace a project of the same path in that namespace once the import finishes; without it a taken path is a
   * `ValidationError` (400 `Path has already been taken`).
   */
  overwrite?: boolean;
}
