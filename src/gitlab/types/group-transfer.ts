/** Group export, import and relations export (GitLab's "Group and project import and export API"). */

/** Body of a 202 answer: an export was scheduled or an import accepted. */
export interface ScheduledMessage {
  message: string;
}

/** A relation export's status: `0` started, `1` finished, `-1` failed. */
export type RelationExportStatusCode = 0 | 1 | -1;

/** One entry of `GET /groups/:id/export_relations/status`. */
export interface RelationExportStatus {
  relation: string;
  status: RelationExportStatusCode;
  error: string | null;
  updated_at: string;
}

export interface ImportGroupParams {
  /** Name of the new group. */
  name: string;
  /** Path of the new group. */
  path: string;
  /** Local path of the export archive; it is streamed from disk, never read whole. */
  file: string;
  /** Parent group; without it the group is created at the top level. */
  parent_id?: number;
}

/** What a download wrote. */
export interface DownloadedFile {
  path: string;
  bytes: number;
}
