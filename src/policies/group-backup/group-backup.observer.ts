import { join } from 'node:path';
import { selectGroups } from '../../engine/discovery';
import { mapTargets } from '../../engine/map-limited';
import type { PolicyContext } from '../../engine/policy';
import { readJsonObject } from '../../engine/policy-state';
import type { GroupBackupSnapshot, GroupSnapshot, InflightBackup } from './group-backup.decide';
import { folderContents, readManifest } from './group-backup.files';
import type { GroupBackupConfig } from './group-backup.schema';

/**
 * Reading what the backup decisions need: each selected group's id and full path (one read each: its folder is named
 * by the path), what its manifest lists, and a backup begun and not finished, from the policy's state.
 */

export function inflightKey(groupId: number): string {
  return `inflight:${groupId}`;
}

export function groupFolder(config: GroupBackupConfig, fullPath: string): string {
  return join(config.destination, ...fullPath.split('/'));
}

export async function readInflight(context: PolicyContext, groupId: number): Promise<InflightBackup | undefined> {
  const stored = readJsonObject(await context.state.get(inflightKey(groupId)));
  // A record that is not one (written by hand, cut short) is ignored: the backup starts afresh rather than failing the
  // pass of every group on a date that cannot be read.
  if (!stored || typeof stored.key !== 'string' || !isDate(stored.taken_at)) return undefined;
  for (const field of ['export_requested_at', 'relations_requested_at', 'last_download_at'] as const) {
    if (stored[field] !== undefined && !isDate(stored[field])) return undefined;
  }
  if (stored.pruning !== undefined && !(Array.isArray(stored.pruning) && stored.pruning.every((name) => typeof name === 'string'))) return undefined;
  return stored as unknown as InflightBackup;
}

function isDate(value: unknown): value is string {
  return typeof value === 'string' && !Number.isNaN(Date.parse(value));
}

export async function observeGroupBackups(config: GroupBackupConfig, context: PolicyContext): Promise<GroupBackupSnapshot> {
  const refs = await selectGroups(context, config.groups);
  const globbed = config.groups.globs.length + config.groups.excludes.length > 0;
  const groups = await mapTargets(context, refs, async (ref): Promise<GroupSnapshot> => {
    const group = await context.client.groups.show(ref, { with_projects: false });
    const folder = groupFolder(config, group.full_path);
    const manifest = await readManifest(folder);
    const contents = await folderContents(folder, manifest);
    const inflight = await readInflight(context, group.id);
    return {
      id: group.id,
      fullPath: group.full_path,
      archives: manifest?.archives ?? [],
      unlisted: contents.unlisted,
      ...(inflight ? { inflight } : {}),
    };
  });
  return {
    groups: groups.filter((group): group is GroupSnapshot => group !== undefined),
    occasion: context.occasion ?? 'schedule',
    ...(globbed ? { covered: groups.filter((group) => group !== undefined).map((group) => group.fullPath) } : {}),
  };
}
