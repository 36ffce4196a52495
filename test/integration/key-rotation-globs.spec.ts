import type { INestApplicationContext } from '@nestjs/common';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MovableClock } from '../../src/clock';
import { EngineService, type PassResult } from '../../src/engine/engine.service';
import { keyRotationPolicy } from '../../src/policies/key-rotation/key-rotation.schema';
import type { World } from '../../src/sandbox';
import { aPublicKey } from '../support/builders/keys';
import { useEngineHarness } from '../support/engine-harness';
import { call } from '../support/sandbox-http';
import { acmeGroup, ADMIN_TOKEN, baseWorld } from '../support/world-builders';

const HOUR_MS = 3_600_000;
/** The old `release` deploy key, on every project of the world; `release-ci`, only on other/elsewhere at first. */
const RELEASE = 200;
const RELEASE_CI = 300;

/** Projects by id: acme (1, 2, 6 archived), acme/platform (3, 5), acme/platform/tools (4), other (7). */
const API = 1;
const WEB = 2;
const WORKER = 3;
const CLI = 4;
const LEGACY = 5;
const OLD = 6;
const ELSEWHERE = 7;

/**
 * acme with subgroup platform and its subgroup platform/tools, an archived acme/old, and outside acme a group
 * `other`. The 100-day-old `release` key is enabled on all seven projects (pushing on acme/api and the cli), a young
 * `release-young` key on acme/api only.
 */
function world(): World {
  const base = baseWorld();
  return {
    ...base,
    groups: [
      acmeGroup(),
      { id: 11, path: 'platform', parent: 'acme' },
      { id: 12, path: 'tools', parent: 'acme/platform' },
      { id: 13, path: 'other' },
    ],
    projects: [
      ...(base.projects ?? []),
      { id: WORKER, path: 'worker', namespace: 'acme/platform' },
      { id: CLI, path: 'cli', namespace: 'acme/platform/tools' },
      { id: LEGACY, path: 'legacy-billing', namespace: 'acme/platform' },
      { id: OLD, path: 'old', namespace: 'acme', archived: true },
      { id: ELSEWHERE, path: 'elsewhere', namespace: 'other' },
    ],
    deploy_keys: [
      {
        id: RELEASE,
        title: 'release',
        key: aPublicKey('release'),
        created_at: 'now-100d',
        projects: [
          'acme/api',
          'acme/web',
          'acme/platform/worker',
          'acme/platform/tools/cli',
          'acme/platform/legacy-billing',
          'acme/old',
          'other/elsewhere',
        ].map((project) => ({
          project,
          can_push: project === 'acme/api' || project === 'acme/platform/tools/cli',
        })),
      },
      {
        id: RELEASE_CI,
        title: 'release-ci',
        key: aPublicKey('release-ci'),
        created_at: 'now-100d',
        projects: [{ project: 'other/elsewhere' }],
      },
      {
        id: 201,
        title: 'release-young',
        key: aPublicKey('young'),
        created_at: 'now-10d',
        projects: [{ project: 'acme/api' }],
      },
    ],
  };
}

