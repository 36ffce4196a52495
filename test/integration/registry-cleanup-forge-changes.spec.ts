import { EngineService } from '../../src/engine/engine.service';
import { POLICY_TYPES } from '../../src/policies';
import type { World } from '../../src/sandbox';
import { useEngineHarness } from '../support/engine-harness';
import { asPerson, control, whileHeld } from '../support/person';
import { baseWorld, type TagInput } from '../support/world-builders';

/**
 * registry_cleanup on a forge people use too: tags deleted by people while the bot deletes, a project closed to the
 * token, reads that fail now and then. The bot deletes a tag only while keep_n still holds among the tags there now,
 * and one repository's trouble is that repository's.
 */

const tag = (name: string, hoursAgo: number): TagInput => ({ name, created_at: `now-${hoursAgo}h` });
const builds = (count: number): TagInput[] =>
  Array.from({ length: count }, (_, i) => tag(`build-${String(i).padStart(3, '0')}`, 100 - i));

/** acme/api (1): repository 12 with pr-301, main, pr-302 (oldest first); acme/web (2): repository 22 with 30 builds; acme/ops (3): 32 with 6. */
function world(): World {
  return {
    ...baseWorld({
      projects: [
        {
          id: 1,
          path: 'api',
          namespace: 'acme',
          registry: [{ id: 12, name: 'app', tags: [tag('pr-301', 30), tag('main', 20), tag('pr-302', 10)] }],
        },
        { id: 2, path: 'web', namespace: 'acme', registry: [{ id: 22, name: 'app', tags: builds(30) }] },
        { id: 3, path: 'ops', namespace: 'acme', registry: [{ id: 32, name: 'app', tags: builds(6) }] },
      ],
    }),
    now: undefined,
  };
}

