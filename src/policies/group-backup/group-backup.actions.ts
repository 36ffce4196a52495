import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { z } from 'zod';
import { join } from 'node:path';
import { configOf, defineAction, param, readParams } from '../../engine/action-params';
import type { ActionResult, ForgeLimit, ForgeSlot, PolicyAction, PolicyContext } from '../../engine/policy';
import { nextRunAfter } from '../../engine/schedule-runs';
import { NotFoundError } from '../../gitlab/transport/errors';
import { verifyArchive, verifyNdjsonGz } from './group-backup.archive';
import { abandonedBecause, type BackupParams, type InflightBackup } from './group-backup.decide';
import { partialName, PARTIAL_SUFFIX, syncFile, syncFolder } from './group-backup.disk';
import { isArchiveName, type ListedSet, type Manifest, readManifest, removeSet, setLabel, setProblem, stampOf, writeManifest } from './group-backup.files';
import { groupFolder, inflightKey, readInflight } from './group-backup.observer';
import { BACKUP_BYTES, LAST_BACKUP } from './group-backup.measures';
import { forgetProgress, SetProjects } from './group-backup.projects';
import { planSetPrune, type PrunePlan } from './group-backup.retention';
import { type GroupBackupConfig, groupBackupPolicy } from './group-backup.schema';
import { type BackupSet, filesOf, GROUP_ARCHIVE, GROUP_RELATIONS, isSetName, type MissingProject, type ProjectArchive, setNameTime, type SetFile, writeSetFile } from './group-backup.set';

/**
 * One backup set of one group, resumable at every step. Progress is kept in the policy's state (InflightBackup, and
 * each project's in SetProjects) before each step that the forge or the disk cannot undo, so a process killed
 * anywhere carries the same set on where it was:
 *
 * 1. the group export is requested (again, when the last request is older than `timeout`: the forge may have dropped
 *    it); the set's folder is named by the time of the first request;
 * 2. its download is tried every `download_interval` (the forge answers 404 until the archive is ready, and counts
 *    every try against its one-download-a-minute-per-group limit) into a dot-file ending in `.partial`, verified
 *    (gzip and tar structure, non-empty), flushed and renamed to `group.tar.gz`; relations likewise;
 * 3. every project of the tree is exported, downloaded and verified the same way, paced by the forge's limits (see
 *    group-backup.projects.ts); one that cannot be is named in the set, which is then `partial`;
 * 4. `set.json` is written, then the manifest with the new set and without those the keep rules prune, the rules
 *    applied to the sets really on disk; the pruned sets are removed last, and only once every set kept was read again
 *    and matched its recorded sizes and SHA-256s. A partial set, or a failed one, never prunes anything.
 */

/** The first download try comes this soon after the request (a small group is ready in seconds), later ones every interval. */
const FIRST_TRY_MS = 5_000;
/** How long the state of a backup in progress is kept: far beyond any timeout, so a stopped daemon finds it again. */
const INFLIGHT_TTL_MS = 30 * 86_400_000;

const backupParams = z.object({ group_id: param.integer(), group_path: param.text(), taken_at: param.text(), key: param.text() });

/** The forge's default limit of group export requests a user makes a minute. */
const GROUP_EXPORT_LIMIT: ForgeLimit = { name: 'group_export', perMinute: 6 };

/** The keep rules' plan over listed sets. */
type PlanOf = PrunePlan<{ readonly name: string; readonly takenAt: Date; readonly state: BackupSet['state']; readonly set: ListedSet }>;

/** What step 4 did: the sets removed, and what it said about the others. */
interface Recorded {
  readonly pruned: readonly string[];
  /** Lines for the action's detail (and so the audit trail): sets dropped from the manifest, a prune held back. */
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
    private readonly stored: InflightBackup | undefined,
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

