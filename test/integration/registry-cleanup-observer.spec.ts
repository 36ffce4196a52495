import type { RegistryCleanupSnapshot } from '../../src/policies/registry-cleanup/registry-cleanup.decide';
import { ledgerKey } from '../../src/policies/registry-cleanup/registry-cleanup.ledger';
import {
  commitRegistryCleanup,
  detailCacheKey,
  observeRegistryCleanup,
} from '../../src/policies/registry-cleanup/registry-cleanup.observer';
import type { RegistryCleanupConfig } from '../../src/policies/registry-cleanup/registry-cleanup.schema';
import { aCleanupConfig } from '../support/builders/registry';
import { usePolicySandbox } from '../support/policy-sandbox';
import { aProject, baseWorld, MAINTAINER_TOKEN, manyTags, type TagInput } from '../support/world-builders';

const APP_TAGS: TagInput[] = [
  { name: 'latest', created_at: 'now-1h' },
  { name: 'main', created_at: 'now-2d' },
  { name: 'build-1', created_at: 'now-20d' },
  { name: 'build-2', created_at: 'now-3d' },
  { name: 'build-3', created_at: null },
];

/** acme/api (1) with repositories app (12) and tools (13, empty); acme/web (2) with its root repository (30). */
function world() {
  return baseWorld({
    projects: [
      aProject('api', {
        id: 1,
        registry: [
          { id: 12, name: 'app', tags: APP_TAGS },
          { id: 13, name: 'tools', tags: [] },
        ],
      }),
      aProject('web', { id: 2, registry: [{ id: 30, tags: manyTags(1200, { prefix: 'web-' }) }] }),
    ],
  });
}