describe('key_rotation of deploy keys over project globs, against the sandbox with a real Redis', () => {
  const harness = useEngineHarness({ name: 'key-rotation-globs', world, policyTypes: [keyRotationPolicy] });
  let clock: MovableClock;
  let secrets: string;

  beforeEach(() => {
    clock = new MovableClock(harness.sandbox.state.clock.now());
    secrets = mkdtempSync(join(tmpdir(), 'key-rotation-globs-it-'));
  });

  afterEach(() => {
    rmSync(secrets, { recursive: true, force: true });
  });

  /** The policy with one deploy_keys entry over `projects` (YAML flow list), plus `extra` fields of that entry. */
  function app(projects: string, extra = '', dryRun = false): Promise<INestApplicationContext> {
    return harness.app({
      clock,
      policies: [
        '  - name: rotate',
        '    type: key_rotation',
        '    interval: 1h',
        `    secrets_dir: "${secrets}"`,
        ...(dryRun ? ['    dry_run: true'] : []),
        '    deploy_keys:',
        `      - { projects: ${projects}, titles: ["^release"], rotate_after: 90d, grace: 1d${extra} }`,
      ],
    });
  }

  /** A pass in dry run of another replica: discovery lists for every replica, and a plan keeps its listing to itself. */
  async function discovered(projects: string): Promise<void> {
    await pass(await app(projects, '', true));
  }

  const pass = (engineApp: INestApplicationContext, mode: 'act' | 'plan' = 'act'): Promise<PassResult> =>
    harness.pass(engineApp, 'rotate', mode);

  /** Moves the sandbox's clock and the daemon's by the same amount. */
  async function advanceHours(hours: number): Promise<void> {
    const response = await call(harness.sandbox.url, '/__sandbox/clock', {
      method: 'POST',
      body: { advance_seconds: hours * 3600 },
    });
    expect(response.status).toBe(200);
    clock.advance(hours * HOUR_MS);
  }

  const keysTitled = (title: string) =>
    [...harness.sandbox.state.deployKeys.values()].filter((key) => key.title === title);
  /** The projects (id → can_push) the one new key titled `title` (any id but `oldId`) is enabled on. */
  function newKeyProjects(title: string, oldId: number): Record<number, boolean> {
    const fresh = keysTitled(title).filter((key) => key.id !== oldId);
    expect(fresh).toHaveLength(1);
    return Object.fromEntries([...fresh[0].projects].map(([project, link]) => [project, link.can_push]));
  }
  /** The projects the old key `id` is still enabled on, by id. */
  const oldKeyProjects = (id: number) =>
    [...(harness.sandbox.state.deployKeys.get(id)?.projects.keys() ?? [])].sort((a, b) => a - b);
  const writes = () => harness.sandbox.state.requestLog.filter((entry) => entry.method !== 'GET');
  const groupListings = () =>
    harness.sandbox.state.requestLog.filter((entry) => entry.path === '/api/v4/groups/acme/projects').length;
  /** The projects a decision about the `release` key names, as the pass found the key on them. */
  const releaseTarget = (result: PassResult) =>
    result.decisions.find((decision) => decision.target.startsWith(`deploy key ${RELEASE} `))?.target;

  it('rotates a shared key on exactly the projects the globs select, subgroups in, excludes and archived out; the old key goes from those only', async () => {
    const engine = await app('["acme/**", "!acme/platform/legacy-*"]');
    const plan = await pass(engine, 'plan');
    expect(plan.covered).toEqual(['acme/api', 'acme/platform/tools/cli', 'acme/platform/worker', 'acme/web']);
    expect(writes()).toEqual([]);

    await pass(engine);
    // Created on the first project in path order, enabled on the others, each with the old key's can_push.
    expect(newKeyProjects('release', RELEASE)).toEqual({ [API]: true, [WEB]: false, [WORKER]: false, [CLI]: true });
    expect(existsSync(join(secrets, 'rotate', `acme_api-${RELEASE}`))).toBe(true);
    expect(oldKeyProjects(RELEASE)).toEqual([API, WEB, WORKER, CLI, LEGACY, OLD, ELSEWHERE]);

    await advanceHours(25);
    await pass(engine);
    // The projects the policy does not cover keep the old key: they were never its business.
    expect(oldKeyProjects(RELEASE)).toEqual([LEGACY, OLD, ELSEWHERE]);
    expect(newKeyProjects('release', RELEASE)).toEqual({ [API]: true, [WEB]: false, [WORKER]: false, [CLI]: true });
    expect(keysTitled('release-young').map((key) => key.id)).toEqual([201]);
    expect(keysTitled('release-ci').map((key) => key.id)).toEqual([RELEASE_CI]);
  });

  it('takes archived projects with include_archived, and a project listed by path first, whatever a glob says', async () => {
    const engine = await app('[other/elsewhere, "acme/*"]', ', include_archived: true');
    await pass(engine);
    // The new key is created on other/elsewhere, listed first, then acme/* by path.
    expect(newKeyProjects('release', RELEASE)).toEqual({ [ELSEWHERE]: false, [API]: true, [OLD]: false, [WEB]: false });
    expect(existsSync(join(secrets, 'rotate', `other_elsewhere-${RELEASE}`))).toBe(true);
    // other/elsewhere also holds release-ci, which this entry's titles match too.
    expect(newKeyProjects('release-ci', RELEASE_CI)).toEqual({ [ELSEWHERE]: false });
  });

  it.each<[string, string, string, string]>([
    ['acme/* leaves out subgroups and the archived project', '["acme/*"]', '', '(acme/api, acme/web)'],
    [
      'acme/** with include_archived takes them all',
      '["acme/**"]',
      ', include_archived: true',
      '(acme/api, acme/old, acme/platform/legacy-billing, acme/platform/tools/cli, acme/platform/worker, acme/web)',
    ],
    [
      'an archived project listed by path is covered without include_archived',
      '[acme/old, "acme/*"]',
      '',
      '(acme/old, acme/api, acme/web)',
    ],
    ['a glob in the middle of a path', '["acme/**/w*"]', '', '(acme/platform/worker, acme/web)'],
    [
      'an exclude by id applies to globs',
      '["acme/**", "!3", "!acme/platform/tools/**"]',
      '',
      '(acme/api, acme/platform/legacy-billing, acme/web)',
    ],
  ])('plans the rotation on the projects selected: %s', async (_title, projects, extra, target) => {
    const engine = await app(projects, extra);
    const plan = await pass(engine, 'plan');
    expect(releaseTarget(plan)).toBe(`deploy key ${RELEASE} "release" ${target}`);
    expect(writes()).toEqual([]);
  });

  it('covers a project created in a matched group once discovery lists the group again, not before', async () => {
    const engine = await app('["acme/**", "!acme/platform/legacy-*"]');
    await pass(engine);
    expect(groupListings()).toBe(1);

    // A new project in acme/platform, holding the old release-ci key (enabled through the API, as a person would).
    const state = harness.sandbox.state;
    const fresh = state.nextId('project');
    state.projects.set(fresh, {
      ...state.projects.get(WORKER)!,
      id: fresh,
      path: 'fresh',
      name: 'Fresh',
      created_at: state.nowIso(),
    });
    const enabled = await call(harness.sandbox.url, `/api/v4/projects/${fresh}/deploy_keys/${RELEASE_CI}/enable`, {
      method: 'POST',
      token: ADMIN_TOKEN,
    });
    expect(enabled.status).toBe(201);

    // Within the discovery interval the group is not listed again: the new project is not covered yet.
    await pass(engine);
    expect(groupListings()).toBe(1);
    expect(keysTitled('release-ci').map((key) => key.id)).toEqual([RELEASE_CI]);

    // An hour later (discovery_interval is 10m) the listing is read again and finds it.
    await advanceHours(1);
    await pass(engine);
    expect(groupListings()).toBe(2);
    expect(newKeyProjects('release-ci', RELEASE_CI)).toEqual({ [fresh]: false });
    // other/elsewhere is no project of this policy: it keeps the old key, and gets no new one.
    expect(oldKeyProjects(RELEASE_CI)).toEqual([fresh, ELSEWHERE].sort((a, b) => a - b));
    await advanceHours(25);
    await pass(engine);
    expect(oldKeyProjects(RELEASE_CI)).toEqual([ELSEWHERE]);
  });

  it('leaves out a project a glob found that is deleted before discovery runs again, and rotates on the others', async () => {
    await discovered('["acme/**", "!acme/platform/legacy-*"]');
    harness.sandbox.state.projects.delete(WORKER);

    const engine = await app('["acme/**", "!acme/platform/legacy-*"]');
    const plan = await pass(engine, 'plan');
    expect(plan.covered).toEqual(['acme/api', 'acme/platform/tools/cli', 'acme/web']);
    const result = await pass(engine);
    expect(releaseTarget(result)).toBe(`deploy key ${RELEASE} "release" (acme/api, acme/platform/tools/cli, acme/web)`);
    expect(newKeyProjects('release', RELEASE)).toEqual({ [API]: true, [WEB]: false, [CLI]: true });
    // Discovery still listed it (the interval is not over): its listing was asked for, answered 404, and the passes went on.
    const gone = harness.sandbox.state.requestLog.filter(
      (entry) => entry.path === '/api/v4/projects/acme%2Fplatform%2Fworker/deploy_keys',
    );
    expect(gone.map((entry) => entry.status)).toEqual([200, 404, 404]);
    expect(groupListings()).toBe(1);
  });

  it('reports a deleted project the file lists by path (the pass is partial) and rotates on the others', async () => {
    await discovered('[acme/platform/worker, "acme/*"]');
    harness.sandbox.state.projects.delete(WORKER);
    const engine = await app('[acme/platform/worker, "acme/*"]');

    const result = await engine.get(EngineService).runPass('rotate', 'act', 'inline');
    // The pass names the request the forge refused, and so the project; the others were read and acted on.
    expect(result.error).toBeUndefined();
    expect(result.unobserved).toEqual([
      {
        target: 'project acme/platform/worker',
        reason: 'GET projects/acme%2Fplatform%2Fworker/deploy_keys?page=1&per_page=100 → 404: 404 Project Not Found',
      },
    ]);
    const gone = harness.sandbox.state.requestLog.filter(
      (entry) => entry.path === '/api/v4/projects/acme%2Fplatform%2Fworker/deploy_keys',
    );
    expect(gone.map((entry) => entry.status)).toEqual([200, 404]);
    expect(releaseTarget(result)).toBe(`deploy key ${RELEASE} "release" (acme/api, acme/web)`);
    expect(newKeyProjects('release', RELEASE)).toEqual({ [API]: true, [WEB]: false });
  });
});