  /** The set's name, once its group export was requested. */
  private setName(): string {
    const set = this.inflight.set;
    if (set === undefined) throw new Error(`group_backup: the backup of ${this.params.group_path} has no export requested yet`);
    return set;
  }

  private setFolder(): string {
    return join(this.folder, this.setName());
  }

  private async save(change: Partial<InflightBackup>): Promise<void> {
    this.inflight = { ...this.inflight, ...change };
    await this.context.state.set(inflightKey(this.params.group_id), JSON.stringify(this.inflight), INFLIGHT_TTL_MS);
  }

  async run(): Promise<ActionResult> {
    await mkdir(this.folder, { recursive: true, mode: 0o750 });
    if (this.dropped) await this.dropStored();
    await this.save({});
    const manifest = await readManifest(this.folder);
    const set = this.inflight.set;
    const listed = set === undefined ? undefined : manifest?.sets.find((entry) => !entry.legacy && entry.set === set);
    let entry: ListedSet;
    let fresh = true;
    if (this.inflight.pruning && listed) {
      // Killed in its prune: the manifest lists the set already; it is checked again with the others.
      entry = listed;
      fresh = false;
    } else {
      const { projects, missing } = await this.archives();
      const groupArchive = this.inflight.group_archive;
      if (!groupArchive) throw new Error(`group_backup: the set of ${this.params.group_path} has no group archive after its download`);
      entry = {
        set: this.setName(),
        state: missing.length === 0 ? 'complete' : 'partial',
        // When the set began: its group export was first requested then, and every project's after.
        taken_at: this.setTime(),
        finished_at: this.now().toISOString(),
        group_archive: groupArchive,
        ...(this.inflight.relations ? { relations: this.inflight.relations } : {}),
        projects,
        missing,
      };
      await writeSetFile(this.setFolder(), { version: 1, kind: 'forgewarden-backup-set', group: { id: this.params.group_id, full_path: this.params.group_path }, ...entry });
    }
    const { pruned, notes } = await this.record(entry, fresh);
    await forgetProgress(this.context, this.params.group_id, entry.set);
    await this.context.state.delete(inflightKey(this.params.group_id));
    const group = { group: this.params.group_path };
    const bytes = filesOf(entry).reduce((sum, file) => sum + file.bytes, 0);
    if (fresh) this.context.measures.add(BACKUP_BYTES, group, bytes);
    // A partial set is no backup of the whole tree: the alert on the last backup keeps counting.
    if (entry.state === 'complete') await this.context.measures.set(LAST_BACKUP, group, Date.parse(entry.finished_at) / 1000);
    const said = [...notes, ...(this.dropped ? [this.dropped] : [])];
    const held = entry.missing.map((project) => `missing ${project.path}: ${project.reason}`);
    return {
      incomplete: entry.missing.map((project) => `project ${project.path} (id ${project.id}) is not in the set: ${project.reason}`),
      detail:
      `${this.params.group_path}/${entry.set}/: ${entry.state}, group archive and ${entry.projects.length} of ${entry.projects.length + entry.missing.length} projects, ${bytes} bytes; ` +
      `group archive sha256 ${entry.group_archive.sha256}${entry.relations ? `, ${entry.relations.length} relations files` : ''}; ` +
      `${pruned.length === 0 ? 'nothing pruned' : `pruned ${pruned.join(', ')}`}${[...held, ...said].map((line) => `; ${line}`).join('')}`,
    };
  }

  /** The set's time, from its name (`2026-11-24T020000Z` → 2026-11-24T02:00:00.000Z): its first export request. */
  private setTime(): string {
    return setNameTime(this.setName()).toISOString();
  }

  private projects(): SetProjects {
    const schedule = { cron: this.config.schedule, ...(this.config.timezone ? { timezone: this.config.timezone } : {}) };
    const began = setNameTime(this.setName());
    return new SetProjects(
      this.config,
      this.context,
      { id: this.params.group_id, fullPath: this.params.group_path },
      this.setFolder(),
      this.setName(),
      nextRunAfter(schedule, began),
      () => this.lastSetProjects(),
    );
  }