describe('registry_cleanup observer, against the sandbox forge', () => {
  const forge = usePolicySandbox({ world, token: MAINTAINER_TOKEN });
  let progress: string[];

  beforeEach(() => {
    progress = [];
  });

  const context = () => forge.context({ progress: (message) => progress.push(message) });

  const observe = (config: RegistryCleanupConfig): Promise<RegistryCleanupSnapshot> =>
    observeRegistryCleanup(config, context());
  const detailReads = (): string[] =>
    forge.sandbox.state.requestLog
      .filter((r) => r.method === 'GET' && /\/tags\/[^/]+$/.test(r.path))
      .map((r) => decodeURIComponent(r.path.split('/').pop() ?? ''));
  const summary = (snapshot: RegistryCleanupSnapshot) =>
    snapshot.repositories.map((r) => `${r.id} ${r.path} (${r.tags.length})`);

  it('lists the repositories of projects and groups once each, in path order, filtered by path', async () => {
    expect(summary(await observe(aCleanupConfig({ projects: ['acme/api', 2], groups: ['acme'] })))).toEqual([
      '12 acme/api/app (5)',
      '13 acme/api/tools (0)',
      '30 acme/web (1200)',
    ]);
    expect(
      summary(
        await observe(aCleanupConfig({ projects: undefined, groups: ['acme'], repositories: ['/app$', '^acme/web$'] })),
      ),
    ).toEqual(['12 acme/api/app (5)', '30 acme/web (1200)']);
  });

  it('reads no tag detail when the rules need no creation time', async () => {
    const snapshot = await observe(aCleanupConfig({ projects: ['acme/api'], name_regex_keep: 'main' }));
    expect(detailReads()).toEqual([]);
    expect(snapshot.repositories[0].tags.map((t) => t.name).sort()).toEqual([
      'build-1',
      'build-2',
      'build-3',
      'latest',
      'main',
    ]);
  });

  it('reads creation times only for tags that pass the name rules, and the ledger', async () => {
    forge.state.values.set(
      ledgerKey(12),
      JSON.stringify({
        last_call_at: '2025-06-02T11:00:00.000Z',
        follow_ups: 2,
        cleanup_started_at: '2025-06-02T03:00:00.000Z',
        tags_before: 9,
        planned: 4,
      }),
    );
    const snapshot = await observe(
      aCleanupConfig({ projects: ['acme/api'], name_regex_delete: 'build-.*', keep_n: 1 }),
    );
    expect(detailReads().sort()).toEqual(['build-1', 'build-2', 'build-3']);
    const app = snapshot.repositories[0];
    expect(Object.fromEntries(app.tags.map((t) => [t.name, t.created_at]))).toEqual({
      'build-1': '2025-05-13T12:00:00.000Z',
      'build-2': '2025-05-30T12:00:00.000Z',
      'build-3': null,
      latest: null,
      main: null,
    });
    expect(app.ledger).toEqual({
      last_call_at: '2025-06-02T11:00:00.000Z',
      follow_ups: 2,
      cleanup_started_at: '2025-06-02T03:00:00.000Z',
      tags_before: 9,
      planned: 4,
    });
  });

  it('reads every candidate’s creation time in per_tag mode (its deletions are keyed by it)', async () => {
    await observe(aCleanupConfig({ projects: ['acme/api'], mode: 'per_tag', name_regex_keep: 'main' }));
    expect(detailReads().sort()).toEqual(['build-1', 'build-2', 'build-3']);
  });

  it('caches creation times between passes, and reads them again once the cache is stale', async () => {
    const config = aCleanupConfig({ projects: [2], older_than: '1d' });
    await observe(config);
    expect(detailReads()).toHaveLength(1200);
    expect(forge.state.values.has(detailCacheKey(30))).toBe(true);

    forge.sandbox.state.requestLog.length = 0;
    const warm = await observe(config);
    expect(detailReads()).toEqual([]);
    expect(warm.repositories[0].tags.filter((t) => t.created_at !== null)).toHaveLength(1200);

    forge.sandbox.state.requestLog.length = 0;
    forge.sandbox.state.clock.advance(6 * 3_600_000);
    await observe(config);
    expect(detailReads()).toHaveLength(1200);
  });

  it('reports progress every 500 tags of a large repository', async () => {
    await observe(aCleanupConfig({ projects: [2], older_than: '1d' }));
    expect(progress).toEqual([
      'acme/web: 500/1200 tags read',
      'acme/web: 1000/1200 tags read',
      'acme/web: 500/1200 tag details read',
      'acme/web: 1000/1200 tag details read',
    ]);
  });

  it('leaves out a tag deleted between the listing and the read of its detail', async () => {
    await forge.client.registry.removeTag(1, 12, 'build-2');
    forge.sandbox.state.faults.add({
      method: 'GET',
      path: '/tags/build-1$',
      status: 404,
      body: { message: '404 Tag Not Found' },
    });
    const snapshot = await observe(aCleanupConfig({ projects: ['acme/api'], older_than: '1d' }));
    expect(snapshot.repositories[0].tags.map((t) => t.name).sort()).toEqual(['build-3', 'latest', 'main']);
  });

  it('commit closes the cleanup of a repository with nothing left to delete, keeping the time of the last call', async () => {
    const open = {
      last_call_at: '2025-06-02T11:30:00.000Z',
      follow_ups: 3,
      cleanup_started_at: '2025-06-02T03:00:00.000Z',
      tags_before: 9,
      planned: 4,
    };
    forge.state.values.set(ledgerKey(12), JSON.stringify(open));
    forge.state.values.set(ledgerKey(30), JSON.stringify(open));
    const config = aCleanupConfig({ projects: ['acme/api', 2], name_regex_delete: 'build-.*' });
    const snapshot = await observe(config);
    await commitRegistryCleanup(config, snapshot, context());
    // acme/api/app still has builds to delete; acme/web has none (its tags are web-…).
    expect(JSON.parse(forge.state.values.get(ledgerKey(12)) ?? '')).toEqual(open);
    expect(JSON.parse(forge.state.values.get(ledgerKey(30)) ?? '')).toEqual({
      ...open,
      follow_ups: 0,
      cleanup_started_at: null,
    });
  });
});
