import { join } from 'node:path';
import type { ForgeLimit, ActContext } from '../../engine/policy';
import { NotFoundError } from '../../gitlab/transport/errors';
import { verifyArchive, verifyNdjsonGz } from './group-backup.archive';
import { isPartialName, partialName } from './group-backup.disk';
import type { ForgeExports } from './group-backup.export';
import { stampOf } from './group-backup.files';
import type { InflightRecord } from './group-backup.inflight';
import type { GroupBackupConfig } from './group-backup.schema';
import { GROUP_ARCHIVE, GROUP_RELATIONS, type SetFile } from './group-backup.set';

/**
 * The group's own export in a set (steps 1 and 2 of group-backup.backup.ts): requested, and again when the last request
 * is older than `timeout` (the forge may have dropped it); its download tried every `download_interval` (the forge
 * answers 404 until the archive is ready, and counts every try against its one-download-a-minute-per-group limit),
 * verified and renamed to `group.tar.gz`; relations likewise. What it reached is in the backup in progress.
 */

/** The forge's default limit of group export requests a user makes a minute. */
const GROUP_EXPORT_LIMIT: ForgeLimit = { name: 'group_export', perMinute: 6 };

export class GroupExport {
  constructor(
    private readonly config: GroupBackupConfig,
    private readonly context: ActContext,
    private readonly group: { readonly id: number; readonly fullPath: string },
    /** The group's backup folder: the set's folder is in it. */
    private readonly folder: string,
    private readonly inflight: InflightRecord,
    private readonly exports: ForgeExports,
  ) {}

  private now(): Date {
    return this.context.clock.now();
  }

  /** Step 1: the export requested, unless it was and is not older than `timeout`; the set is named by the first request. */
  async request(): Promise<void> {
    const client = this.context.client.groupTransfer;
    const requested = this.inflight.current.export_requested_at;
    if (requested !== undefined && !this.exports.overdue(Date.parse(requested))) return;
    const slot = await this.exports.turn(GROUP_EXPORT_LIMIT);
    // Read before the request, and the set is named by it: the forge exports after it receives the request, so
    // everything done on the forge before this instant is in the archive. A time read after the answer could name
    // the set after changes its export started too early to hold.
    const at = this.now();
    await client.scheduleExport(this.group.id);
    await slot.answered(this.now());
    if (this.config.relations) await client.scheduleRelationsExport(this.group.id);
    await this.inflight.save({
      set: this.inflight.current.set ?? stampOf(at),
      export_requested_at: at.toISOString(),
      ...(this.config.relations ? { relations_requested_at: at.toISOString() } : {}),
      last_download_at: undefined,
    });
  }

  /** Step 2: the archive (and relations) downloaded once ready, verified and renamed into place, then recorded. */
  async download(): Promise<void> {
    const { files } = this.context;
    const client = this.context.client.groupTransfer;
    await this.request();
    const folder = join(this.folder, this.inflight.setName());
    await files.makeFolder(folder, 0o750);
    const final = join(folder, GROUP_ARCHIVE);
    if (!(await files.exists(final))) {
      // Leftovers of earlier interrupted downloads: never under a final name, removed before a new one begins.
      for (const entry of await files.list(folder))
        if (isPartialName(entry.name)) await files.remove(join(folder, entry.name));
      const partial = join(folder, partialName(GROUP_ARCHIVE));
      await this.untilReady(async () => {
        try {
          await client.downloadExport(this.group.id, partial);
          return true;
        } catch (error) {
          if (error instanceof NotFoundError) return false;
          throw error;
        }
      });
      try {
        await this.exports.verified(partial);
      } catch (error) {
        // The next try asks for a new export rather than the same bytes again.
        await this.inflight.save({ export_requested_at: undefined });
        throw error;
      }
      if (this.config.relations) await this.downloadRelations(folder);
      await this.exports.placed(partial, final);
    }
    const archive = await verifyArchive(files, final);
    const relations: SetFile[] = [];
    if (this.config.relations) {
      const names = (await files.list(join(folder, GROUP_RELATIONS)))
        .map((entry) => entry.name)
        .filter((name) => !name.startsWith('.'));
      for (const name of names) {
        const check = await verifyNdjsonGz(files, join(folder, GROUP_RELATIONS, name));
        relations.push({ file: `${GROUP_RELATIONS}/${name}`, bytes: check.bytes, sha256: check.sha256 });
      }
    }
    await this.inflight.save({
      group_archive: { file: GROUP_ARCHIVE, bytes: archive.bytes, sha256: archive.sha256 },
      ...(this.config.relations ? { relations } : {}),
    });
  }

  /**
   * Tries `attempt` when the export is due a look (counting tries made before a restart), until it succeeds or the
   * export has been waited for longer than `timeout`.
   */
  private async untilReady(attempt: () => Promise<boolean>): Promise<void> {
    const requestedAt = Date.parse(this.inflight.current.export_requested_at ?? this.now().toISOString());
    for (;;) {
      const last = this.inflight.current.last_download_at;
      const wait =
        this.exports.lookDueAt(requestedAt, last === undefined ? undefined : Date.parse(last)) - this.now().getTime();
      // On the engine's clock: a test's fake clock moves through the wait instead of sleeping it.
      if (wait > 0) await this.context.clock.sleep(Math.min(wait, this.config.download_interval));
      if (this.exports.overdue(requestedAt)) {
        await this.inflight.save({ export_requested_at: undefined, last_download_at: undefined });
        throw new Error(
          `the export of ${this.group.fullPath} was ${this.exports.notReady}; it is requested again next pass`,
        );
      }
      await this.inflight.save({ last_download_at: this.now().toISOString() });
      if (await attempt()) return;
    }
  }

  /** Every relation's file once the relations export finished, verified, in a folder renamed into place as a whole. */
  private async downloadRelations(setFolder: string): Promise<void> {
    const { files } = this.context;
    const client = this.context.client.groupTransfer;
    let relations: string[] = [];
    await this.untilReady(async () => {
      const statuses = await client.relationsExportStatus(this.group.id);
      const failed = statuses.filter((entry) => entry.status === -1);
      if (failed.length > 0) {
        await this.inflight.save({ export_requested_at: undefined });
        throw new Error(
          `the relations export of ${this.group.fullPath} failed: ${failed.map((entry) => `${entry.relation} (${entry.error ?? 'no reason given'})`).join(', ')}`,
        );
      }
      relations = statuses.map((entry) => entry.relation);
      return statuses.length > 0 && statuses.every((entry) => entry.status === 1);
    });
    const partialFolder = join(setFolder, partialName(GROUP_RELATIONS));
    await files.remove(partialFolder);
    await files.makeFolder(partialFolder, 0o750);
    for (const relation of relations) {
      const file = join(partialFolder, `${relation}.ndjson.gz`);
      await client.downloadRelation(this.group.id, relation, file);
      await verifyNdjsonGz(files, file);
      await files.flush(file);
    }
    const final = join(setFolder, GROUP_RELATIONS);
    await files.remove(final);
    await files.rename(partialFolder, final);
  }
}
