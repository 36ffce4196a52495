import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { z } from 'zod';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineAction, param, readParams } from '../../engine/action-params';
import type { PolicyAction, PolicyContext } from '../../engine/policy';
import { NotFoundError } from '../../gitlab/transport/errors';
import { verifyArchive, verifyNdjsonGz } from './group-backup.archive';
import type { BackupParams, InflightBackup } from './group-backup.decide';
import {
  archiveName,
  folderContents,
  type Manifest,
  type ManifestEntry,
  type ManifestFile,
  partialName,
  readManifest,
  relationsFolderName,
  removeBackup,
  stampOf,
  syncFile,
  syncFolder,
  writeManifest,
} from './group-backup.files';
import { groupFolder, inflightKey, readInflight } from './group-backup.observer';
import { planRetention } from './group-backup.retention';
import { type GroupBackupConfig, groupBackupPolicy } from './group-backup.schema';

/**
 * One backup of one group, resumable at every step. Progress is kept in the policy's state (InflightBackup) before
 * each step that the forge or the disk cannot undo, so a process killed anywhere carries on where it was:
 *
 * 1. the export is requested (again, when the last request is older than `timeout`: the forge may have dropped it);
 * 2. its download is tried every `download_interval` (the forge answers 404 until the archive is ready, and counts
 *    every try against its one-download-a-minute-per-group limit) into a dot-file ending in `.partial`;
 * 3. the file is verified (gzip and tar structure, non-empty), flushed and renamed into place; relations likewise;
 * 4. the manifest is written with the new archive and without those the keep rules prune; the pruned files are
 *    removed last. A failed or unverified backup never prunes anything.
 */

/** The first download try comes this soon after the request (a small group is ready in seconds), later ones every interval. */
const FIRST_TRY_MS = 5_000;
/** How long the state of a backup in progress is kept: far beyond any timeout, so a stopped daemon finds it again. */
const INFLIGHT_TTL_MS = 30 * 86_400_000;

const backupParams = z.object({ group_id: param.integer(), group_path: param.text(), taken_at: param.text(), key: param.text() });

class Backup {
  private inflight: InflightBackup;
  readonly folder: string;
  readonly stamp: string;

  constructor(
    private readonly config: GroupBackupConfig,
    private readonly params: BackupParams,
    private readonly context: PolicyContext,
    inflight: InflightBackup | undefined,
  ) {
    // Carried on under the name it began with; a backup of another key (an older one abandoned) starts afresh.
    this.inflight = inflight?.key === params.key ? inflight : { key: params.key, taken_at: params.taken_at };
    this.folder = groupFolder(config, params.group_path);
    this.stamp = stampOf(new Date(this.inflight.taken_at));
  }

  private now(): Date {
    return this.context.currentTime?.() ?? new Date();
  }

  private async save(change: Partial<InflightBackup>): Promise<void> {
    this.inflight = { ...this.inflight, ...change };
    await this.context.state.set(inflightKey(this.params.group_id), JSON.stringify(this.inflight), INFLIGHT_TTL_MS);
  }

  async run(): Promise<string> {
    await mkdir(this.folder, { recursive: true, mode: 0o750 });
    await this.save({});
    const final = join(this.folder, archiveName(this.stamp));
    let entry: ManifestEntry;
    const manifest = await readManifest(this.folder);
    const listed = manifest?.archives.find((archive) => archive.file === archiveName(this.stamp));
    if (this.inflight.pruning && listed) {
      entry = listed;
    } else {
      if (!(await exists(final))) await this.downloadInto(final);
      entry = await this.describe(final);
    }
    const pruned = await this.record(manifest, entry);
    await this.context.state.delete(inflightKey(this.params.group_id));
    await this.context.metrics?.backupWritten(this.params.group_path, entry.bytes + (entry.relations ?? []).reduce((sum, file) => sum + file.bytes, 0), new Date(entry.finished_at));
    return `${this.params.group_path}/${entry.file}: ${entry.bytes} bytes, sha256 ${entry.sha256}${entry.relations ? `, ${entry.relations.length} relations files` : ''}; ${pruned.length === 0 ? 'nothing pruned' : `pruned ${pruned.join(', ')}`}`;
  }

  /** Steps 1 to 3: the archive (and relations) exported, downloaded, verified and renamed into place. */
  private async downloadInto(final: string): Promise<void> {
    // Leftovers of earlier interrupted downloads: never under a final name, removed before a new one begins.
    for (const name of (await folderContents(this.folder, undefined)).partials) await rm(join(this.folder, name), { recursive: true, force: true });
    const client = this.context.client.groupTransfer;
    const requested = this.inflight.export_requested_at ? Date.parse(this.inflight.export_requested_at) : undefined;
    if (requested === undefined || this.now().getTime() - requested > this.config.timeout) {
      await client.scheduleExport(this.params.group_id);
      if (this.config.relations) await client.scheduleRelationsExport(this.params.group_id);
      const at = this.now().toISOString();
      await this.save({ export_requested_at: at, ...(this.config.relations ? { relations_requested_at: at } : {}), last_download_at: undefined });
    }
    const partial = join(this.folder, partialName(archiveName(this.stamp)));
    await this.untilReady(async () => {
      try {
        await client.downloadExport(this.params.group_id, partial);
        return true;
      } catch (error) {
        if (error instanceof NotFoundError) return false;
        throw error;
      }
    });
    try {
      await verifyArchive(partial);
    } catch (error) {
      // A broken archive is not kept, and the next try asks for a new export rather than the same bytes again.
      await rm(partial, { force: true });
      await this.save({ export_requested_at: undefined });
      throw error;
    }
    if (this.config.relations) await this.downloadRelations();
    await syncFile(partial);
    await rename(partial, final);
    await syncFolder(this.folder);
  }

