import type { Logger } from '@nestjs/common';
import type { Clock } from '../clock';
import type {
  DiscoveredGroup,
  DiscoveredProject,
  DiscoveryRoot,
  GroupSelection,
  ProjectSelection,
} from '../config/project-selection';
import type { GroupRef, ProjectRef } from '../config/validators';
import type { GitlabClient } from '../gitlab/client';
import { NotFoundError } from '../gitlab/transport/errors';
import type { ObserveContext, ProjectDiscoverer } from './policy';

/**
 * Where discovery keeps what it found, shared by the policies and the replicas: Redis in the daemon (see
 * RedisDiscoveryCache). `claim` makes one replica the one that lists a group while the others use what is cached.
 */
export interface DiscoveryCache {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string, ttlMs: number): Promise<void>;
  /** Takes the right to refresh `key` for `ttlMs`; the returned function gives it back. Undefined: someone has it. */
  claim(key: string, ttlMs: number): Promise<(() => Promise<void>) | undefined>;
}

/** What one listing of a group found, as it is cached. */
interface CachedListing {
  /** When it was read, ms since the epoch (the daemon's clock). */
  readonly at: number;
  /** Projects (or groups) as `[id, full path]`: thousands of them, so no field names. */
  readonly projects: ReadonlyArray<readonly [number, string]>;
  /** The group itself is gone (404): nothing to list until it is back. */
  readonly gone?: true;
}

/** A project a selection resolved to, with the reference the policy uses for it. */
interface Resolved extends DiscoveredProject {
  /** As the policy file wrote it for a listed project; the full path for one a glob found. */
  readonly ref: ProjectRef;
}

/** The projects `selection` covers, for an observer: through the engine's discovery. */
export async function selectProjects(
  context: ObserveContext,
  selection: ProjectSelection,
  includeArchived: boolean,
): Promise<ProjectRef[]> {
  return context.discovery.select(selection, includeArchived);
}

/** A group a selection resolved to, with the reference the policy uses for it. */
interface ResolvedGroup extends DiscoveredGroup {
  /** As the policy file wrote it for a listed group; the full path for one a glob found. */
  readonly ref: GroupRef;
}

/** The groups `selection` covers (access_requests' `groups:`), as `selectProjects` for projects. */
export async function selectGroups(context: ObserveContext, selection: GroupSelection): Promise<GroupRef[]> {
  return context.discovery.selectGroups(selection);
}

/**
 * Discovery without the forge, for a context built by hand (a test, a benchmark): the projects and groups listed by
 * id or path, as written; a glob or an exclude needs the engine's discovery.
 */
export const LISTED_ONLY: ProjectDiscoverer = {
  select: async (selection) => {
    if (selection.globs.length > 0 || selection.excludes.length > 0)
      throw new Error("project globs and excludes need the engine's discovery");
    return explicitRefs(selection);
  },
  selectGroups: async (selection) => {
    if (selection.globs.length > 0 || selection.excludes.length > 0)
      throw new Error("group globs and excludes need the engine's discovery");
    return explicitRefs(selection);
  },
};

/**
 * The ids and paths a selection lists, as written, each once (a path in any case is the same project or group): used as
 * they are when the selection has no glob and no exclude, as before globs existed.
 */
function explicitRefs(selection: ProjectSelection | GroupSelection): Array<string | number> {
  const seen = new Set<string>();
  const refs: Array<string | number> = [];
  for (const item of selection.explicit) {
    const ref = item.kind === 'id' ? item.id : item.path;
    const key = String(ref).toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    refs.push(ref);
  }
  return refs;
}

/** A listing is re-read by whoever finds it older than the interval; the claim outlives a slow listing. */
const CLAIM_MS = 120_000;
/** A replica that finds nothing cached and another replica listing waits this long for its result, then lists itself. */
const WAIT_FOR_OTHERS_MS = 15_000;
const WAIT_STEP_MS = 250;

