import { z } from 'zod';
import type { INestApplicationContext } from '@nestjs/common';
import { EngineService, type PassResult } from '../../src/engine/engine.service';
import { GitlabClient } from '../../src/gitlab/client';
import { registryCleanupPolicy } from '../../src/policies/registry-cleanup/registry-cleanup.schema';
import type { RunningSandbox, World } from '../../src/sandbox';
import { BASE_NOW, baseWorld, manyTags, type TagInput } from '../support/world-builders';
import { call } from '../support/sandbox-http';
import { useEngineHarness } from '../support/engine-harness';
import { MovableClock } from '../../src/clock';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
/** Per bulk call the sandbox deletes at most this many tags, as the hosted edition does: follow-ups are needed. */
const CAP = 150;
/** Midnight of the day the world starts, so every timestamp is at 00:00Z and none sits near a cut-off as the clock moves. */
const MIDNIGHT = Date.parse(BASE_NOW.slice(0, 10));

/**
 * `n` tags `<prefix>000`… of one repository, one a day at midnight, the newest `endsDaysAgo` days before the world's
 * start; every `nullEvery`-th has no timestamp.
 */
function builds(prefix: string, n: number, endsDaysAgo: number, nullEvery: number): TagInput[] {
  return manyTags(n, {
    prefix,
    oldest: new Date(MIDNIGHT - (endsDaysAgo + n - 1) * DAY_MS),
    stepMs: DAY_MS,
    withoutTimestamp: (i) => i % nullEvery === nullEvery - 1,
  });
}

const at = (daysAgo: number): string => new Date(MIDNIGHT - daysAgo * DAY_MS).toISOString();

/**
 * Group acme: projects api, web and worker with 6 repositories and 2,000 tags, spread over months, some without a
 * timestamp, with names the keep expression treats in the forge's odd way (`main|v…` is "starts with main" or
 * "ends with v1.2.3").
 */
function world(): World {
  const extras: TagInput[] = [
    { name: 'latest', created_at: at(400) },
    { name: 'main', created_at: at(300) },
    { name: 'main-old', created_at: at(300) },
    { name: 'v1.2.3', created_at: at(200) },
    { name: 'hotfix-v1.2.3', created_at: at(200) },
    { name: 'v1.2.3-rc1', created_at: at(200) },
    { name: 'v2.0.0', created_at: null },
  ];
  return {
    ...baseWorld({
      projects: [
        {
          id: 1,
          path: 'api',
          namespace: 'acme',
          registry: [
            { id: 101, name: 'app', tags: [...builds('build-', 593, 1, 41), ...extras] },
            { id: 102, name: 'tools', tags: builds('tool-', 150, 100, 1000) },
          ],
        },
        {
          id: 2,
          path: 'web',
          namespace: 'acme',
          registry: [
            { id: 201, tags: [...builds('build-', 496, 2, 37), extras[0], extras[1], extras[3], extras[5]] },
            { id: 202, name: 'assets', tags: builds('asset-', 250, 10, 50) },
          ],
        },
        {
          id: 3,
          path: 'worker',
          namespace: 'acme',
          registry: [
            { id: 301, tags: builds('build-', 300, 40, 1000) },
            // Many without a timestamp: keep_n takes 20 of them as the newest, older_than keeps the others.
            { id: 302, name: 'jobs', tags: [...builds('job-', 193, 3, 5), ...extras] },
          ],
        },
      ],
    }),
    settings: { bulk_delete_cap: CAP, bulk_delete_delay_ms: 20 },
  };
}

const POLICY = [
  '  - name: nightly',
  '    type: registry_cleanup',
  '    schedule: "0 3 * * *"',
  '    groups: [acme]',
  '    name_regex_delete: ".*"',
  '    name_regex_keep: "main|v\\\\d+\\\\.\\\\d+\\\\.\\\\d+"',
  '    keep_n: 20',
  '    older_than: 30d',
];