  /** The projects the newest set listed holds or lacks: a set after it expects them, unless the forge shows them gone. */
  private async lastSetProjects(): Promise<{ set: string; projects: ReadonlyArray<{ readonly id: number; readonly path: string }> } | undefined> {
    const last = (await readManifest(this.folder))?.sets.find((entry) => !entry.legacy && entry.set !== this.setName());
    return last && { set: last.set, projects: [...last.projects, ...last.missing] };
  }

  /**
   * A set in progress of another key, dropped for this one: its folder (never listed, never finished) and its
   * progress go, so that nothing of it is taken for a backup.
   */
  private async dropStored(): Promise<void> {
    this.context.logger.warn(`${this.params.group_path}: ${this.dropped}`);
    const stored = this.stored;
    if (!stored?.set || !isSetName(stored.set)) return;
    const manifest = await readManifest(this.folder);
    if (!manifest?.sets.some((entry) => !entry.legacy && entry.set === stored.set)) await rm(join(this.folder, stored.set), { recursive: true, force: true });
    await forgetProgress(this.context, this.params.group_id, stored.set);
  }

  /**
   * Steps 1 to 3: the group export requested first (it names the set), then its download and the projects' exports
   * side by side, so the group's wait for the forge overlaps theirs. Both run to their end before a failure of either
   * is thrown: what one finished is kept for the set carried on next pass.
   */
  private async archives(): Promise<{ projects: ProjectArchive[]; missing: MissingProject[] }> {
    if (!this.inflight.group_archive) await this.requestGroupExport();
    const [group, projects] = await Promise.allSettled([
      this.inflight.group_archive ? Promise.resolve() : this.groupArchive(),
      this.config.projects ? this.projects().run() : Promise.resolve({ projects: [], missing: [] }),
    ]);
    if (group.status === 'rejected') throw group.reason;
    if (projects.status === 'rejected') throw projects.reason;
    return projects.value;
  }

  /** Step 1: the group export requested, unless it was and is not older than `timeout`; the set is named by the first request. */
  private async requestGroupExport(): Promise<void> {
    const client = this.context.client.groupTransfer;
    const requested = this.inflight.export_requested_at ? Date.parse(this.inflight.export_requested_at) : undefined;
    if (requested === undefined || this.now().getTime() - requested > this.config.timeout) {
      const slot = await this.paced(GROUP_EXPORT_LIMIT);
      // Read before the request, and the set is named by it: the forge exports after it receives the request, so
      // everything done on the forge before this instant is in the archive. A time read after the answer could name
      // the set after changes its export started too early to hold.
      const at = this.now();
      await client.scheduleExport(this.params.group_id);
      await slot.answered(this.now());
      if (this.config.relations) await client.scheduleRelationsExport(this.params.group_id);
      await this.save({
        set: this.inflight.set ?? stampOf(at),
        export_requested_at: at.toISOString(),
        ...(this.config.relations ? { relations_requested_at: at.toISOString() } : {}),
        last_download_at: undefined,
      });
    }
  }

  /** Step 2: the group archive (and relations) downloaded once ready, verified and renamed into place. */
  private async groupArchive(): Promise<void> {
    const client = this.context.client.groupTransfer;
    await this.requestGroupExport();
    const folder = this.setFolder();
    await mkdir(folder, { recursive: true, mode: 0o750 });
    const final = join(folder, GROUP_ARCHIVE);
    if (!(await exists(final))) {
      // Leftovers of earlier interrupted downloads: never under a final name, removed before a new one begins.
      for (const name of await readdir(folder)) if (name.startsWith('.') && name.endsWith(PARTIAL_SUFFIX)) await rm(join(folder, name), { recursive: true, force: true });
      const partial = join(folder, partialName(GROUP_ARCHIVE));
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
      await syncFolder(folder);
    }
    const archive = await verifyArchive(final);
    const relations: SetFile[] = [];
    if (this.config.relations) {
      for (const name of await listFiles(join(folder, GROUP_RELATIONS))) {
        const check = await verifyNdjsonGz(join(folder, GROUP_RELATIONS, name));
        relations.push({ file: `${GROUP_RELATIONS}/${name}`, bytes: check.bytes, sha256: check.sha256 });
      }
    }
    await this.save({ group_archive: { file: GROUP_ARCHIVE, bytes: archive.bytes, sha256: archive.sha256 }, ...(this.config.relations ? { relations } : {}) });
  }

