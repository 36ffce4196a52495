import type { ProjectArchive, SetFileContent } from '../policies/group-backup/group-backup.set';
import type { RestoreReport } from './report';
import { missingRows, type ProjectResult, type ProjectRow, type Selection } from './set-plan';

/** The detail of the projects a run stops before: their group is not there. */
export const NOT_RESTORED = 'the group was not restored';

/** What a restore of a set ends with: the table's rows, under the group's full path, and whether it was a dry run. */
export interface SetRunEnd {
  readonly groupFullPath: string;
  readonly rows: readonly ProjectRow[];
  readonly dryRun: boolean;
}

/** The rows of one run's table, filled as its projects are settled. */
export class SetRun {
  private readonly rows = new Map<string, ProjectRow>();
  private readonly selected: readonly ProjectArchive[];

  constructor(
    set: SetFileContent,
    selection: Selection,
    /** Where the projects go: the group's path as given until the forge has told its full path. */
    public groupFullPath: string,
    readonly report: RestoreReport,
  ) {
    this.selected = selection.kind === 'projects' ? selection.projects : [];
    for (const row of missingRows(set, selection)) this.rows.set(row.path, row);
  }

  settle(path: string, result: ProjectResult, detail: string): void {
    this.rows.set(path, { path, result, detail });
  }

  /** The selected projects not settled yet. */
  unsettled(): ProjectArchive[] {
    return this.selected.filter((entry) => !this.rows.has(entry.path));
  }

  /** Says what stopped the run, leaves every project not settled yet `skipped` with `detail`, and ends. */
  stop(message: string, detail: string, dryRun: boolean): SetRunEnd {
    this.report.complain(message);
    for (const entry of this.unsettled()) this.settle(entry.path, dryRun ? 'would skip' : 'skipped', detail);
    return this.end(dryRun);
  }

  end(dryRun: boolean): SetRunEnd {
    return { groupFullPath: this.groupFullPath, rows: [...this.rows.values()], dryRun };
  }
}