  /**
   * Tries `attempt` no more often than `download_interval` (counting tries made before a restart), until it succeeds or
   * the export has been waited for longer than `timeout`.
   */
  private async untilReady(attempt: () => Promise<boolean>): Promise<void> {
    const requestedAt = Date.parse(this.inflight.export_requested_at ?? this.now().toISOString());
    for (;;) {
      const last = this.inflight.last_download_at ? Date.parse(this.inflight.last_download_at) : undefined;
      const dueAt = last === undefined ? requestedAt + Math.min(FIRST_TRY_MS, this.config.download_interval) : last + this.config.download_interval;
      const wait = dueAt - this.now().getTime();
      if (wait > 0) await sleep(Math.min(wait, this.config.download_interval));
      if (this.now().getTime() - requestedAt > this.config.timeout) {
        await this.save({ export_requested_at: undefined, last_download_at: undefined });
        throw new Error(`the export of ${this.params.group_path} was not ready ${Math.round(this.config.timeout / 60_000)} min after it was requested; it is requested again next pass`);
      }
      await this.save({ last_download_at: this.now().toISOString() });
      if (await attempt()) return;
    }
  }

  /** Every relation's file once the relations export finished, verified, in a folder renamed into place as a whole. */
  private async downloadRelations(): Promise<void> {
    const client = this.context.client.groupTransfer;
    let relations: string[] = [];
    await this.untilReady(async () => {
      const statuses = await client.relationsExportStatus(this.params.group_id);
      const failed = statuses.filter((entry) => entry.status === -1);
      if (failed.length > 0) {
        await this.save({ export_requested_at: undefined });
        throw new Error(`the relations export of ${this.params.group_path} failed: ${failed.map((entry) => `${entry.relation} (${entry.error ?? 'no reason given'})`).join(', ')}`);
      }
      relations = statuses.map((entry) => entry.relation);
      return statuses.length > 0 && statuses.every((entry) => entry.status === 1);
    });
    const partialFolder = join(this.folder, partialName(relationsFolderName(this.stamp)));
    await rm(partialFolder, { recursive: true, force: true });
    await mkdir(partialFolder, { mode: 0o750 });
    for (const relation of relations) {
      const file = join(partialFolder, `${relation}.ndjson.gz`);
      await client.downloadRelation(this.params.group_id, relation, file);
      await verifyNdjsonGz(file);
      await syncFile(file);
    }
    const final = join(this.folder, relationsFolderName(this.stamp));
    await rm(final, { recursive: true, force: true });
    await rename(partialFolder, final);
  }

  /** The archive in place, as the manifest lists it (re-verified when the download happened before a restart). */
  private async describe(final: string): Promise<ManifestEntry> {
    const archive = await verifyArchive(final);
    const relations: ManifestFile[] = [];
    if (this.config.relations) {
      const folder = relationsFolderName(this.stamp);
      for (const name of await listFiles(join(this.folder, folder))) {
        const check = await verifyNdjsonGz(join(this.folder, folder, name));
        relations.push({ file: `${folder}/${name}`, bytes: check.bytes, sha256: check.sha256 });
      }
    }
    return {
      file: archiveName(this.stamp),
      bytes: archive.bytes,
      sha256: archive.sha256,
      taken_at: this.inflight.taken_at,
      finished_at: this.now().toISOString(),
      ...(this.config.relations ? { relations } : {}),
    };
  }

  /** Step 4: the manifest with the new archive, the keep rules applied, then the pruned files removed. */
  private async record(manifest: Manifest | undefined, entry: ManifestEntry): Promise<string[]> {
    const others = (manifest?.archives ?? []).filter((archive) => archive.file !== entry.file);
    const all = [entry, ...others].sort((a, b) => Date.parse(b.taken_at) - Date.parse(a.taken_at));
    const plan = this.config.keep
      ? planRetention(all.map((archive) => ({ name: archive.file, takenAt: new Date(archive.taken_at), archive })), this.config.keep, this.config.timezone)
      : undefined;
    const kept = plan ? plan.keep.map(({ item }) => item.archive) : all;
    const pruned = [...(this.inflight.pruning ?? []), ...(plan?.prune.map((item) => item.name) ?? [])];
    await this.save({ pruning: [...new Set(pruned)] });
    await writeManifest(this.folder, {
      version: 1,
      group: { id: this.params.group_id, full_path: this.params.group_path },
      updated_at: this.now().toISOString(),
      archives: kept,
    });
    for (const file of new Set(pruned)) await removeBackup(this.folder, { file });
    return [...new Set(pruned)];
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

async function listFiles(folder: string): Promise<string[]> {
  try {
    return (await readdir(folder)).filter((name) => !name.startsWith('.')).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

const backup = defineAction({
  read: (params) => readParams(groupBackupPolicy.type, backupParams, params),
  unchecked: 'it adds a backup; its prune removes archives only after checking what it keeps (see record)',
  run: async (params, context) => {
    const detail = await new Backup(policyConfig(context), params, context, await readInflight(context, params.group_id)).run();
    return { detail };
  },
});

/** Where the backups go and how long to wait live in the file, as it says now; the params name the group only. */
function policyConfig(context: PolicyContext): GroupBackupConfig {
  const policy = context.policy;
  if (policy?.type !== groupBackupPolicy.type) throw new Error('group_backup: the policy configuration is not available to the backup');
  return policy as GroupBackupConfig;
}

export const groupBackupActions: Readonly<Record<string, PolicyAction>> = { backup };
