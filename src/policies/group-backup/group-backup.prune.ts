import type { ActContext } from '../../engine/policy';
import { isArchiveName, type ListedSet, removeSet, setLabel, setProblem } from './group-backup.files';
import { planSetPrune, type PrunePlan } from './group-backup.retention';
import type { GroupBackupConfig } from './group-backup.schema';
import { isSetName } from './group-backup.set';

/**
 * Which sets the keep rules prune, and their removal. The disk wins over the manifest, and every set kept is hashed
 * again before anything goes (see docs/policies.md, `group_backup`, "Before each harmful step").
 */

type Planned = {
  readonly name: string;
  readonly takenAt: Date;
  readonly state: ListedSet['state'];
  readonly set: ListedSet;
};

export interface CheckedPlan {
  /** The sets that stand on disk as the manifest lists them. */
  readonly counted: readonly ListedSet[];
  readonly plan: PrunePlan<Planned>;
  /** The labels of the sets to remove: nothing when the plan is held. */
  readonly pruned: readonly string[];
  /** Sets dropped from the manifest, and why: lines for the action's detail. */
  readonly notes: readonly string[];
}

/**
 * The plan over `listed` (the new set first), each set checked on disk as above. `hashed` holds the labels of sets
 * already read whole (the new one, hashed as it was written); `leftovers` are sets of a prune cut short that the
 * manifest no longer lists, removed only under the same check.
 */
export async function checkedPlan(
  config: GroupBackupConfig,
  context: ActContext,
  group: { readonly folder: string; readonly fullPath: string },
  listed: readonly ListedSet[],
  hashed: Set<string>,
  leftovers: readonly string[],
): Promise<CheckedPlan> {
  const notes: string[] = [];
  const check = async (sets: readonly ListedSet[], how: 'size' | 'sha256'): Promise<ListedSet[]> => {
    const counted: ListedSet[] = [];
    for (const set of sets) {
      const problem = hashed.has(setLabel(set)) ? undefined : await setProblem(context.files, group.folder, set, how);
      if (problem === undefined) {
        counted.push(set);
        if (how === 'sha256') hashed.add(setLabel(set));
        continue;
      }
      notes.push(`dropped from the manifest, not counted: ${setLabel(set)} (${problem})`);
      context.logger.warn(
        `${group.fullPath}: ${setLabel(set)} is listed in the manifest but ${problem}: dropped from it, not counted by the keep rules`,
      );
    }
    return counted;
  };
  const removable = (plan: PrunePlan<Planned>): string[] => {
    if (plan.held !== undefined) return [];
    const kept = new Set(plan.keep.map(({ name }) => name));
    return [...new Set([...plan.prune.map(({ name }) => name), ...leftovers])].filter((name) => !kept.has(name));
  };

  let counted = await check(listed, 'size');
  let plan = planOf(config, counted);
  // The precondition of the prune, read now: every set kept is on disk with its recorded bytes.
  while (removable(plan).length > 0) {
    const unread = plan.keep.map(({ set }) => set).filter((set) => !hashed.has(setLabel(set)));
    if (unread.length === 0) break;
    const standing = new Set(await check(unread, 'sha256'));
    counted = counted.filter((set) => hashed.has(setLabel(set)) || !unread.includes(set) || standing.has(set));
    plan = planOf(config, counted);
  }
  return { counted, plan, pruned: removable(plan), notes };
}

/** Sets of a prune cut short (`pruning` of the backup in progress) that `listed` no longer has, when keep rules apply. */
export function leftoversOf(
  config: GroupBackupConfig,
  pruning: readonly string[] | undefined,
  listed: readonly ListedSet[],
): string[] {
  if (!config.keep) return [];
  return (pruning ?? []).filter(
    (name) => labelled(name) !== undefined && !listed.some((set) => setLabel(set) === name),
  );
}

/** Removes the sets `labels` name; a label that names no set is let be. */
export async function removeSets(context: ActContext, folder: string, labels: readonly string[]): Promise<void> {
  for (const name of labels) {
    const set = labelled(name);
    if (set) await removeSet(context.files, folder, set);
  }
}

/** The keep rules over `sets` (see planSetPrune); every set kept without rules. */
function planOf(config: GroupBackupConfig, sets: readonly ListedSet[]): PrunePlan<Planned> {
  return planSetPrune(
    sets.map((set) => ({ name: setLabel(set), takenAt: new Date(set.taken_at), state: set.state, set })),
    config.keep,
    config.timezone,
  );
}

/** The set a label names (`STAMP/`, or `STAMP.tar.gz` of before sets), or undefined for anything else. */
function labelled(label: string): Pick<ListedSet, 'set' | 'legacy'> | undefined {
  if (label.endsWith('/') && isSetName(label.slice(0, -1))) return { set: label.slice(0, -1) };
  if (isArchiveName(label)) return { set: label.replace(/\.tar\.gz$/, ''), legacy: true };
  return undefined;
}