describe('registry_cleanup against the sandbox (hourly limit, per-call cap) with a real Redis', () => {
  const harness = useEngineHarness({ name: 'registry-cleanup', world, policyTypes: [registryCleanupPolicy] });
  let sandbox: RunningSandbox;
  let clock: MovableClock;

  beforeEach(() => {
    sandbox = harness.sandbox;
    clock = new MovableClock(sandbox.state.clock.now());
  });

  const app = (options: { dryRun?: boolean; policy?: string[] } = {}): Promise<INestApplicationContext> =>
    harness.app({ dryRun: options.dryRun, policies: options.policy ?? POLICY, clock });
  const close = (engineApp: INestApplicationContext): Promise<void> => harness.close(engineApp);

  /** Moves the sandbox's clock (through its control API) and the app's by the same amount. */
  async function advance(text: string, ms: number): Promise<void> {
    const response = await call(sandbox.url, '/__sandbox/clock', { method: 'POST', body: { advance: text } });
    expect(response.status).toBe(200);
    clock.advance(ms);
  }

  /** A pass, and the forge's deletions in the background after it. */
  async function pass(engineApp: INestApplicationContext, mode: 'act' | 'plan' = 'act'): Promise<PassResult> {
    const result = await harness.pass(engineApp, 'nightly', mode);
    await sandbox.state.whenIdle();
    return result;
  }

  const repositoryIds = [101, 102, 201, 202, 301, 302];
  const tagNames = (): Map<number, string[]> =>
    new Map(repositoryIds.map((id) => [id, sandbox.state.tags(id).map((tag) => tag.name)]));

  /** What plan says goes, per repository id: the `delete …` detail lines in bulk mode, the `delete_tag` decisions in per_tag mode. */
  function plannedDeletions(result: PassResult): Map<number, string[]> {
    const planned = new Map<number, string[]>();
    const add = (id: number, names: string[]) => planned.set(id, [...(planned.get(id) ?? []), ...names]);
    for (const decision of result.decisions) {
      const id = Number(decision.params.repository_id);
      if (decision.action === 'delete_tag') add(id, [z.string().parse(decision.params.tag)]);
      else
        add(
          id,
          (decision.details ?? [])
            .filter((line) => line.startsWith('delete '))
            .map((line) => line.slice('delete '.length)),
        );
    }
    return planned;
  }

  /** Bulk DELETE calls the sandbox answered, per repository id, with their sandbox times. */
  function bulkCalls(): Map<number, { time: number; status: number }[]> {
    const calls = new Map<number, { time: number; status: number }[]>();
    for (const entry of sandbox.state.requestLog) {
      const match = /\/registry\/repositories\/(\d+)\/tags$/.exec(entry.path);
      if (entry.method !== 'DELETE' || !match) continue;
      const id = Number(match[1]);
      calls.set(id, [...(calls.get(id) ?? []), { time: Date.parse(entry.time), status: entry.status }]);
    }
    return calls;
  }

  /** No repository was called twice within an hour of sandbox time, and the forge never had to refuse a call. */
  function expectHourlyLimitKept(): void {
    for (const [id, calls] of bulkCalls()) {
      expect({ id, statuses: calls.map((c) => c.status).filter((s) => s !== 202) }).toEqual({ id, statuses: [] });
      for (let i = 1; i < calls.length; i++) expect(calls[i].time - calls[i - 1].time).toBeGreaterThanOrEqual(HOUR_MS);
    }
  }

  /** The tags left are exactly the ones before minus the previewed ones, in every repository. */
  function expectExactlyPreviewedGone(before: Map<number, string[]>, planned: Map<number, string[]>): void {
    for (const id of repositoryIds) {
      const gone = new Set(planned.get(id) ?? []);
      const expected = (before.get(id) ?? []).filter((name) => !gone.has(name));
      expect({ id, tags: sandbox.state.tags(id).map((tag) => tag.name) }).toEqual({ id, tags: expected });
    }
  }

  /**
   * Passes an hour and a minute apart until a pass finds nothing left to delete; `instances` gives the apps of each pass (all run
   * it at once). Returns the passes' results.
   */
  async function runToTheEnd(
    instances: (round: number) => Promise<INestApplicationContext[]>,
  ): Promise<PassResult[][]> {
    const rounds: PassResult[][] = [];
    for (let round = 0; round < 12; round++) {
      if (round > 0) await advance('61m', 61 * 60_000);
      const engineApps = await instances(round);
      const results = await Promise.all(
        engineApps.map((engineApp) => engineApp.get(EngineService).runPass('nightly', 'act', 'inline')),
      );
      await sandbox.state.whenIdle();
      for (const result of results) expect(result.error).toBeUndefined();
      rounds.push(results);
      const done = (result: PassResult) =>
        result.decisions.every((d) => d.reason.startsWith('skip: nothing to delete'));
      if (results.every(done)) return rounds;
    }
    throw new Error('the cleanup did not finish in 12 passes');
  }

  it('plan lists, per repository, the tags that would go and why each other tag stays; it changes nothing', async () => {
    const result = await pass(await app(), 'plan');
    expect(result.records).toEqual([]);
    expect(result.decisions.map((d) => [d.target, d.action, d.reason])).toEqual([
      ['acme/api/app (repository 101)', 'bulk_delete', 'delete 552 of 600 tags'],
      ['acme/api/tools (repository 102)', 'bulk_delete', 'delete 130 of 150 tags'],
      ['acme/web (repository 201)', 'bulk_delete', 'delete 457 of 500 tags'],
      ['acme/web/assets (repository 202)', 'bulk_delete', 'delete 226 of 250 tags'],
      ['acme/worker (repository 301)', 'bulk_delete', 'delete 280 of 300 tags'],
      ['acme/worker/jobs (repository 302)', 'bulk_delete', 'delete 134 of 200 tags'],
    ]);
    // Every tag of every repository has exactly one line: `delete NAME` or `keep NAME: why`.
    const before = tagNames();
    for (const decision of result.decisions) {
      const id = Number(/\(repository (\d+)\)$/.exec(decision.target)?.[1]);
      const named = (decision.details ?? [])
        .map((line) => /^(?:delete (\S+)|keep (\S+): .+)$/.exec(line))
        .map((m) => m?.[1] ?? m?.[2]);
      expect(named.sort()).toEqual([...(before.get(id) ?? [])].sort());
    }
    const app101 = result.decisions[0].details ?? [];
    expect(app101).toEqual(
      expect.arrayContaining([
        'keep latest: latest',
        // `main|v\d+\.\d+\.\d+` anchored as the forge does: starts with main, or ends with a version.
        'keep main: matches keep regex',
        'keep main-old: matches keep regex',
        'keep hotfix-v1.2.3: matches keep regex',
        'delete v1.2.3-rc1',
        'keep build-592: among the newest 20',
        'keep build-040: among the newest 20',
        `keep build-564: too recent (created ${at(29)})`,
        'delete build-563',
        'delete build-000',
      ]),
    );
    const jobs = result.decisions[5].details ?? [];
    expect(jobs).toContain('keep job-004: no creation time');
    expect(jobs.filter((line) => /^keep job-\d+: too recent \(created /.test(line)).length).toBeGreaterThan(0);
    expect(jobs.filter((line) => line.endsWith(': no creation time'))).toHaveLength(18);
    expect(jobs.filter((line) => line.endsWith(': among the newest 20'))).toHaveLength(20);
    // Nothing called, nothing recorded.
    expect(bulkCalls().size).toBe(0);
    expect(await harness.redis.keys(`${harness.prefix}:ledger:*`)).toEqual([]);
    expect(await harness.redis.keys(`${harness.prefix}:state:nightly:bulk:*`)).toEqual([]);
  });

  /** Calls per repository after a cleanup of this world: 552 tags at 150 a call need 4 calls, 130 need 1. */
  const EXPECTED_CALLS = new Map([
    [101, 4],
    [102, 1],
    [201, 4],
    [202, 2],
    [301, 2],
    [302, 1],
  ]);
  const callCounts = () => new Map([...bulkCalls()].map(([id, calls]) => [id, calls.length]));

  it('deletes exactly the previewed tags over the run and its follow-ups, never calling a repository twice within an hour', async () => {
    const engineApp = await app();
    const before = tagNames();
    const planned = plannedDeletions(await pass(engineApp, 'plan'));
    const start = clock.now();
    const rounds = await runToTheEnd(async () => [engineApp]);

    expectExactlyPreviewedGone(before, planned);
    expectHourlyLimitKept();
    expect(callCounts()).toEqual(EXPECTED_CALLS);
    expect(rounds).toHaveLength(5);

    const [first] = rounds[0];
    expect(first.records.map((r) => r.outcome)).toEqual(['done', 'done', 'done', 'done', 'done', 'done']);
    expect(first.records[0].detail).toBe('600 tags before, 552 planned; the forge deletes them in the background');
    // The engine is asked for the follow-up an hour and a minute after the calls.
    const next = first.nextPassAt?.getTime() ?? 0;
    expect(next - start).toBeGreaterThanOrEqual(HOUR_MS + 60_000);
    expect(next - start).toBeLessThan(HOUR_MS + 2 * 60_000);

    const [second] = rounds[1];
    const reasons = new Map(second.decisions.map((d) => [d.target, d.reason]));
    expect(reasons.get('acme/api/app (repository 101)')).toBe('delete 402 of 450 tags (follow-up 1 of 24)');
    expect(reasons.get('acme/api/tools (repository 102)')).toBe('skip: nothing to delete (20 tags kept)');
    expect(second.decisions[0].details?.[0]).toMatch(
      /^cleanup since \S+: 600 tags before, 552 planned, 150 deleted, 402 remaining$/,
    );

    const [last] = rounds[4];
    expect(last.decisions.every((d) => d.action === 'skip' && d.reason.startsWith('skip: nothing to delete'))).toBe(
      true,
    );
    expect(last.nextPassAt).toBeUndefined();
    expect(last.records.some((r) => r.outcome === 'failed')).toBe(false);
    // The finished cleanups are closed, their last call still recorded for the hourly limit.
    const ledger = JSON.parse((await harness.redis.get(`${harness.prefix}:state:nightly:bulk:101`)) ?? '{}');
    expect(ledger).toMatchObject({ follow_ups: 0, cleanup_started_at: null, tags_before: 600, planned: 552 });
  });

  it('a bulk call whose answer is lost after the forge acted is never sent again within the hour, and the run still ends with exactly the previewed tags gone', async () => {
    const engineApp = await app();
    const before = tagNames();
    const planned = plannedDeletions(await pass(engineApp, 'plan'));
    // The forge acts and the answer is lost (a 502 from a proxy, a reset); a 503 the forge answered instead of acting.
    const faults = [
      { method: 'DELETE', path: '/repositories/101/tags$', status: 502, after: true, times: 1 },
      { method: 'DELETE', path: '/repositories/201/tags$', reset: true, after: true, times: 1 },
      { method: 'DELETE', path: '/repositories/301/tags$', status: 503, times: 1 },
    ];
    for (const rule of faults)
      expect((await call(sandbox.url, '/__sandbox/faults', { method: 'POST', body: rule })).status).toBe(201);

    const rounds = await runToTheEnd(async () => [engineApp]);
    const first = new Map(rounds[0][0].records.map((r) => [Number(r.decision.params.repository_id), r.outcome]));
    expect([first.get(101), first.get(201), first.get(301)]).toEqual(['failed', 'failed', 'failed']);
    expectExactlyPreviewedGone(before, planned);
    // One request per call: the transport sent none of them twice, and no pass called within the hour of the last.
    for (const [id, calls] of bulkCalls()) {
      for (let i = 1; i < calls.length; i++)
        expect({ id, gap: calls[i].time - calls[i - 1].time >= HOUR_MS }).toEqual({ id, gap: true });
    }
    expect(bulkCalls().get(101)?.[0]?.status).toBe(502);
  });

  it('keeps the hourly limit across restarts: a new app within the hour calls nothing, after it follows up', async () => {
    const before = tagNames();
    const planner = await app();
    const planned = plannedDeletions(await pass(planner, 'plan'));
    await close(planner);

    const first = await app();
    await pass(first);
    await close(first);
    expect(callCounts()).toEqual(new Map(repositoryIds.map((id) => [id, 1])));

    await advance('30m', 30 * 60_000);
    const early = await app();
    const held = await pass(early);
    await close(early);
    expect(callCounts()).toEqual(new Map(repositoryIds.map((id) => [id, 1])));
    expect(held.decisions.find((d) => d.target === 'acme/api/app (repository 101)')?.reason).toMatch(
      /^skip: the forge allows the next bulk call at \d\d:\d\d:\d\dZ \(last at \d\d:\d\d:\d\dZ\)$/,
    );

    // Every later pass by a freshly started app, the previous one closed.
    let current: INestApplicationContext | undefined;
    await runToTheEnd(async () => {
      if (current) await close(current);
      current = await app();
      return [current];
    });
    expectExactlyPreviewedGone(before, planned);
    expectHourlyLimitKept();
    expect(callCounts()).toEqual(EXPECTED_CALLS);
  });

  it('calls each repository once when two instances run a pass at the same time', async () => {
    const before = tagNames();
    const [one, two] = [await app(), await app()];
    const planned = plannedDeletions(await pass(one, 'plan'));
    const rounds = await runToTheEnd(async () => [one, two]);

    expectExactlyPreviewedGone(before, planned);
    expectHourlyLimitKept();
    expect(callCounts()).toEqual(EXPECTED_CALLS);
    // In the first round both instances decided the six calls; the executor's claim let one through per repository
    // (an instance that read the ledger after the other's call skips instead).
    for (const id of repositoryIds) {
      const outcomes = rounds[0]
        .flatMap((result) => result.records.filter((r) => r.decision.params.repository_id === id).map((r) => r.outcome))
        .sort();
      expect([
        ['done', 'duplicate'],
        ['done', 'in_progress'],
        ['done', 'skipped'],
      ]).toContainEqual(outcomes);
    }
  });

  it('in per_tag mode deletes the previewed tags one by one; a tag deleted meanwhile counts as gone', async () => {
    // Ten tags to delete: the client spaces writes, and one request per tag is what this mode is about.
    const policy = [
      '  - name: nightly',
      '    type: registry_cleanup',
      '    schedule: "0 3 * * *"',
      '    projects: [acme/api]',
      '    repositories: ["/tools$"]',
      '    name_regex_delete: "tool-.*"',
      '    keep_n: 140',
      '    mode: per_tag',
    ];
    const engineApp = await app({ policy });
    const before = tagNames();
    const planned = plannedDeletions(await pass(engineApp, 'plan'));
    expect(planned.get(102)).toEqual([
      'tool-000',
      'tool-001',
      'tool-002',
      'tool-003',
      'tool-004',
      'tool-005',
      'tool-006',
      'tool-007',
      'tool-008',
      'tool-009',
    ]);

    // Someone deletes tool-005 just before the policy does: the forge answers 404.
    const client = engineApp.get(GitlabClient);
    const removeTag = client.registry.removeTag.bind(client.registry);
    jest.spyOn(client.registry, 'removeTag').mockImplementation(async (project, repositoryId, name) => {
      if (name === 'tool-005') sandbox.state.repositories.get(repositoryId)?.tags.delete(name);
      return removeTag(project, repositoryId, name);
    });
    const result = await pass(engineApp);

    const outcomes = new Map(result.records.map((r) => [r.decision.target, r.outcome]));
    expect(outcomes.get('acme/api/tools (repository 102) tag tool-005')).toBe('gone');
    expect(result.records.filter((r) => r.outcome === 'done')).toHaveLength(9);
    expect(outcomes.get('acme/api/tools (repository 102)')).toBe('skipped');
    const single = sandbox.state.requestLog.filter((r) => r.method === 'DELETE' && /\/tags\/[^/]+$/.test(r.path));
    expect(single.map((r) => r.status).sort()).toEqual([...Array<number>(9).fill(200), 404]);
    expect(bulkCalls().size).toBe(0);
    expectExactlyPreviewedGone(before, new Map([[102, planned.get(102) ?? []]]));

    // The next pass finds nothing left to delete, and deletes nothing twice.
    const again = await pass(engineApp);
    expect(again.decisions.map((d) => d.reason)).toEqual(['skip: nothing to delete (140 tags kept)']);
  });

  it('in a dry run records what it would do and calls nothing', async () => {
    const engineApp = await app({ dryRun: true });
    const before = tagNames();
    const result = await pass(engineApp);
    expect(result.dryRun).toBe(true);
    expect(result.records.map((r) => r.outcome)).toEqual(Array<string>(6).fill('would_act'));
    expect(sandbox.state.requestLog.filter((r) => r.method !== 'GET')).toEqual([]);
    expect(tagNames()).toEqual(before);
    expect(await harness.redis.keys(`${harness.prefix}:state:nightly:bulk:*`)).toEqual([]);
    expect(await harness.redis.keys(`${harness.prefix}:ledger:*`)).toEqual([]);
  });
});
