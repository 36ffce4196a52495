import type { ActContext } from '../../engine/policy';
import { type ListedSet, type Manifest, readManifest, setLabel, writeManifest } from './group-backup.files';
import type { InflightRecord } from './group-backup.inflight';
import { checkedPlan, leftoversOf, removeSets } from './group-backup.prune';
import type { GroupBackupConfig } from './group-backup.schema';

/**
 * Step 4 of a set (group-backup.backup.ts): the manifest with the new set and without those the keep rules prune,
 * the rules applied to the sets really on disk (group-backup.prune.ts), then the pruned sets removed. The prune is
 * recorded in the backup in progress before the manifest is written, so one cut short is finished next pass.
 */

/** What step 4 did: the sets removed, and what it said about the others. */
export interface Recorded {
  readonly pruned: readonly string[];
  /** Lines for the action's detail (and so the audit trail): sets dropped from the manifest, a prune held back. */
  readonly notes: readonly string[];
}

/** The group whose manifest is written. */
export interface RecordedGroup {
  readonly id: number;
  readonly fullPath: string;
  /** Its backup folder, where the manifest is. */
  readonly folder: string;
}

/** Records `entry` (hashed as it was written when `fresh`; listed before a restart otherwise) and prunes. */
export async function recordSet(
  config: GroupBackupConfig,
  context: ActContext,
  group: RecordedGroup,
  inflight: InflightRecord,
  entry: ListedSet,
  fresh: boolean,
): Promise<Recorded> {
  const manifest = await readManifest(context.files, group.folder);
  const label = setLabel(entry);
  const listed = [entry, ...(manifest?.sets ?? []).filter((set) => setLabel(set) !== label)];
  // The new set's archives were verified and hashed as they were written, moments ago.
  const hashed = new Set<string>(fresh ? [label] : []);
  const { counted, plan, pruned, notes } = await checkedPlan(
    config,
    context,
    group,
    listed,
    hashed,
    leftoversOf(config, inflight.current.pruning, listed),
  );
  if (!counted.includes(entry)) {
    // Only a set listed before a restart can fail here (the new one was hashed as it was written): the set is lost,
    // the manifest keeps what does stand, nothing is pruned, and the next pass takes a set anew.
    await writeManifestOf(context, group, counted);
    await inflight.forget();
    throw new Error(
      `${group.fullPath}: the set's own archives no longer stand as recorded; nothing pruned: ${notes.join('; ')}`,
    );
  }
  await inflight.save({ pruning: pruned });
  await writeManifestOf(
    context,
    group,
    plan.keep.map(({ set }) => set),
  );
  await removeSets(context, group.folder, pruned);
  return { pruned, notes: plan.held ? [...notes, plan.held] : notes };
}

async function writeManifestOf(context: ActContext, group: RecordedGroup, sets: readonly ListedSet[]): Promise<void> {
  const manifest: Manifest = {
    version: 2,
    group: { id: group.id, full_path: group.fullPath },
    updated_at: context.clock.now().toISOString(),
    sets: [...sets].sort((a, b) => Date.parse(b.taken_at) - Date.parse(a.taken_at)),
  };
  await writeManifest(context.files, group.folder, manifest);
}
