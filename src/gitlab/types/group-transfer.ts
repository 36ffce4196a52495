/** Group export, import and relations export (spec 01 §4 "Group export, import and relations export"). */

/** Body of a 202 answer: an export was scheduled or an import accepted (spec 01 §7). */
export interface ScheduledMessage {
  message: string;
}

/** Spec 01 §3: `0` started, `1` finished, `-1` failed. */
export type RelationExportStatusCode = 0 | 1 | -1;

/** Spec 01 §2 "Group relation export status entry". */
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
  /** Parent group; without it the group is created at the top level (spec 01 §4 rule 3). */
  parent_id?: number;
}

/** What a download wrote. */
export interface DownloadedFile {
  path: string;
  bytes: number;
}
