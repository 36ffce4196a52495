import { endpoint, type ProjectId } from '../transport/endpoint';
import type { MultipartPart } from '../transport/multipart';
import type { Transport } from '../transport/transport';
import type { DownloadedFile, ScheduledMessage } from '../types/group-transfer';
import type {
  ImportProjectParams,
  ProjectExportStatus,
  ProjectImportStatus,
  ScheduleProjectExportParams,
} from '../types/project-transfer';
import { downloadToFile } from './download';
import { projectExportStatusShape, projectImportStatusShape } from './shapes';

/**
 * Project export and import (GitLab's "Project import and export API"; beyond the forge's API specification). An
 * export is scheduled, polled until `finished`, then downloaded; an import uploads an archive and is polled on the
 * project it created. The forge limits each user to 6 export requests, 1 download of each project's export and 6
 * imports a minute: over a limit it answers 429 with `Retry-After`, a `RateLimitedError` for that request alone.
 */
export class ProjectTransferResource {
  constructor(private readonly transport: Transport) {}

  /** Schedules an export archive of the project (202); maintainers only. A finished archive stays downloadable meanwhile. */
  scheduleExport(project: ProjectId, params: ScheduleProjectExportParams = {}): Promise<ScheduledMessage> {
    return this.transport.json<ScheduledMessage>({
      method: 'POST',
      endpoint: endpoint`projects/${project}/export`,
      body: params.description !== undefined ? { description: params.description } : undefined,
    });
  }

  /** Where the export is: `none`, `queued`, `started`, `finished` (with `_links`), `regeneration_in_progress`, `failed`. */
  exportStatus(project: ProjectId): Promise<ProjectExportStatus> {
    return this.transport.json<ProjectExportStatus>({
      method: 'GET',
      endpoint: endpoint`projects/${project}/export`,
      shape: projectExportStatusShape,
    });
  }

  /**
   * Streams the finished export archive to `destination` (overwritten). While no archive is available the forge
   * answers 404: a `NotFoundError`, and the destination is not touched.
   */
  downloadExport(project: ProjectId, destination: string): Promise<DownloadedFile> {
    return downloadToFile(this.transport, endpoint`projects/${project}/export/download`, {}, destination);
  }

  /**
   * Creates a project from an export archive on disk (multipart upload, 201). The answer is the new project, its
   * import `scheduled`: poll `importStatus` on its id until `finished` or `failed`. A taken path is a
   * `ValidationError` unless `overwrite`; a file whose name does not end in `.gz` one too (422).
   */
  import(params: ImportProjectParams): Promise<ProjectImportStatus> {
    const parts: MultipartPart[] = [{ name: 'path', value: params.path }];
    if (params.namespace !== undefined) parts.push({ name: 'namespace', value: params.namespace });
    if (params.name !== undefined) parts.push({ name: 'name', value: params.name });
    if (params.overwrite !== undefined) parts.push({ name: 'overwrite', value: String(params.overwrite) });
    parts.push({ name: 'file', filePath: params.file, contentType: 'application/gzip' });
    return this.transport.json<ProjectImportStatus>({
      method: 'POST',
      endpoint: endpoint`projects/import`,
      multipart: parts,
      shape: projectImportStatusShape,
    });
  }

  /** The import that created the project: `import_status`, `import_error`, `failed_relations`; `none` if it was not imported. */
  importStatus(project: ProjectId): Promise<ProjectImportStatus> {
    return this.transport.json<ProjectImportStatus>({
      method: 'GET',
      endpoint: endpoint`projects/${project}/import`,
      shape: projectImportStatusShape,
    });
  }
}
