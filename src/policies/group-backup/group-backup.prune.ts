import type { PolicyContext } from '../../engine/policy';
import { isArchiveName, type ListedSet, removeSet, setLabel, setProblem } from './group-backup.files';
import { planSetPrune, type PrunePlan } from './group-backup.retention';
import type { GroupBackupConfig } from './group-backup.schema';
import { isSetName } from './group-backup.set';

/**
 * Which sets the keep rules prune, with the prune's precondition read at that moment, and their removal. The manifest
 * and Redis say what was written; the disk says what is there now (a person may have removed or replaced an archive),
 * and wins:
 *
 * - Each set listed is looked at on disk (every file present, with its recorded size): one that is not is dropped from
 *   the manifest, not counted, and said in the detail.
 * - The keep rules are planned on the sets counted (complete ones; see planSetPrune). When they would remove
 *   something, every set the plan keeps is read again and hashed, one whose bytes are not the manifest's is dropped
 *   too, and the rules are planned again on what is left, until every set kept was read. Nothing is removed while
 *   fewer complete sets are left than the largest keep count (fewestToPrune), nor while the newest set is partial.
 *
 * Hashing the kept sets reads them all, once per set that prunes (a nightly one), locally and sequentially, at disk
 * speed rather than the forge's. A stat would be cheaper and miss an archive replaced by one of the same size, or
 * damaged in place; a set pruned on the strength of such a set is the loss this step exists to prevent. Sets about to
 * be pruned are not read; a set that prunes nothing hashes nothing, so a folder kept without keep rules, which grows
 * without end, is never read back.
 */

type Planned = { readonly name: string; readonly takenAt: Date; readonly state: ListedSet['state']; readonly set: ListedSet };

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
  context: PolicyContext,
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
      context.logger.warn(`${group.fullPath}: ${setLabel(set)} is listed in the manifest but ${problem}: dropped from it, not counted by the keep rules`);
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
export function leftoversOf(config: GroupBackupConfig, pruning: readonly string[] | undefined, listed: readonly ListedSet[]): string[] {
  if (!config.keep) return [];
  return (pruning ?? []).filter((name) => labelled(name) !== undefined && !listed.some((set) => setLabel(set) === name));
}

/** Removes the sets `labels` name; a label that names no set is let be. */
export async function removeSets(context: PolicyContext, folder: string, labels: readonly string[]): Promise<void> {
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
