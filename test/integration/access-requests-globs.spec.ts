import type { INestApplicationContext } from '@nestjs/common';
import { EngineService } from '../../src/engine/engine.service';
import { accessRequestsPolicy } from '../../src/policies/access-requests/access-requests.schema';
import type { World } from '../../src/sandbox';
import { useEngineHarness } from '../support/engine-harness';
import { ADMIN_TOKEN, baseWorld } from '../support/world-builders';

/** One pending request from `otto`, who any rule of these policies denies. */
const PENDING = [{ user: 'otto', requested_at: 'now-2d' }];

/**
 * acme (10) with subgroups platform (11) and platform/tools (12), and legacy (13); outside acme, other (14). Every group
 * and project has one pending request, so what a policy covers is what it denied.
 */
function world(): World {
  const base = baseWorld();
  return {
    ...baseWorld({
      users: [...(base.users ?? []), { id: 70, username: 'otto', email: 'otto@example.org' }],
      groups: [
        { id: 10, path: 'acme', access_requests: PENDING },
        { id: 11, path: 'platform', parent: 'acme', access_requests: PENDING },
        { id: 12, path: 'tools', parent: 'acme/platform', access_requests: PENDING },
        { id: 13, path: 'legacy', parent: 'acme', access_requests: PENDING },
        { id: 14, path: 'other', access_requests: PENDING },
      ],
      projects: [
        { id: 1, path: 'api', namespace: 'acme', access_requests: PENDING },
        { id: 2, path: 'web', namespace: 'acme/platform', access_requests: PENDING },
        { id: 3, path: 'old', namespace: 'acme', archived: true, access_requests: PENDING },
        { id: 4, path: 'elsewhere', namespace: 'other', access_requests: PENDING },
      ],
    }),
    // The engine reads the real clock, so the sandbox must too.
    now: undefined,
  };
}

describe('access_requests over group and project globs, against the sandbox with a real Redis', () => {
  const harness = useEngineHarness({ name: 'access-requests-globs', world, policyTypes: [accessRequestsPolicy] });

  function app(selection: string[]): Promise<INestApplicationContext> {
    return harness.app({
      token: ADMIN_TOKEN,
      policies: [
        '  - name: gate',
        '    type: access_requests',
        '    interval: 5m',
        '    otherwise: deny',
        ...selection.map((line) => `    ${line}`),
      ],
    });
  }

  /** Where otto's request was denied, as the daemon named it: `group acme/platform`, `project acme/api`, sorted. */
  const denied = () =>
    harness.sandbox.state.requestLog
      .filter((entry) => entry.method === 'DELETE' && /access_requests\/70$/.test(entry.path))
      .map((entry) => {
        const [, kind, ref] = /^\/api\/v4\/(groups|projects)\/([^/]+)\//.exec(entry.path) ?? [];
        return `${kind === 'groups' ? 'group' : 'project'} ${decodeURIComponent(ref ?? '')}`;
      })
      .sort();

  it('decides in exactly the groups and projects the globs select: subgroups in, excludes and archived out', async () => {
    const engineApp = await app(['groups: ["acme/**", "!acme/legacy"]', 'projects: ["acme/**"]']);
    const pass = await engineApp.get(EngineService).runPass('gate', 'act');
    expect(pass.error).toBeUndefined();
    expect(denied()).toEqual([
      'group acme',
      'group acme/platform',
      'group acme/platform/tools',
      'project acme/api',
      'project acme/platform/web',
    ]);
    // acme/** is acme itself and every group below it; groups before projects, each by path.
    expect(pass.decisions.map((decision) => decision.target.split(':')[0])).toEqual([
      'acme',
      'acme/platform',
      'acme/platform/tools',
      'acme/api',
      'acme/platform/web',
    ]);
  });

  it('takes only direct subgroups with acme/*, archived projects with include_archived, and says what it covers in plan', async () => {
    const engineApp = await app(['groups: ["acme/*", other]', 'projects: ["acme/*"]', 'include_archived: true']);
    const pass = await engineApp.get(EngineService).runPass('gate', 'plan');
    expect(pass.coveredGroups).toEqual(['other', 'acme/legacy', 'acme/platform']);
    expect(pass.covered).toEqual(['acme/api', 'acme/old']);
    expect(denied()).toEqual([]);
  });

  it('lists the group tree once per discovery interval, and finds a new subgroup at the next discovery', async () => {
    const engineApp = await app(['groups: ["acme/**"]']);
    const engine = engineApp.get(EngineService);
    // Acting passes: a plan keeps what it lists to itself.
    await engine.runPass('gate', 'act');
    await engine.runPass('gate', 'act');
    const treeListings = () =>
      harness.sandbox.state.requestLog.filter((entry) => entry.path === '/api/v4/groups/acme/descendant_groups').length;
    expect(treeListings()).toBe(1);

    // `other` moves under acme; once the discovery interval is over (its cache dropped), the next pass covers it.
    const state = harness.sandbox.state;
    state.groups.get(14)!.parent_id = 10;
    await harness.redis.del(...(await harness.redis.keys(`${harness.prefix}:discovery:*`)));
    expect((await engine.runPass('gate', 'act')).error).toBeUndefined();
    expect(treeListings()).toBe(2);
    expect(denied()).toContain('group acme/other');
  });

  it('drops a group deleted since discovery without failing the pass; a listed group that is gone is an error for that group only', async () => {
    const engineApp = await app(['groups: ["acme/**"]']);
    const engine = engineApp.get(EngineService);
    await engine.runPass('gate', 'plan');
    harness.sandbox.state.groups.delete(12);
    const pass = await engine.runPass('gate', 'act');
    expect(pass.error).toBeUndefined();
    expect(denied()).toEqual(['group acme', 'group acme/legacy', 'group acme/platform']);

    // A group the file names that is gone is an error for that group: named with the forge's answer, not dropped.
    const listed = await app(['groups: [acme/platform/tools, other]']);
    const partial = await listed.get(EngineService).runPass('gate', 'act');
    expect(partial.error).toBeUndefined();
    expect(partial.unobserved).toEqual([
      {
        target: 'group acme/platform/tools',
        reason: 'GET groups/acme%2Fplatform%2Ftools/access_requests?page=1&per_page=100 → 404: 404 Group Not Found',
      },
    ]);
    expect(partial.decisions.map((decision) => decision.target)).toEqual(['other: otto (user 70)']);
  });
});
