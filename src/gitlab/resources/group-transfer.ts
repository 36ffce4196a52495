import { endpoint, type GroupId } from '../transport/endpoint';
import type { Transport } from '../transport/transport';
import { downloadToFile } from './download';
import type {
  DownloadedFile,
  ImportGroupParams,
  RelationExportStatus,
  ScheduledMessage,
} from '../types/group-transfer';

/** GitLab's "Group and project import and export API", the group side and relations export. */
export class GroupTransferResource {
  constructor(private readonly transport: Transport) {}

  /** Schedules an export archive of the group (202). */
  scheduleExport(group: GroupId): Promise<ScheduledMessage> {
    return this.transport.json<ScheduledMessage>({ method: 'POST', endpoint: endpoint`groups/${group}/export` });
  }

  /**
   * Streams the finished export archive to `destination` (overwritten). While no archive is available the forge
   * answers 404: a `NotFoundError`, and the destination is not touched.
   */
  downloadExport(group: GroupId, destination: string): Promise<DownloadedFile> {
    return downloadToFile(this.transport, endpoint`groups/${group}/export/download`, {}, destination);
  }

  /** Creates a group from an export archive on disk (multipart upload, 202). */
  import(params: ImportGroupParams): Promise<ScheduledMessage> {
    return this.transport.json<ScheduledMessage>({
      method: 'POST',
      endpoint: endpoint`groups/import`,
      multipart: [
        { name: 'name', value: params.name },
        { name: 'path', value: params.path },
        ...(params.parent_id !== undefined ? [{ name: 'parent_id', value: params.parent_id }] : []),
        { name: 'file', filePath: params.file, contentType: 'application/gzip' },
      ],
    });
  }

  /** Schedules a relations export: one file per top-level relation, for group migration (202). */
  scheduleRelationsExport(group: GroupId): Promise<ScheduledMessage> {
    return this.transport.json<ScheduledMessage>({
      method: 'POST',
      endpoint: endpoint`groups/${group}/export_relations`,
    });
  }

  /** The status of each relation of the last relations export. */
  relationsExportStatus(group: GroupId): Promise<RelationExportStatus[]> {
    return this.transport.json<RelationExportStatus[]>({
      method: 'GET',
      endpoint: endpoint`groups/${group}/export_relations/status`,
    });
  }

  /** Streams one relation's file (gzip-compressed newline-delimited JSON, kept compressed) to `destination`. */
  downloadRelation(group: GroupId, relation: string, destination: string): Promise<DownloadedFile> {
    return downloadToFile(
      this.transport,
      endpoint`groups/${group}/export_relations/download`,
      { relation },
      destination,
    );
  }
}