  /** Waits until a request of `limit` is within the forge's limit, counted for every replica, and takes it. */
  private async paced(limit: ForgeLimit): Promise<ForgeSlot> {
    for (;;) {
      const slot = await this.context.forgeLimits.take(limit, this.now());
      if (slot.waitMs === 0) return slot;
      await this.context.clock.sleep(slot.waitMs);
    }
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
    const partialFolder = join(this.setFolder(), partialName(GROUP_RELATIONS));
    await rm(partialFolder, { recursive: true, force: true });
    await mkdir(partialFolder, { mode: 0o750 });
    for (const relation of relations) {
      const file = join(partialFolder, `${relation}.ndjson.gz`);
      await client.downloadRelation(this.params.group_id, relation, file);
      await verifyNdjsonGz(file);
      await syncFile(file);
    }
    const final = join(this.setFolder(), GROUP_RELATIONS);
    await rm(final, { recursive: true, force: true });
    await rename(partialFolder, final);
  }

  /**
   * Step 4: the manifest with the new set, the keep rules applied to the sets on disk, then the pruned sets removed.
   * The manifest and Redis say what was written; the disk says what is there now (a person may have removed or
   * replaced an archive), and wins:
   *
   * - The manifest is read again, and each set it lists is looked at on disk (every file present, with its recorded
   *   size): one that is not is dropped from the manifest, not counted, and said in the detail.
   * - The keep rules are planned on the sets counted (complete ones; see planSetPrune). When they would remove
   *   something, that is the precondition of the prune: every set the plan keeps is read again and hashed, one whose
   *   bytes are not the manifest's is dropped too, and the rules are planned again on what is left, until every set
   *   kept was read. Nothing is removed while fewer complete sets are left than the largest keep count
   *   (fewestToPrune), nor while the newest set is partial.
   *
   * Hashing the kept sets before a prune reads them all, once per set that prunes (a nightly one), locally and
   * sequentially, at disk speed rather than the forge's. A stat would be cheaper and miss an archive replaced by one
   * of the same size, or damaged in place; a set pruned on the strength of such a set is the loss this step exists to
   * prevent. Sets about to be pruned are not read; a set that prunes nothing hashes nothing (its manifest still loses
   * what the stat finds missing), so a folder kept without keep rules, which grows without end, is never read back.
   */
  private async record(entry: ListedSet, fresh: boolean): Promise<Recorded> {
    const manifest = await readManifest(this.folder);
    const label = setLabel(entry);
    const listed = [entry, ...(manifest?.sets ?? []).filter((set) => setLabel(set) !== label)];
    // The new set's archives were verified and hashed as they were written, moments ago.
    const hashed = new Set<string>(fresh ? [label] : []);
    const notes: string[] = [];
    const check = async (sets: readonly ListedSet[], how: 'size' | 'sha256'): Promise<ListedSet[]> => {
      const counted: ListedSet[] = [];
      for (const set of sets) {
        const problem = hashed.has(setLabel(set)) ? undefined : await setProblem(this.folder, set, how);
        if (problem === undefined) {
          counted.push(set);
          if (how === 'sha256') hashed.add(setLabel(set));
          continue;
        }
        notes.push(`dropped from the manifest, not counted: ${setLabel(set)} (${problem})`);
        this.context.logger.warn(`${this.params.group_path}: ${setLabel(set)} is listed in the manifest but ${problem}: dropped from it, not counted by the keep rules`);
      }
      return counted;
    };
    // Sets of a prune cut short that the manifest no longer lists: removed only under the same check as the prune.
    const leftovers = this.config.keep ? (this.inflight.pruning ?? []).filter((name) => labelled(name) !== undefined && !listed.some((set) => setLabel(set) === name)) : [];
    const removable = (plan: PlanOf): string[] => {
      if (plan.held !== undefined) return [];
      const kept = new Set(plan.keep.map(({ name }) => name));
      return [...new Set([...plan.prune.map(({ name }) => name), ...leftovers])].filter((name) => !kept.has(name));
    };

    let counted = await check(listed, 'size');
    let plan = this.plan(counted);
    // The precondition of the prune, read now: every set kept is on disk with its recorded bytes.
    while (removable(plan).length > 0) {
      const unread = plan.keep.map(({ set }) => set).filter((set) => !hashed.has(setLabel(set)));
      if (unread.length === 0) break;
      const standing = new Set(await check(unread, 'sha256'));
      counted = counted.filter((set) => hashed.has(setLabel(set)) || !unread.includes(set) || standing.has(set));
      plan = this.plan(counted);
    }
    if (!counted.includes(entry)) {
      // Only a set listed before a restart can fail here (the new one was hashed as it was written): the set is lost,
      // the manifest keeps what does stand, nothing is pruned, and the next pass takes a set anew.
      await this.writeManifestOf(counted);
      await this.context.state.delete(inflightKey(this.params.group_id));
      throw new Error(`${this.params.group_path}: the set's own archives no longer stand as recorded; nothing pruned: ${notes.join('; ')}`);
    }
    if (plan.held) notes.push(plan.held);
    const pruned = removable(plan);
    await this.save({ pruning: pruned });
    await this.writeManifestOf(plan.keep.map(({ set }) => set));
    for (const name of pruned) {
      const set = labelled(name);
      if (set) await removeSet(this.folder, set);
    }
    return { pruned, notes };
  }

