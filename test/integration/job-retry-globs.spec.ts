import type { INestApplicationContext } from '@nestjs/common';
import { EngineService } from '../../src/engine/engine.service';
import { POLICY_TYPES } from '../../src/policies';
import type { World } from '../../src/sandbox';
import { useEngineHarness } from '../support/engine-harness';
import { acmeGroup, baseWorld, type ProjectInput } from '../support/world-builders';

const RESET = 'Error: read ECONNRESET: connection reset by peer\n';

/** A project with one failed job (id `job`) whose log matches the policy. */
function withFailedJob(path: string, namespace: string, id: number, fields: Partial<ProjectInput> = {}): ProjectInput {
  return {
    id,
    path,
    namespace,
    pipelines: [
      {
        id: id * 100,
        ref: 'main',
        jobs: [{ id: id * 100 + 1, name: 'flaky', stage: 'test', status: 'failed', finished_at: 'now-5m', log: RESET }],
      },
    ],
    ...fields,
  };
}

/**
 * acme with a subgroup platform and its subgroup platform/tools; outside acme, a group `other`. The policy covers
 * `acme/**` but not `acme/platform/legacy-*`, and archived projects only when it says so.
 */
function world(): World {
  return {
    ...baseWorld({
      groups: [
        acmeGroup(),
        { id: 11, path: 'platform', parent: 'acme' },
        { id: 12, path: 'tools', parent: 'acme/platform' },
        { id: 13, path: 'other' },
      ],
      projects: [
        withFailedJob('api', 'acme', 1),
        withFailedJob('web', 'acme/platform', 2),
        withFailedJob('cli', 'acme/platform/tools', 3),
        withFailedJob('legacy-billing', 'acme/platform', 4),
        withFailedJob('old', 'acme', 5, { archived: true }),
        withFailedJob('elsewhere', 'other', 6),
      ],
    }),
    // The engine reads the real clock, so the sandbox must too.
    now: undefined,
  };
}

describe('job_retry over project globs, against the sandbox with a real Redis', () => {
  const harness = useEngineHarness({ name: 'job-retry-globs', world, policyTypes: POLICY_TYPES });

  function app(projects: string, extra: string[] = []): Promise<INestApplicationContext> {
    return harness.app({
      gitlab: 'max_requests_per_minute: 10000',
      policies: [
        '  - name: flaky',
        '    type: job_retry',
        `    projects: ${projects}`,
        '    interval: 1m',
        '    match: { failure_log: ["(?i)connection reset"] }',
        ...extra,
      ],
    });
  }

  const retriedProjects = () =>
    harness.sandbox.state.requestLog
      .filter((entry) => entry.method === 'POST' && entry.path.endsWith('/retry'))
      .map((entry) => Number(/projects\/(\d+)\//.exec(entry.path)?.[1]))
      .sort();

  const jobListings = () =>
    harness.sandbox.state.requestLog.filter(
      (entry) => entry.method === 'GET' && /\/projects\/[^/]+\/jobs$/.test(entry.path),
    ).length;

  it('retries in exactly the projects the globs select: subgroups in, excludes and archived out', async () => {
    const engineApp = await app('["acme/**", "!acme/platform/legacy-*"]');
    const pass = await engineApp.get(EngineService).runPass('flaky', 'act');
    expect(pass.error).toBeUndefined();
    expect(retriedProjects()).toEqual([1, 2, 3]);
    // Decisions name the projects by path, in path order.
    expect(pass.decisions.map((decision) => decision.target)).toEqual([
      'acme/api job 101 (flaky)',
      'acme/platform/tools/cli job 301 (flaky)',
      'acme/platform/web job 201 (flaky)',
    ]);
  });

  it('takes archived projects with include_archived, and a listed project whatever a glob says', async () => {
    const engineApp = await app('["acme/*", other/elsewhere]', ['    include_archived: true']);
    const pass = await engineApp.get(EngineService).runPass('flaky', 'plan');
    expect(pass.decisions.map((decision) => decision.target.split(' ')[0])).toEqual([
      'other/elsewhere',
      'acme/api',
      'acme/old',
    ]);
  });

  it('lists a group once per discovery interval, not once per pass', async () => {
    const engineApp = await app('["acme/**"]');
    const engine = engineApp.get(EngineService);
    await engine.runPass('flaky', 'act');
    await engine.runPass('flaky', 'act');
    const groupListings = harness.sandbox.state.requestLog.filter(
      (entry) => entry.path === '/api/v4/groups/acme/projects',
    );
    expect(groupListings).toHaveLength(1);
    // One jobs listing per selected project and pass.
    expect(jobListings()).toBe(2 * 4);
  });

  it('lists a group once for two replicas on one Redis', async () => {
    const [first, second] = await Promise.all([app('["acme/**"]'), app('["acme/**"]')]);
    // Acting passes: a plan keeps what it lists to itself.
    await Promise.all([
      first.get(EngineService).runPass('flaky', 'act'),
      second.get(EngineService).runPass('flaky', 'act'),
    ]);
    const groupListings = harness.sandbox.state.requestLog.filter(
      (entry) => entry.path === '/api/v4/groups/acme/projects',
    );
    expect(groupListings).toHaveLength(1);
  });

  it('drops a project deleted since discovery without failing the pass, and finds a new one at the next discovery', async () => {
    const engineApp = await app('["acme/**"]');
    const engine = engineApp.get(EngineService);
    await engine.runPass('flaky', 'act');
    expect(retriedProjects()).toEqual([1, 2, 3, 4]);

    // acme/web is deleted while discovery still lists it.
    const state = harness.sandbox.state;
    state.projects.delete(2);
    const afterDeletion = await engine.runPass('flaky', 'act');
    expect(afterDeletion.error).toBeUndefined();

    // A project arrives in acme (moved from `other`); the next discovery (the interval is over) finds it.
    state.projects.get(6)!.namespace_id = state.group('acme')!.id;
    await harness.redis.del(...(await harness.redis.keys(`${harness.prefix}:discovery:*`)));
    const next = await engine.runPass('flaky', 'act');
    expect(next.error).toBeUndefined();
    expect(retriedProjects()).toEqual([1, 2, 3, 4, 6]);
    expect(next.decisions.map((decision) => decision.target.split(' ')[0])).not.toContain('acme/web');
  });

  it('says which projects a glob selected in plan, with nothing retried', async () => {
    const engineApp = await app('["acme/platform/*"]');
    const pass = await engineApp.get(EngineService).runPass('flaky', 'plan');
    expect(pass.decisions.map((decision) => decision.target.split(' ')[0])).toEqual([
      'acme/platform/legacy-billing',
      'acme/platform/web',
    ]);
    expect(pass.covered).toEqual(['acme/platform/legacy-billing', 'acme/platform/web']);
    expect(retriedProjects()).toEqual([]);
  });
});
