import { join } from 'node:path';
import { selectGroups } from '../../engine/discovery';
import { observeTargets } from '../../engine/observe-targets';
import { NetworkError, RateLimitedError, ServerError, UnauthorizedError } from '../../gitlab/transport/errors';
import type { ObserveContext, StepContext } from '../../engine/policy';
import { readJsonObject } from '../../engine/json';
import type { GroupBackupSnapshot, GroupSnapshot, InflightBackup } from './group-backup.decide';
import { folderContents, type ListedSet, readManifest, setLabel, setProblem } from './group-backup.files';
import { inflightKey } from './group-backup.inflight';
import { isSetName, SET_FILE } from './group-backup.set';
import type { GroupBackupConfig } from './group-backup.schema';

/**
 * Reading what the backup decisions need: each selected group's id and full path (one read each: its folder is named
 * by the path), how many projects its set will export (one listing of the tree), what its manifest lists and the disk
 * really holds, and a set begun and not finished, from the policy's state.
 */

export function groupFolder(config: GroupBackupConfig, fullPath: string): string {
  return join(config.destination, ...fullPath.split('/'));
}

export async function readInflight(context: StepContext, groupId: number): Promise<InflightBackup | undefined> {
  const stored = readJsonObject(await context.state.get(inflightKey(groupId)));
  // A record that is not one (written by hand, cut short) is ignored: the backup starts afresh rather than failing the
  // pass of every group on a date that cannot be read.
  if (!stored || typeof stored.key !== 'string' || !isDate(stored.taken_at)) return undefined;
  if (stored.set !== undefined && !(typeof stored.set === 'string' && isSetName(stored.set))) return undefined;
  for (const field of ['export_requested_at', 'relations_requested_at', 'last_download_at'] as const) {
    if (stored[field] !== undefined && !isDate(stored[field])) return undefined;
  }
  if (
    stored.pruning !== undefined &&
    !(Array.isArray(stored.pruning) && stored.pruning.every((name) => typeof name === 'string'))
  )
    return undefined;
  return stored as unknown as InflightBackup;
}

function isDate(value: unknown): value is string {
  return typeof value === 'string' && !Number.isNaN(Date.parse(value));
}

export async function observeGroupBackups(
  config: GroupBackupConfig,
  context: ObserveContext,
): Promise<GroupBackupSnapshot> {
  const refs = await selectGroups(context, config.groups);
  const globbed = config.groups.globs.length + config.groups.excludes.length > 0;
  // Groups the forge did not answer for because of itself (away, overloaded, the token refused), not the group.
  const unreachable: unknown[] = [];
  // Each group on its own: one the token may not read (403), or one the file names that is gone or hidden (404), is
  // recorded against that group and the pass goes on with the others, ending partial. One a glob found that is gone
  // since discovery drops out with one line.
  const groups = await observeTargets(
    context,
    refs,
    (ref) => ({ target: `group ${ref}`, listed: config.groups.names(ref) }),
    async (ref): Promise<GroupSnapshot | undefined> => {
      let group: Awaited<ReturnType<typeof context.client.groups.show>>;
      let projects: { projects?: number } = {};
      try {
        group = await context.client.groups.show(ref, { with_projects: false });
        if (config.projects) projects = { projects: await countProjects(config, context, group.id) };
      } catch (error) {
        if (isForgeWide(error)) unreachable.push(error);
        throw error;
      }
      const inflight = await readInflight(context, group.id);
      try {
        return {
          id: group.id,
          fullPath: group.full_path,
          ...projects,
          ...(await observeFolder(config, context, group.full_path, inflight)),
          ...(inflight ? { inflight } : {}),
        };
      } catch (error) {
        // A manifest that cannot be read, a folder the daemon may not open: that group's problem, said against it.
        context.unobserved.record(`group ${group.full_path}`, error);
        context.logger.warn(
          `group ${group.full_path}: its backup folder could not be read (${error instanceof Error ? error.message : String(error)}); the other groups go on`,
        );
        return undefined;
      }
    },
  );
  // The forge away at 02:00 for every group is no one group's problem: the pass fails as a whole, and the engine tries
  // it again 5, 10, 20 minutes later, before the next night (a partial pass would wait for that night).
  if (refs.length > 0 && unreachable.length === refs.length) throw unreachable[0];
  const found = groups.filter((group): group is GroupSnapshot => group !== undefined);
  return {
    groups: found,
    // A person's command backs up now; anything else (this type takes no webhook events) keeps to the schedule.
    occasion: context.occasion === 'command' ? 'command' : 'schedule',
    ...(globbed ? { covered: found.map((group) => group.fullPath) } : {}),
    ...(unreachable.length > 0 ? { unreachable: unreachable.length } : {}),
  };
}

/** The projects of the group's tree the set exports: listed as the set lists them (see listSetProjects), counted. */
async function countProjects(config: GroupBackupConfig, context: StepContext, groupId: number): Promise<number> {
  let found = 0;
  for await (const _project of listSetProjects(config, context, groupId)) found += 1;
  return found;
}

/** Every project of the group and its subgroups (archived ones with `include_archived`), its own only, not those shared with it. */
export function listSetProjects(config: GroupBackupConfig, context: StepContext, groupId: number) {
  return context.client.projects.allForGroup(groupId, {
    simple: true,
    with_shared: false,
    include_subgroups: true,
    ...(config.include_archived ? {} : { archived: false }),
  });
}

/** An answer about the forge itself rather than one group: it is away or overloaded (it passes), or refuses the token. */
function isForgeWide(error: unknown): boolean {
  return (
    error instanceof ServerError ||
    error instanceof NetworkError ||
    error instanceof RateLimitedError ||
    error instanceof UnauthorizedError
  );
}

/**
 * The group's folder as the disk has it: the sets the manifest lists and that are there with their recorded sizes (a
 * stat a file; the SHA-256 is read again only before a prune, see group-backup.prune.ts), those listed and not
 * there, what it does not list, and whether the set in progress is written already.
 */
async function observeFolder(
  config: GroupBackupConfig,
  { files }: StepContext,
  fullPath: string,
  inflight: InflightBackup | undefined,
): Promise<Pick<GroupSnapshot, 'sets' | 'notOnDisk' | 'unlisted' | 'inflightArchived'>> {
  const folder = groupFolder(config, fullPath);
  const manifest = await readManifest(files, folder);
  const contents = await folderContents(files, folder, manifest);
  const sets: ListedSet[] = [];
  const notOnDisk: { set: string; problem: string }[] = [];
  for (const set of manifest?.sets ?? []) {
    const problem = await setProblem(files, folder, set, 'size');
    if (problem === undefined) sets.push(set);
    else notOnDisk.push({ set: setLabel(set), problem });
  }
  const inflightLabel = inflight?.set ? setLabel({ set: inflight.set }) : undefined;
  const inflightArchived =
    inflight?.set !== undefined && (await files.stat(join(folder, inflight.set, SET_FILE)))?.isFile === true;
  return {
    sets,
    unlisted: contents.unlisted.filter((label) => label !== inflightLabel),
    ...(notOnDisk.length > 0 ? { notOnDisk } : {}),
    ...(inflightArchived ? { inflightArchived } : {}),
  };
}
