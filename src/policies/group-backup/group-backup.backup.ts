import { join } from 'node:path';
import type { ActionResult, ActContext } from '../../engine/policy';
import { nextRunAfter } from '../../engine/schedule-runs';
import { abandonedBecause, type BackupParams, type InflightBackup } from './group-backup.decide';
import { ForgeExports } from './group-backup.export';
import { type ListedSet, readManifest } from './group-backup.files';
import { GroupExport } from './group-backup.group-export';
import { InflightRecord } from './group-backup.inflight';
import { BACKUP_BYTES, LAST_BACKUP } from './group-backup.measures';
import { groupFolder } from './group-backup.observer';
import { forgetProgress } from './group-backup.project-progress';
import { type ProjectsOfSet, SetProjects } from './group-backup.projects';
import { recordSet } from './group-backup.record';
import type { GroupBackupConfig } from './group-backup.schema';
import { filesOf, isSetName, setNameTime, writeSetFile } from './group-backup.set';

/**
 * One backup set of one group: export → download and verify → record → prune, resumable at every step (progress is
 * kept before each step the forge or the disk cannot undo; see docs/policies.md, `group_backup`, "Resumable").
 */
export class Backup {
  private readonly inflight: InflightRecord;
  private readonly folder: string;
  private readonly group: { readonly id: number; readonly fullPath: string };
  private readonly exports: ForgeExports;
  /** A backup in progress of another key, dropped for this one: said in the detail, with why. */
  private readonly dropped: string | undefined;

  constructor(
    private readonly config: GroupBackupConfig,
    params: BackupParams,
    private readonly context: ActContext,
    private readonly stored: InflightBackup | undefined,
  ) {
    this.group = { id: params.group_id, fullPath: params.group_path };
    // Carried on under its own key; a backup in progress of another key (older than its schedule's period, see
    // abandonedBecause) is dropped, and this one starts afresh.
    this.inflight = new InflightRecord(
      context,
      this.group,
      stored?.key === params.key ? stored : { key: params.key, taken_at: params.taken_at },
    );
    if (stored && stored.key !== params.key) {
      this.dropped =
        abandonedBecause(config, stored, context.clock.now(), false) ??
        `the backup in progress begun at ${stored.taken_at} (${stored.key}) is dropped for this one`;
    }
    this.folder = groupFolder(config, params.group_path);
    this.exports = new ForgeExports(config, context);
  }

  private setFolder(): string {
    return join(this.folder, this.inflight.setName());
  }

  async run(): Promise<ActionResult> {
    const { files } = this.context;
    await files.makeFolder(this.folder, 0o750);
    if (this.dropped) await this.dropStored();
    await this.inflight.save({});
    const manifest = await readManifest(files, this.folder);
    const set = this.inflight.current.set;
    const listed = set === undefined ? undefined : manifest?.sets.find((entry) => !entry.legacy && entry.set === set);
    let entry: ListedSet;
    let fresh = true;
    if (this.inflight.current.pruning && listed) {
      // Killed in its prune: the manifest lists the set already; it is checked again with the others.
      entry = listed;
      fresh = false;
    } else {
      const { projects, missing } = await this.archives();
      const groupArchive = this.inflight.current.group_archive;
      if (!groupArchive)
        throw new Error(`group_backup: the set of ${this.group.fullPath} has no group archive after its download`);
      const relations = this.inflight.current.relations;
      entry = {
        set: this.inflight.setName(),
        state: missing.length === 0 ? 'complete' : 'partial',
        // When the set began: its group export was first requested then, and every project's after.
        taken_at: setNameTime(this.inflight.setName()).toISOString(),
        finished_at: this.context.clock.now().toISOString(),
        group_archive: groupArchive,
        ...(relations ? { relations } : {}),
        projects,
        missing,
      };
      await writeSetFile(files, this.setFolder(), {
        version: 1,
        kind: 'forgewarden-backup-set',
        group: { id: this.group.id, full_path: this.group.fullPath },
        ...entry,
      });
    }
    const { pruned, notes } = await recordSet(
      this.config,
      this.context,
      { ...this.group, folder: this.folder },
      this.inflight,
      entry,
      fresh,
    );
    await forgetProgress(this.context, this.group.id, entry.set);
    await this.inflight.forget();
    const labels = { group: this.group.fullPath };
    const bytes = filesOf(entry).reduce((sum, file) => sum + file.bytes, 0);
    if (fresh) this.context.measures.add(BACKUP_BYTES, labels, bytes);
    // A partial set is no backup of the whole tree: the alert on the last backup keeps counting.
    if (entry.state === 'complete')
      await this.context.measures.set(LAST_BACKUP, labels, Date.parse(entry.finished_at) / 1000);
    const said = [...notes, ...(this.dropped ? [this.dropped] : [])];
    const held = entry.missing.map((project) => `missing ${project.path}: ${project.reason}`);
    return {
      incomplete: entry.missing.map(
        (project) => `project ${project.path} (id ${project.id}) is not in the set: ${project.reason}`,
      ),
      detail:
        `${this.group.fullPath}/${entry.set}/: ${entry.state}, group archive and ${entry.projects.length} of ${entry.projects.length + entry.missing.length} projects, ${bytes} bytes; ` +
        `group archive sha256 ${entry.group_archive.sha256}${entry.relations ? `, ${entry.relations.length} relations files` : ''}; ` +
        `${pruned.length === 0 ? 'nothing pruned' : `pruned ${pruned.join(', ')}`}${[...held, ...said].map((line) => `; ${line}`).join('')}`,
    };
  }

