import type { ActContext } from '../../engine/policy';
import type { InflightBackup } from './group-backup.decide';

/**
 * The backup in progress of one group, kept in the policy's state: every step reads it, and saves what it reached
 * before each step the forge or the disk cannot undo, so a process killed anywhere carries the same set on.
 */

/** How long a backup in progress is kept (a project's progress too): far beyond any timeout, so a stopped daemon finds it again. */
export const IN_PROGRESS_TTL_MS = 30 * 86_400_000;

export function inflightKey(groupId: number): string {
  return `inflight:${groupId}`;
}

export class InflightRecord {
  constructor(
    private readonly context: ActContext,
    private readonly group: { readonly id: number; readonly fullPath: string },
    private record: InflightBackup,
  ) {}

  get current(): InflightBackup {
    return this.record;
  }

  async save(change: Partial<InflightBackup>): Promise<void> {
    this.record = { ...this.record, ...change };
    await this.context.state.set(inflightKey(this.group.id), JSON.stringify(this.record), IN_PROGRESS_TTL_MS);
  }

  async forget(): Promise<void> {
    await this.context.state.delete(inflightKey(this.group.id));
  }

  /** The set's name, once its group export was requested (it is named by the first request). */
  setName(): string {
    const set = this.record.set;
    if (set === undefined)
      throw new Error(`group_backup: the backup of ${this.group.fullPath} has no export requested yet`);
    return set;
  }
}