describe('registry_cleanup while people work on the forge', () => {
  const harness = useEngineHarness({
    name: 'registry-forge-changes',
    world,
    policyTypes: POLICY_TYPES,
    sandbox: { bulkDeleteDelayMs: 0 },
  });
  const tagsOf = (repository: number) =>
    harness.sandbox.state
      .tags(repository)
      .map((t) => t.name)
      .sort();
  const botDeletes = () =>
    harness.sandbox.state.requestLog.filter(
      (r) => r.method === 'DELETE' && r.headers['user-agent']?.startsWith('forgewarden'),
    );

  const app = (mode: 'per_tag' | 'bulk', projects: string) =>
    harness.app({
      gitlab: 'max_requests_per_minute: 100000, timeout: 30s',
      policies: [
        '  - name: clean',
        '    type: registry_cleanup',
        '    schedule: "0 3 * * *"',
        `    projects: [${projects}]`,
        `    mode: ${mode}`,
        '    name_regex_delete: ".*"',
        '    keep_n: 2',
      ],
    });

  it('per tag: does not delete a tag once people deleted the newer ones keep_n kept; the deletion is stale', async () => {
    const engine = (await app('per_tag', 'acme/api')).get(EngineService);
    const plan = await engine.runPass('clean', 'plan');
    expect(plan.decisions.filter((d) => d.action === 'delete_tag').map((d) => d.target)).toEqual([
      'acme/api/app (repository 12) tag pr-301',
    ]);

    // While the bot is about to delete pr-301 (its precondition lists the tags), a person deletes main and pr-302.
    const pass = await whileHeld(
      harness.sandbox,
      { method: 'GET', path: '/repositories/12/tags$', after: 1 },
      () => engine.runPass('clean', 'act', 'inline'),
      async () => {
        for (const name of ['main', 'pr-302'])
          expect(
            (await asPerson(harness.sandbox, 'DELETE', `/projects/1/registry/repositories/12/tags/${name}`)).status,
          ).toBe(200);
      },
    );
    expect(pass.records.find((r) => r.decision.action === 'delete_tag')).toMatchObject({
      outcome: 'stale',
      detail: 'keep_n no longer holds: main, pr-302 are gone since the preview, so pr-301 may be among the newest now',
    });
    // The last image is still there; the bot sent no deletion.
    expect(tagsOf(12)).toEqual(['pr-301']);
    expect(botDeletes()).toEqual([]);
    // The next pass decides afresh: with one tag, keep_n 2 keeps it.
    const next = await engine.runPass('clean', 'act', 'inline');
    expect(next.decisions.map((d) => d.action)).toEqual(['skip']);
  });

  it('per tag: a deletion whose tag a person deleted first is gone, and the rest go on', async () => {
    const engine = (await app('per_tag', 'acme/ops')).get(EngineService);
    const pass = await whileHeld(
      harness.sandbox,
      { method: 'GET', path: '/repositories/32/tags/build-000$', after: 1 },
      () => engine.runPass('clean', 'act', 'inline'),
      async () => {
        expect(
          (await asPerson(harness.sandbox, 'DELETE', '/projects/3/registry/repositories/32/tags/build-000')).status,
        ).toBe(200);
      },
    );
    const outcomes = new Map(
      pass.records.filter((r) => r.decision.action === 'delete_tag').map((r) => [r.decision.params.tag, r.outcome]),
    );
    expect([...outcomes]).toEqual([
      ['build-000', 'gone'],
      ['build-001', 'done'],
      ['build-002', 'done'],
      ['build-003', 'done'],
    ]);
    expect(tagsOf(32)).toEqual(['build-004', 'build-005']);
    // The bot's three deletions, and not the person's.
    expect(botDeletes().map((r) => r.path.split('/').at(-1))).toEqual(['build-001', 'build-002', 'build-003']);
  });

  it('bulk: a deletion the forge refuses for good (an archived project) is parked, not sent every pass, and holds no hour back', async () => {
    expect(await control(harness.sandbox, 'POST', '/projects/acme%2Fweb/archive')).toBe(200);
    const engine = (await app('bulk', 'acme/web')).get(EngineService);
    const first = await engine.runPass('clean', 'act', 'inline');
    expect(first.records.map((r) => `${r.decision.action} ${r.outcome}`)).toEqual(['bulk_delete refused']);
    expect(first.records[0]?.detail).toMatch(
      /^DELETE projects\/2\/registry\/repositories\/22\/tags\?name_regex_delete=\.\*&keep_n=2 → 403: 403 Forbidden; parked until /,
    );
    const bulkCalls = () =>
      harness.sandbox.state.requestLog.filter((r) => r.method === 'DELETE' && r.path.endsWith('/repositories/22/tags'))
        .length;
    for (let pass = 0; pass < 3; pass++)
      expect((await engine.runPass('clean', 'act', 'inline')).records[0]?.outcome).toBe('refused');
    expect(bulkCalls()).toBe(1);
    // Once a person unarchives it and the parking time is over, the deletion goes out: the refusal left no hourly record.
    expect(await control(harness.sandbox, 'POST', '/projects/acme%2Fweb/unarchive')).toBe(200);
    const plan = await engine.runPass('clean', 'plan');
    expect(plan.parked?.[plan.decisions[0]?.key ?? '']).toMatchObject({ count: 1 });
    expect(plan.decisions[0]?.reason).toBe('delete 28 of 30 tags');
  });

  it('bulk: a tag read answered 500 is read again; the pass is not failed for it', async () => {
    expect(
      await control(harness.sandbox, 'POST', '/faults', {
        method: 'GET',
        path: '/tags/build-007$',
        sequence: [500, 500],
      }),
    ).toBe(201);
    const engine = (await app('bulk', 'acme/web')).get(EngineService);
    const pass = await engine.runPass('clean', 'act', 'inline');
    expect(pass.error).toBeUndefined();
    expect(pass.unobserved).toBeUndefined();
    expect(pass.records.map((r) => `${r.decision.action} ${r.outcome}`)).toEqual(['bulk_delete done']);
    const reads = harness.sandbox.state.requestLog
      .filter((r) => r.path.endsWith('/tags/build-007'))
      .map((r) => r.status);
    expect(reads).toEqual([500, 500, 200]);
  });

  it('bulk: a repository whose reads keep failing is left out of the pass; the others are cleaned, and what was read is not read again', async () => {
    // Every attempt at one tag of acme/web's repository fails: that repository cannot be previewed this pass.
    expect(
      await control(harness.sandbox, 'POST', '/faults', {
        method: 'GET',
        path: '/repositories/22/tags/build-013$',
        sequence: [500, 500, 500, 500],
      }),
    ).toBe(201);
    const engine = (await app('bulk', 'acme/web, acme/api')).get(EngineService);
    const first = await engine.runPass('clean', 'act', 'inline');
    expect(first.error).toBeUndefined();
    expect(first.unobserved).toEqual([
      {
        target: 'repository acme/web/app',
        reason: 'GET projects/2/registry/repositories/22/tags/build-013 → 500: 500 Internal Server Error',
      },
    ]);
    // acme/api's repository was cleaned in the same pass.
    expect(first.records.map((r) => `${r.decision.target} ${r.outcome}`)).toEqual([
      'acme/api/app (repository 12) done',
    ]);
    await harness.sandbox.state.whenIdle();
    expect(tagsOf(12)).toEqual(['main', 'pr-302']);

    // The next pass reads only the detail that failed: the 29 read before are kept.
    const detailReads = () =>
      harness.sandbox.state.requestLog.filter((r) => /\/repositories\/22\/tags\/build-\d+$/.test(r.path)).length;
    const before = detailReads();
    const second = await engine.runPass('clean', 'act', 'inline');
    expect(second.unobserved).toBeUndefined();
    expect(detailReads() - before).toBe(1);
    expect(second.records.find((r) => r.decision.target === 'acme/web/app (repository 22)')?.outcome).toBe('done');
  });
});