  /**
   * The exports: the group's requested first (it names the set), then its download and the projects' exports side by
   * side, so the group's wait for the forge overlaps theirs. Both run to their end before a failure of either is
   * thrown: what one finished is kept for the set carried on next pass.
   */
  private async archives(): Promise<ProjectsOfSet> {
    const groupExport = new GroupExport(
      this.config,
      this.context,
      this.group,
      this.folder,
      this.inflight,
      this.exports,
    );
    if (!this.inflight.current.group_archive) await groupExport.request();
    const [group, projects] = await Promise.allSettled([
      this.inflight.current.group_archive ? Promise.resolve() : groupExport.download(),
      this.config.projects ? this.projects().run() : Promise.resolve({ projects: [], missing: [] }),
    ]);
    if (group.status === 'rejected') throw group.reason;
    if (projects.status === 'rejected') throw projects.reason;
    return projects.value;
  }

  private projects(): SetProjects {
    const schedule = {
      cron: this.config.schedule,
      ...(this.config.timezone ? { timezone: this.config.timezone } : {}),
    };
    const set = this.inflight.setName();
    return new SetProjects(
      this.config,
      this.context,
      this.exports,
      this.group,
      this.setFolder(),
      set,
      nextRunAfter(schedule, setNameTime(set)),
      () => this.lastSetProjects(),
    );
  }

  /** The projects the newest set listed holds or lacks: a set after it expects them, unless the forge shows them gone. */
  private async lastSetProjects(): Promise<
    { set: string; projects: ReadonlyArray<{ readonly id: number; readonly path: string }> } | undefined
  > {
    const last = (await readManifest(this.context.files, this.folder))?.sets.find(
      (entry) => !entry.legacy && entry.set !== this.inflight.setName(),
    );
    return last && { set: last.set, projects: [...last.projects, ...last.missing] };
  }

  /**
   * A set in progress of another key, dropped for this one: its folder (never listed, never finished) and its
   * progress go, so that nothing of it is taken for a backup.
   */
  private async dropStored(): Promise<void> {
    this.context.logger.warn(`${this.group.fullPath}: ${this.dropped}`);
    const stored = this.stored;
    if (!stored?.set || !isSetName(stored.set)) return;
    const manifest = await readManifest(this.context.files, this.folder);
    if (!manifest?.sets.some((entry) => !entry.legacy && entry.set === stored.set))
      await this.context.files.remove(join(this.folder, stored.set));
    await forgetProgress(this.context, this.group.id, stored.set);
  }
}
