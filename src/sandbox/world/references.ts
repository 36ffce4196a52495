import { checkCredentials, userTokenValue } from './credentials';
import { generatedGroupPaths, type WorldGenerate } from './generate';
import { checkProjectConfig } from './project-config';
import type { WorldDeployKey, WorldGroup, WorldProject, WorldUser } from './schema';

type Report = (path: (string | number)[], message: string) => void;

/**
 * What the schemas cannot see one part at a time: every name a world refers to (a member's user, a project's
 * namespace, a pipeline's parent, a rule's group...) is declared, and nothing is declared twice. Each problem is
 * reported at the key that names it.
 */
export function checkReferences(
  world: {
    users: WorldUser[];
    groups: WorldGroup[];
    projects: WorldProject[];
    deploy_keys: WorldDeployKey[];
    generate?: WorldGenerate;
  },
  report: Report,
): void {
  const usernames = new Set<string>();
  const tokens = new Set<string>();
  world.users.forEach((user, i) => {
    const lower = user.username.toLowerCase();
    if (usernames.has(lower)) report(['users', i, 'username'], `duplicate username ${user.username}`);
    usernames.add(lower);
    user.tokens.forEach((token, t) => {
      const value = userTokenValue(token);
      if (tokens.has(value)) report(['users', i, 'tokens', t], 'token already belongs to another user');
      tokens.add(value);
    });
  });
  const userRef = (path: (string | number)[], username: string | undefined): void => {
    if (username !== undefined && !usernames.has(username.toLowerCase())) report(path, `unknown user ${username}`);
  };

  const groupPaths = new Set<string>();
  world.groups.forEach((group, i) => {
    if (group.parent !== undefined && !groupPaths.has(group.parent.toLowerCase())) {
      report(['groups', i, 'parent'], `unknown parent group ${group.parent} (declare parents before children)`);
    }
    const full = (group.parent ? `${group.parent}/${group.path}` : group.path).toLowerCase();
    if (groupPaths.has(full) || usernames.has(full)) report(['groups', i, 'path'], `namespace ${full} already exists`);
    groupPaths.add(full);
    group.members.forEach((m, j) => userRef(['groups', i, 'members', j, 'user'], m.user));
    group.access_requests.forEach((r, j) => userRef(['groups', i, 'access_requests', j, 'user'], r.user));
    checkIids(group.epics, ['groups', i, 'epics'], 'epic', report);
    group.epics.forEach((epic, e) =>
      epic.label_events.forEach((ev, v) => userRef(['groups', i, 'epics', e, 'label_events', v, 'user'], ev.user)),
    );
  });

  const known = {
    user: (name: string) => usernames.has(name.toLowerCase()),
    group: (path: string) => groupPaths.has(path.toLowerCase()),
  };
  const projectPaths = new Set<string>();
  const pipelineIds = new Set<number>();
  world.projects.forEach((project) => project.pipelines.forEach((p) => p.id !== undefined && pipelineIds.add(p.id)));
  world.projects.forEach((project, i) => {
    const ns = project.namespace.toLowerCase();
    if (!groupPaths.has(ns) && !usernames.has(ns)) report(['projects', i, 'namespace'], `unknown namespace ${ns}`);
    const full = `${ns}/${project.path.toLowerCase()}`;
    if (projectPaths.has(full)) report(['projects', i, 'path'], `duplicate project ${full}`);
    projectPaths.add(full);
    project.members.forEach((m, j) => userRef(['projects', i, 'members', j, 'user'], m.user));
    project.access_requests.forEach((r, j) => userRef(['projects', i, 'access_requests', j, 'user'], r.user));
    project.pipelines.forEach((pipeline, p) => {
      userRef(['projects', i, 'pipelines', p, 'user'], pipeline.user);
      if (pipeline.parent_pipeline !== undefined && !pipelineIds.has(pipeline.parent_pipeline)) {
        report(['projects', i, 'pipelines', p, 'parent_pipeline'], `unknown pipeline ${pipeline.parent_pipeline}`);
      }
      pipeline.jobs.forEach((job, j) => userRef(['projects', i, 'pipelines', p, 'jobs', j, 'user'], job.user));
      pipeline.bridges.forEach((bridge, b) => {
        userRef(['projects', i, 'pipelines', p, 'bridges', b, 'user'], bridge.user);
        if (bridge.downstream_pipeline !== undefined && !pipelineIds.has(bridge.downstream_pipeline)) {
          report(
            ['projects', i, 'pipelines', p, 'bridges', b, 'downstream_pipeline'],
            `unknown pipeline ${bridge.downstream_pipeline}`,
          );
        }
      });
    });
    checkIids(project.issues, ['projects', i, 'issues'], 'issue', report);
    checkIids(project.merge_requests, ['projects', i, 'merge_requests'], 'merge request', report);
    project.issues.forEach((issue, n) => {
      issue.label_events.forEach((ev, v) => userRef(['projects', i, 'issues', n, 'label_events', v, 'user'], ev.user));
      issue.weight_events.forEach((ev, v) =>
        userRef(['projects', i, 'issues', n, 'weight_events', v, 'user'], ev.user),
      );
    });
    project.merge_requests.forEach((mr, n) =>
      mr.label_events.forEach((ev, v) =>
        userRef(['projects', i, 'merge_requests', n, 'label_events', v, 'user'], ev.user),
      ),
    );
    project.shared_with_groups.forEach((path, g) => {
      if (!groupPaths.has(path.toLowerCase()))
        report(['projects', i, 'shared_with_groups', g], `unknown group ${path}`);
    });
    const branchNames = new Set<string>();
    project.protected_branches.forEach((branch, b) => {
      if (branchNames.has(branch.name)) {
        report(['projects', i, 'protected_branches', b, 'name'], `branch ${branch.name} is already protected`);
      }
      branchNames.add(branch.name);
      for (const kind of ['allowed_to_push', 'allowed_to_merge', 'allowed_to_unprotect'] as const) {
        branch[kind].forEach((entry, e) => {
          const path = ['projects', i, 'protected_branches', b, kind, e];
          if ('user' in entry) userRef([...path, 'user'], entry.user);
          else if (!groupPaths.has(entry.group.toLowerCase()))
            report([...path, 'group'], `unknown group ${entry.group}`);
        });
      }
    });
    checkProjectConfig(project, ['projects', i], known, report);
    project.registry.forEach((repository, r) => {
      const names = new Set<string>();
      repository.tags.forEach((tag, t) => {
        if (names.has(tag.name)) report(['projects', i, 'registry', r, 'tags', t, 'name'], `duplicate tag ${tag.name}`);
        names.add(tag.name);
      });
    });
  });
  world.projects.forEach((project, i) =>
    project.allowed_agents.forEach((agent, a) => {
      if (!projectPaths.has(agent.config_project.toLowerCase())) {
        report(['projects', i, 'allowed_agents', a, 'config_project'], `unknown project ${agent.config_project}`);
      }
    }),
  );
  checkCredentials(
    [
      ...world.groups.map((group, i) => ({ path: ['groups', i], credentials: group })),
      ...world.projects.map((project, i) => ({ path: ['projects', i], credentials: project })),
    ],
    world.users.flatMap((user, i) =>
      user.tokens.map((token, t) => ({ path: ['users', i, 'tokens', t], value: userTokenValue(token) })),
    ),
    report,
  );
  world.deploy_keys.forEach((key, k) =>
    key.projects.forEach((link, l) => {
      if (!projectPaths.has(link.project.toLowerCase())) {
        report(['deploy_keys', k, 'projects', l, 'project'], `unknown project ${link.project}`);
      }
    }),
  );
  if (world.generate) {
    const generate = world.generate;
    generate.members.forEach((m, j) => userRef(['generate', 'members', j, 'user'], m.user));
    if (generate.parent !== undefined && !groupPaths.has(generate.parent.toLowerCase())) {
      report(['generate', 'parent'], `unknown parent group ${generate.parent}`);
    }
    const taken = generatedGroupPaths(generate).find(
      (path) => groupPaths.has(path.toLowerCase()) || usernames.has(path.toLowerCase()),
    );
    if (taken !== undefined) report(['generate', 'path_prefix'], `namespace ${taken} already exists`);
  }
}

function checkIids(records: { iid: number }[], path: (string | number)[], what: string, report: Report): void {
  const seen = new Set<number>();
  records.forEach((record, i) => {
    if (seen.has(record.iid)) report([...path, i, 'iid'], `duplicate ${what} iid ${record.iid}`);
    seen.add(record.iid);
  });
}
