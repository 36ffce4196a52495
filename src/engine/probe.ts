import type { GroupSelection, ProjectSelection } from '../config/project-selection';
import type { GitlabClient, PageOptions, Paginated } from '../gitlab';
import type { TargetProbe } from './policy';

/** One item of one page: enough to show the listing exists and the token may read it. */
export function onePage<T>(): PageOptions<T> {
  return { perPage: 1, maxPages: 1, onPageLimit: 'stop' };
}

/** Reads the first page of a listing and drops it; the forge's refusal is the answer a probe looks for. */
export async function readFirstPage<T>(items: Paginated<T>): Promise<void> {
  for await (const item of items) {
    void item;
    break;
  }
}

/**
 * A probe per target of a `projects:` selection: each project listed by id or path through `read` (the listing the
 * policy reads), and each glob's group through its projects listing, warning when the glob matches none of them.
 */
export function selectionProbes(
  selection: ProjectSelection,
  listed: {
    readonly what: string;
    readonly needs: string;
    read(client: GitlabClient, project: string | number): Promise<void>;
  },
): TargetProbe[] {
  const projects = selection.explicit.map((item) => (item.kind === 'id' ? item.id : item.path));
  const globs = selection.discoveryRoots().map((root): TargetProbe => {
    const patterns = selection.globs.filter((glob) => glob.root?.toLowerCase() === root.group.toLowerCase());
    return {
      target: `projects ${patterns.map((glob) => glob.pattern).join(', ')} (group ${root.group})`,
      needs: 'membership of the group (Reporter role or higher to list its projects)',
      read: async (client) => {
        // Each glob on its own: one that matches nothing is a mistake even when another glob of the group matches.
        const unmatched = new Set(patterns);
        const pages = client.projects.allForGroup(root.group, {
          simple: true,
          with_shared: false,
          include_subgroups: root.includeSubgroups,
        });
        for await (const project of pages) {
          if (selection.excluded(project.path_with_namespace, project.id)) continue;
          for (const glob of unmatched) if (glob.matcher.test(project.path_with_namespace)) unmatched.delete(glob);
          if (unmatched.size === 0) return undefined;
        }
        const none = [...unmatched].map((glob) => glob.pattern).join(', ');
        return `${none} ${unmatched.size === 1 ? 'matches' : 'match'} no project the token can see`;
      },
    };
  });
  return [
    ...projects.map((project): TargetProbe => ({
      target: `project ${project} (${listed.what})`,
      needs: listed.needs,
      read: (client) => listed.read(client, project),
    })),
    ...globs,
  ];
}

/**
 * A probe per target of a `groups:` selection: each group listed by id or path through `read`, and each glob's group
 * through the listing discovery uses (the group and its subgroups), warning when the glob matches none of them.
 */
export function groupSelectionProbes(
  selection: GroupSelection,
  listed: {
    readonly what: string;
    readonly needs: string;
    read(client: GitlabClient, group: string | number): Promise<void>;
  },
): TargetProbe[] {
  const groups = selection.explicit.map((item) => (item.kind === 'id' ? item.id : item.path));
  const globs = selection.discoveryRoots().map((root): TargetProbe => {
    const patterns = selection.globs.filter((glob) => glob.root?.toLowerCase() === root.group.toLowerCase());
    return {
      target: `groups ${patterns.map((glob) => glob.pattern).join(', ')} (group ${root.group})`,
      needs: 'membership of the group',
      read: async (client) => {
        const unmatched = new Set(patterns);
        const consider = (group: { id: number; full_path: string }) => {
          if (selection.excluded(group.full_path, group.id)) return;
          for (const glob of unmatched) if (glob.matcher.test(group.full_path)) unmatched.delete(glob);
        };
        consider(await client.groups.show(root.group, { with_projects: false }));
        const below = root.includeSubgroups
          ? client.groups.descendantGroups(root.group)
          : client.groups.subgroups(root.group);
        for await (const group of below) {
          if (unmatched.size === 0) break;
          consider(group);
        }
        if (unmatched.size === 0) return undefined;
        const none = [...unmatched].map((glob) => glob.pattern).join(', ');
        return `${none} ${unmatched.size === 1 ? 'matches' : 'match'} no group the token is a member of`;
      },
    };
  });
  return [
    ...groups.map((group): TargetProbe => ({
      target: `group ${group} (${listed.what})`,
      needs: listed.needs,
      read: (client) => listed.read(client, group),
    })),
    ...globs,
  ];
}