  private async writeManifestOf(sets: readonly ListedSet[]): Promise<void> {
    const manifest: Manifest = {
      version: 2,
      group: { id: this.params.group_id, full_path: this.params.group_path },
      updated_at: this.now().toISOString(),
      sets: [...sets].sort((a, b) => Date.parse(b.taken_at) - Date.parse(a.taken_at)),
    };
    await writeManifest(this.folder, manifest);
  }

  /** The keep rules over `sets` (see planSetPrune); every set kept without rules. */
  private plan(sets: readonly ListedSet[]): PlanOf {
    return planSetPrune(
      sets.map((set) => ({ name: setLabel(set), takenAt: new Date(set.taken_at), state: set.state, set })),
      this.config.keep,
      this.config.timezone,
    );
  }
}

/** The set a label names (`STAMP/`, or `STAMP.tar.gz` of before sets), or undefined for anything else. */
function labelled(label: string): Pick<ListedSet, 'set' | 'legacy'> | undefined {
  if (label.endsWith('/') && isSetName(label.slice(0, -1))) return { set: label.slice(0, -1) };
  if (isArchiveName(label)) return { set: label.replace(/\.tar\.gz$/, ''), legacy: true };
  return undefined;
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
    'it adds a backup set and removes nothing on the forge; its prune removes sets only after reading again, at that moment, that every set it keeps is on disk with its recorded sizes and SHA-256s (see Backup.record)',
  run: async (params, context) => {
    // Where the backups go and how long to wait live in the file, as it says now; the params name the group only.
    const config = configOf<GroupBackupConfig>(context, groupBackupPolicy);
    return new Backup(config, params, context, await readInflight(context, params.group_id)).run();
  },
});

export const groupBackupActions: Readonly<Record<string, PolicyAction>> = { backup };