/**
 * Resolves the project globs of the policy file (`acme/**`, `!acme/legacy-*`) to projects, through the forge's
 * group projects listing. Each group is listed once per `discovery_interval` for the whole cluster, whatever number
 * of policies and replicas select from it: the listing is cached (in Redis, in the daemon), and only the replica
 * that claims a stale one lists it again, while the others keep using the old one. Listed projects given by id or
 * path cost nothing when a selection has no glob and no exclude: they are used as written, as before globs existed.
 */
export class ProjectDiscovery implements ProjectDiscoverer {
  constructor(
    private readonly client: GitlabClient,
    private readonly cache: DiscoveryCache,
    private readonly clock: Clock,
    private readonly intervalMs: number,
    private readonly logger: Pick<Logger, 'log' | 'warn'>,
  ) {}

  /** The projects `selection` names, in its order (see ProjectSelection.select), as references for the client. */
  async select(selection: ProjectSelection, includeArchived: boolean): Promise<ProjectRef[]> {
    if (selection.globs.length === 0 && selection.excludes.length === 0) return explicitRefs(selection);
    const listed = await Promise.all(
      selection.discoveryRoots().map((root) => this.groupProjects(root, includeArchived)),
    );
    const explicit = await Promise.all(
      selection.explicit.map((item) => this.listedProject(item.kind === 'id' ? item.id : item.path)),
    );
    const candidates: Resolved[] = [];
    for (const project of explicit) if (project) candidates.push(project);
    for (const projects of listed) candidates.push(...projects);
    return selection.select(candidates, includeArchived).map((project) => project.ref);
  }

  /** The groups `selection` names, in its order (see GroupSelection.select), as references for the client. */
  async selectGroups(selection: GroupSelection): Promise<GroupRef[]> {
    if (selection.globs.length === 0 && selection.excludes.length === 0) return explicitRefs(selection);
    const listed = await Promise.all(selection.discoveryRoots().map((root) => this.groupTree(root)));
    const explicit = await Promise.all(
      selection.explicit.map((item) => this.listedGroup(item.kind === 'id' ? item.id : item.path)),
    );
    const candidates: ResolvedGroup[] = [];
    for (const group of explicit) if (group) candidates.push(group);
    for (const groups of listed) candidates.push(...groups);
    return selection.select(candidates).map((group) => group.ref);
  }

  /**
   * A discovery root of a `groups:` selection: the group itself (`acme/**` covers acme) and its subgroups, direct ones
   * or all below it. Only groups the token is a member of (directly or through a parent) are listed, as the forge does
   * by default: deciding a group's access requests needs its Owner or Maintainer role anyway.
   */
  private async groupTree(root: DiscoveryRoot): Promise<ResolvedGroup[]> {
    const key = `subgroups:${root.group.toLowerCase()}:${root.includeSubgroups ? 'tree' : 'own'}`;
    const listing = await this.listing(key, `group ${root.group}`, 'its subgroups are', async () => {
      const self = await this.client.groups.show(root.group, { with_projects: false });
      const groups: Array<[number, string]> = [[self.id, self.full_path]];
      const below = root.includeSubgroups
        ? this.client.groups.descendantGroups(root.group)
        : this.client.groups.subgroups(root.group);
      for await (const group of below) groups.push([group.id, group.full_path]);
      return groups;
    });
    return listing.projects.map(([id, path]) => ({ id, full_path: path, ref: path }));
  }

  /** A group the policy lists by id or path, read once per interval: its id and path, for excludes. */
  private async listedGroup(ref: GroupRef): Promise<ResolvedGroup | undefined> {
    const listing = await this.listing(
      `listed-group:${String(ref).toLowerCase()}`,
      `group ${String(ref)}`,
      'it is',
      async () => {
        const group = await this.client.groups.show(ref, { with_projects: false });
        return [[group.id, group.full_path]];
      },
    );
    const [found] = listing.projects;
    return found ? { id: found[0], full_path: found[1], ref } : undefined;
  }

