import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { z } from 'zod';
import { join } from 'node:path';
import { configOf, defineAction, param, readParams } from '../../engine/action-params';
import type { PolicyAction, PolicyContext } from '../../engine/policy';
import { NotFoundError } from '../../gitlab/transport/errors';
import { verifyArchive, verifyNdjsonGz } from './group-backup.archive';
import { abandonedBecause, type BackupParams, type InflightBackup } from './group-backup.decide';
import {
  archiveName,
  archiveProblem,
  folderContents,
  isArchiveName,
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
import { BACKUP_BYTES, LAST_BACKUP } from './group-backup.measures';
import { planPrune, type PrunePlan } from './group-backup.retention';
import { type GroupBackupConfig, groupBackupPolicy } from './group-backup.schema';

/**
 * One backup of one group, resumable at every step. Progress is kept in the policy's state (InflightBackup) before
 * each step that the forge or the disk cannot undo, so a process killed anywhere carries on where it was:
 *
 * 1. the export is requested (again, when the last request is older than `timeout`: the forge may have dropped it);
 *    the archive is named and recorded by the time of that request;
 * 2. its download is tried every `download_interval` (the forge answers 404 until the archive is ready, and counts
 *    every try against its one-download-a-minute-per-group limit) into a dot-file ending in `.partial`;
 * 3. the file is verified (gzip and tar structure, non-empty), flushed and renamed into place; relations likewise;
 * 4. the manifest is written with the new archive and without those the keep rules prune, the keep rules applied to
 *    the archives really on disk; the pruned files are removed last, and only once every archive counted was read
 *    again and matched its recorded size and SHA-256. A failed or unverified backup never prunes anything.
 */

/** The first download try comes this soon after the request (a small group is ready in seconds), later ones every interval. */
const FIRST_TRY_MS = 5_000;
/** How long the state of a backup in progress is kept: far beyond any timeout, so a stopped daemon finds it again. */
const INFLIGHT_TTL_MS = 30 * 86_400_000;

const backupParams = z.object({ group_id: param.integer(), group_path: param.text(), taken_at: param.text(), key: param.text() });

/** The keep rules' plan over manifest entries. */
type PlanOf = PrunePlan<{ readonly name: string; readonly takenAt: Date; readonly archive: ManifestEntry }>;

/** What step 4 did: the archives removed, and what it said about the others. */
interface Recorded {
  readonly pruned: readonly string[];
  /** Lines for the action's detail (and so the audit trail): archives dropped from the manifest, a prune held back. */
  readonly notes: readonly string[];
}

class Backup {
  private inflight: InflightBackup;
  readonly folder: string;
  /** A backup in progress of another key, dropped for this one: said in the detail, with why. */
  private readonly dropped: string | undefined;

  constructor(
    private readonly config: GroupBackupConfig,
    private readonly params: BackupParams,
    private readonly context: PolicyContext,
    stored: InflightBackup | undefined,
  ) {
    // Carried on under its own key; a backup in progress of another key (older than its schedule's period, see
    // abandonedBecause) is dropped, and this one starts afresh.
    this.inflight = stored?.key === params.key ? stored : { key: params.key, taken_at: params.taken_at };
    if (stored && stored.key !== params.key) {
      this.dropped = abandonedBecause(config, stored, this.now(), false) ?? `the backup in progress begun at ${stored.taken_at} (${stored.key}) is dropped for this one`;
    }
    this.folder = groupFolder(config, params.group_path);
  }

  private now(): Date {
    return this.context.clock.now();
  }

  /** The archive's name: the time its export was requested, to the second. Known once it was. */
  private archiveFile(): string {
    const requested = this.inflight.export_requested_at;
    if (requested === undefined) throw new Error(`group_backup: the backup of ${this.params.group_path} has no export requested yet`);
    return archiveName(stampOf(new Date(requested)));
  }

  private stamp(): string {
    return this.archiveFile().replace(/\.tar\.gz$/, '');
  }

  private async save(change: Partial<InflightBackup>): Promise<void> {
    this.inflight = { ...this.inflight, ...change };
    await this.context.state.set(inflightKey(this.params.group_id), JSON.stringify(this.inflight), INFLIGHT_TTL_MS);
  }

  async run(): Promise<string> {
    await mkdir(this.folder, { recursive: true, mode: 0o750 });
    await this.save({});
    if (this.dropped) this.context.logger.warn(`${this.params.group_path}: ${this.dropped}`);
    const manifest = await readManifest(this.folder);
    const requested = this.inflight.export_requested_at;
    const listed = requested === undefined ? undefined : manifest?.archives.find((archive) => archive.file === this.archiveFile());
    let entry: ManifestEntry;
    let fresh = true;
    if (this.inflight.pruning && listed) {
      // Killed in its prune: the manifest lists the archive already; it is checked again with the others.
      entry = listed;
      fresh = false;
    } else {
      if (requested === undefined || !(await exists(join(this.folder, this.archiveFile())))) await this.downloadInto();
      entry = await this.describe(join(this.folder, this.archiveFile()));
    }
    const { pruned, notes } = await this.record(entry, fresh);
    await this.context.state.delete(inflightKey(this.params.group_id));
    const group = { group: this.params.group_path };
    this.context.measures.add(BACKUP_BYTES, group, entry.bytes + (entry.relations ?? []).reduce((sum, file) => sum + file.bytes, 0));
    await this.context.measures.set(LAST_BACKUP, group, Date.parse(entry.finished_at) / 1000);
    const said = [...notes, ...(this.dropped ? [this.dropped] : [])];
    return `${this.params.group_path}/${entry.file}: ${entry.bytes} bytes, sha256 ${entry.sha256}${entry.relations ? `, ${entry.relations.length} relations files` : ''}; ${pruned.length === 0 ? 'nothing pruned' : `pruned ${pruned.join(', ')}`}${said.map((line) => `; ${line}`).join('')}`;
  }

  /** Steps 1 to 3: the archive (and relations) exported, downloaded, verified and renamed into place. */
  private async downloadInto(): Promise<void> {
    // Leftovers of earlier interrupted downloads: never under a final name, removed before a new one begins.
    for (const name of (await folderContents(this.folder, undefined)).partials) await rm(join(this.folder, name), { recursive: true, force: true });
    const client = this.context.client.groupTransfer;
    const requested = this.inflight.export_requested_at ? Date.parse(this.inflight.export_requested_at) : undefined;
    if (requested === undefined || this.now().getTime() - requested > this.config.timeout) {
      // Read before the request, and the archive is named by it: the forge exports after it receives the request, so
      // everything done on the forge before this instant is in the archive. A time read after the answer could name
      // the archive after changes its export started too early to hold. The forge says nothing of when it began a
      // group export (there is no status for one, unlike a relations export), so the request is the time known.
      const at = this.now().toISOString();
      await client.scheduleExport(this.params.group_id);
      if (this.config.relations) await client.scheduleRelationsExport(this.params.group_id);
      await this.save({ export_requested_at: at, ...(this.config.relations ? { relations_requested_at: at } : {}), last_download_at: undefined });
    }
    const final = join(this.folder, this.archiveFile());
    const partial = join(this.folder, partialName(this.archiveFile()));
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
      // On the engine's clock: a test's fake clock moves through the wait instead of sleeping it.
      if (wait > 0) await this.context.clock.sleep(Math.min(wait, this.config.download_interval));
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
    const partialFolder = join(this.folder, partialName(relationsFolderName(this.stamp())));
    await rm(partialFolder, { recursive: true, force: true });
    await mkdir(partialFolder, { mode: 0o750 });
    for (const relation of relations) {
      const file = join(partialFolder, `${relation}.ndjson.gz`);
      await client.downloadRelation(this.params.group_id, relation, file);
      await verifyNdjsonGz(file);
      await syncFile(file);
    }
    const final = join(this.folder, relationsFolderName(this.stamp()));
    await rm(final, { recursive: true, force: true });
    await rename(partialFolder, final);
  }

  /** The archive in place, as the manifest lists it (re-verified when the download happened before a restart). */
  private async describe(final: string): Promise<ManifestEntry> {
    const archive = await verifyArchive(final);
    const relations: ManifestFile[] = [];
    if (this.config.relations) {
      const folder = relationsFolderName(this.stamp());
      for (const name of await listFiles(join(this.folder, folder))) {
        const check = await verifyNdjsonGz(join(this.folder, folder, name));
        relations.push({ file: `${folder}/${name}`, bytes: check.bytes, sha256: check.sha256 });
      }
    }
    return {
      file: this.archiveFile(),
      bytes: archive.bytes,
      sha256: archive.sha256,
      // When its data was exported (requested), not when the backup began: a backup carried on a day later holds
      // that day's data and is named so.
      taken_at: this.inflight.export_requested_at ?? this.inflight.taken_at,
      finished_at: this.now().toISOString(),
      ...(this.config.relations ? { relations } : {}),
    };
  }

  /**
   * Step 4: the manifest with the new archive, the keep rules applied to the archives on disk, then the pruned files
   * removed. The manifest and Redis say what was written; the disk says what is there now (a person may have removed
   * or replaced an archive), and wins:
   *
   * - The manifest is read again, and each archive it lists is looked at on disk (present, with its recorded size): one
   *   that is not is dropped from the manifest, not counted, and said in the detail.
   * - The keep rules are planned on the archives counted. When they would remove something, that is the precondition
   *   of the prune: every archive counted is read again and hashed, one whose bytes are not the manifest's is dropped
   *   too, and the rules are planned again on what is left. Nothing is removed while fewer archives are left than the
   *   largest keep count (fewestToPrune).
   *
   * Hashing every counted archive before a prune reads them all, once per backup that prunes (a nightly one): after
   * a download that wrote one archive, the disk reads as many as the keep rules hold, locally and sequentially, at disk
   * speed rather than the forge's. A stat would be cheaper and miss an archive replaced by one of the same size, or
   * damaged in place; a backup pruned on the strength of such an archive is the loss this step exists to prevent. A
   * backup that prunes nothing hashes nothing (its manifest still loses what the stat finds missing), so a folder kept
   * without keep rules, which grows without end, is never read back whole.
   */
  private async record(entry: ManifestEntry, fresh: boolean): Promise<Recorded> {
    const manifest = await readManifest(this.folder);
    const listed = [entry, ...(manifest?.archives ?? []).filter((archive) => archive.file !== entry.file)];
    // The new archive was verified and hashed as it was described, moments ago.
    const hashed = new Set<string>(fresh ? [entry.file] : []);
    const notes: string[] = [];
    const check = async (archives: readonly ManifestEntry[], how: 'size' | 'sha256'): Promise<ManifestEntry[]> => {
      const counted: ManifestEntry[] = [];
      for (const archive of archives) {
        const problem = hashed.has(archive.file) ? undefined : await archiveProblem(this.folder, archive, how);
        if (problem === undefined) {
          counted.push(archive);
          if (how === 'sha256') hashed.add(archive.file);
          continue;
        }
        notes.push(`dropped from the manifest, not counted: ${archive.file} (${problem})`);
        this.context.logger.warn(`${this.params.group_path}: ${archive.file} is listed in the manifest but ${problem}: dropped from it, not counted by the keep rules`);
      }
      return counted;
    };
    // Archives of a prune cut short that the manifest no longer lists: removed only under the same check as the prune.
    const leftovers = this.config.keep ? (this.inflight.pruning ?? []).filter((name) => isArchiveName(name) && !listed.some((archive) => archive.file === name)) : [];
    const removable = (plan: PlanOf): string[] => {
      if (plan.held !== undefined) return [];
      const kept = new Set(plan.keep.map(({ archive }) => archive.file));
      return [...new Set([...plan.prune.map(({ archive }) => archive.file), ...leftovers])].filter((name) => !kept.has(name));
    };

    let counted = await check(listed, 'size');
    let plan = this.plan(counted);
    // The precondition of the prune, read now: every archive counted is on disk with its recorded bytes.
    if (removable(plan).length > 0) {
      counted = await check(counted, 'sha256');
      plan = this.plan(counted);
    }
    if (!counted.includes(entry)) {
      // Only an archive listed before a restart can fail here (the new one was hashed as it was described): the
      // backup is lost, the manifest keeps what does stand, nothing is pruned, and the next pass takes a backup anew.
      await this.writeManifestOf(counted);
      await this.context.state.delete(inflightKey(this.params.group_id));
      throw new Error(`${this.params.group_path}: the backup's own archive no longer stands as recorded; nothing pruned: ${notes.join('; ')}`);
    }
    if (plan.held) notes.push(plan.held);
    const pruned = removable(plan);
    await this.save({ pruning: pruned });
    await this.writeManifestOf(plan.keep.map(({ archive }) => archive));
    for (const file of pruned) await removeBackup(this.folder, { file });
    return { pruned, notes };
  }

  private async writeManifestOf(archives: readonly ManifestEntry[]): Promise<void> {
    const manifest: Manifest = {
      version: 1,
      group: { id: this.params.group_id, full_path: this.params.group_path },
      updated_at: this.now().toISOString(),
      archives: [...archives].sort((a, b) => Date.parse(b.taken_at) - Date.parse(a.taken_at)),
    };
    await writeManifest(this.folder, manifest);
  }

  /** The keep rules over `archives`, newest first; every archive kept without rules. */
  private plan(archives: readonly ManifestEntry[]): PlanOf {
    return planPrune(
      archives.map((archive) => ({ name: archive.file, takenAt: new Date(archive.taken_at), archive })),
      this.config.keep,
      this.config.timezone,
    );
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
  unchecked:
    'it adds a backup and removes nothing on the forge; its prune removes archives only after reading again, at that moment, that every archive it counts is on disk with its recorded size and SHA-256 (see Backup.record)',
  run: async (params, context) => {
    // Where the backups go and how long to wait live in the file, as it says now; the params name the group only.
    const config = configOf<GroupBackupConfig>(context, groupBackupPolicy);
    const detail = await new Backup(config, params, context, await readInflight(context, params.group_id)).run();
    return { detail };
  },
});

export const groupBackupActions: Readonly<Record<string, PolicyAction>> = { backup };