  /** The projects of one discovery root (archived ones only when asked for), from the cache while it is fresh. */
  async groupProjects(root: DiscoveryRoot, includeArchived: boolean): Promise<Resolved[]> {
    const key = `group:${root.group.toLowerCase()}:${root.includeSubgroups ? 'tree' : 'own'}:${includeArchived ? 'all' : 'active'}`;
    const listing = await this.listing(key, `group ${root.group}`, 'its projects are', async () => {
      const projects: Array<[number, string]> = [];
      // Archived projects are filtered by the forge when they are not wanted; `simple` keeps the pages small.
      const pages = this.client.projects.allForGroup(root.group, {
        simple: true,
        with_shared: false,
        include_subgroups: root.includeSubgroups,
        ...(includeArchived ? {} : { archived: false }),
      });
      for await (const project of pages) projects.push([project.id, project.path_with_namespace]);
      return projects;
    });
    // Listed with `archived: false` unless archived ones are wanted, so none here is archived when that matters.
    return listing.projects.map(([id, path]) => ({ id, path_with_namespace: path, archived: false, ref: path }));
  }

  /** A project the policy lists by id or path, read once per interval: its id and path, for excludes. */
  private async listedProject(ref: ProjectRef): Promise<Resolved | undefined> {
    const listing = await this.listing(
      `project:${String(ref).toLowerCase()}`,
      `project ${String(ref)}`,
      'it is',
      async () => {
        const project = await this.client.projects.show(ref);
        return [[project.id, project.path_with_namespace]];
      },
    );
    const [found] = listing.projects;
    // A listed project is selected even when archived (the policy named it), so its archived flag does not matter.
    return found ? { id: found[0], path_with_namespace: found[1], archived: false, ref } : undefined;
  }

  /**
   * `read` (ids and full paths) through the cache. A 404 means `what` is gone (deleted, moved, or out of the token's
   * sight): that is cached too, as an empty listing, with one warning, so that it is not asked again every pass.
   */
  private listing(
    key: string,
    what: string,
    leftOut: string,
    read: () => Promise<Array<[number, string]>>,
  ): Promise<CachedListing> {
    return this.fresh(key, async () => {
      try {
        const projects = await read();
        return { at: this.clock.now(), projects };
      } catch (error) {
        if (!(error instanceof NotFoundError)) throw error;
        this.logger.warn(
          `discovery: ${what} not found (deleted, moved or not visible to the token); ${leftOut} left out until it is back`,
        );
        return { at: this.clock.now(), projects: [], gone: true };
      }
    });
  }

  /** The cached value of `key` while fresh; else `read` by this replica, or by another that claimed it first. */
  private async fresh(key: string, read: () => Promise<CachedListing>): Promise<CachedListing> {
    const cached = parseListing(await this.cache.get(key));
    const now = this.clock.now();
    if (cached && now - cached.at < this.intervalMs && cached.at <= now) return cached;
    const release = await this.cache.claim(key, CLAIM_MS);
    if (!release) {
      // Another replica is reading it: the old listing serves meanwhile; with none, wait a little for the new one.
      if (cached) return cached;
      for (let waited = 0; waited < WAIT_FOR_OTHERS_MS; waited += WAIT_STEP_MS) {
        await this.clock.sleep(WAIT_STEP_MS);
        const arrived = parseListing(await this.cache.get(key));
        if (arrived) return arrived;
      }
    }
    try {
      const listing = await read();
      // Kept for two intervals: a replica that finds it stale still has it to work with while one refreshes it.
      await this.cache.set(key, JSON.stringify(listing), 2 * this.intervalMs);
      return listing;
    } finally {
      await release?.();
    }
  }
}

function parseListing(text: string | undefined): CachedListing | undefined {
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as Partial<CachedListing>;
    if (typeof value.at !== 'number' || !Array.isArray(value.projects)) return undefined;
    const projects = value.projects.filter(
      (entry): entry is readonly [number, string] =>
        Array.isArray(entry) && typeof entry[0] === 'number' && typeof entry[1] === 'string',
    );
    return { at: value.at, projects, ...(value.gone ? { gone: true as const } : {}) };
  } catch {
    return undefined; // damaged: listed again
  }
}
