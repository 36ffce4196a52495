import { SKIP } from '../../engine/policy';
import {
  aCleanupConfig,
  aLedger,
  aRepository,
  aSnapshot,
  aTag,
  NOW,
  someTags,
} from '../../../test/support/builders/registry';
import type { BulkLedgerEntry } from './registry-cleanup.ledger';
import { BULK_DELETE, decideRegistryCleanup, DELETE_REPOSITORY, DELETE_TAG } from './registry-cleanup.decide';
import { nextRegistryCleanupPass } from './registry-cleanup.observer';
import type { PreviewTag } from './registry-cleanup.preview';

/** Three tags: two builds to delete and main, which the keep regex keeps. */
const TAGS: PreviewTag[] = [aTag('build-1', 3), aTag('build-2', 2), aTag('main', 1)];
const KEEP_MAIN = { name_regex_keep: 'main' };

function decideOne(fields: Record<string, unknown>, tags: readonly PreviewTag[], ledger?: BulkLedgerEntry) {
  const decisions = decideRegistryCleanup(aCleanupConfig(fields), aSnapshot(aRepository(tags, { ledger })), NOW);
  expect(decisions).toHaveLength(1);
  return decisions[0];
}

describe('registry_cleanup decide, bulk mode: one decision per repository and its reason', () => {
  it.each<[string, Record<string, unknown>, PreviewTag[], BulkLedgerEntry | undefined, string, string]>([
    ['the first call of a cleanup', KEEP_MAIN, TAGS, undefined, BULK_DELETE, 'delete 2 of 3 tags'],
    [
      'nothing the rules would delete',
      { name_regex_keep: '.*' },
      TAGS,
      undefined,
      SKIP,
      'skip: nothing to delete (3 tags kept)',
    ],
    [
      'nothing to delete, whatever the ledger says',
      { name_regex_keep: '.*' },
      TAGS,
      aLedger(10),
      SKIP,
      'skip: nothing to delete (3 tags kept)',
    ],
    [
      'a call 30 minutes ago',
      KEEP_MAIN,
      TAGS,
      aLedger(30),
      SKIP,
      'skip: the forge allows the next bulk call at 12:30:00Z (last at 11:30:00Z)',
    ],
    [
      'a call 59 minutes ago',
      KEEP_MAIN,
      TAGS,
      aLedger(59),
      SKIP,
      'skip: the forge allows the next bulk call at 12:01:00Z (last at 11:01:00Z)',
    ],
    [
      'a call exactly an hour ago: the first follow-up',
      KEEP_MAIN,
      TAGS,
      aLedger(60),
      BULK_DELETE,
      'delete 2 of 3 tags (follow-up 1 of 24)',
    ],
    [
      'a later follow-up',
      KEEP_MAIN,
      TAGS,
      aLedger(61, { follow_ups: 5, cleanup_started_at: '2025-06-02T06:00:00.000Z' }),
      BULK_DELETE,
      'delete 2 of 3 tags (follow-up 6 of 24)',
    ],
    [
      'the last follow-up allowed',
      KEEP_MAIN,
      TAGS,
      aLedger(61, { follow_ups: 23, cleanup_started_at: '2025-06-02T03:00:00.000Z' }),
      BULK_DELETE,
      'delete 2 of 3 tags (follow-up 24 of 24)',
    ],
    [
      'follow-ups used up',
      KEEP_MAIN,
      TAGS,
      aLedger(61, { follow_ups: 24, cleanup_started_at: '2025-06-02T03:00:00.000Z' }),
      SKIP,
      'skip: 24 follow-ups made, tags remain',
    ],
    [
      'max_follow_ups 0',
      { ...KEEP_MAIN, max_follow_ups: 0 },
      TAGS,
      aLedger(90),
      SKIP,
      'skip: 0 follow-ups made, tags remain',
    ],
    [
      'max_follow_ups 1, one made',
      { ...KEEP_MAIN, max_follow_ups: 1 },
      TAGS,
      aLedger(90, { follow_ups: 1, cleanup_started_at: '2025-06-02T09:00:00.000Z' }),
      SKIP,
      'skip: 1 follow-up made, tags remain',
    ],
    [
      'a closed cleanup: the next call opens a new one',
      KEEP_MAIN,
      TAGS,
      aLedger(120, { follow_ups: 0, cleanup_started_at: null }),
      BULK_DELETE,
      'delete 2 of 3 tags',
    ],
    [
      'the schedule fired since the cleanup opened: a new cleanup, follow-ups counted afresh',
      KEEP_MAIN,
      TAGS,
      aLedger(600, { follow_ups: 24, cleanup_started_at: '2025-06-01T03:00:00.000Z' }),
      BULK_DELETE,
      'delete 2 of 3 tags',
    ],
    [
      'the schedule in its time zone: 03:00 in New York is 07:00Z, after a cleanup opened at 06:00Z',
      { ...KEEP_MAIN, timezone: 'America/New_York' },
      TAGS,
      aLedger(120, { follow_ups: 24, cleanup_started_at: '2025-06-02T06:00:00.000Z' }),
      BULK_DELETE,
      'delete 2 of 3 tags',
    ],
    [
      'the schedule in its time zone: no run since a cleanup opened at 08:00Z',
      { ...KEEP_MAIN, timezone: 'America/New_York' },
      TAGS,
      aLedger(120, { follow_ups: 24, cleanup_started_at: '2025-06-02T08:00:00.000Z' }),
      SKIP,
      'skip: 24 follow-ups made, tags remain',
    ],
    ['one tag', {}, [aTag('build-1')], undefined, BULK_DELETE, 'delete 1 of 1 tag'],
    ['only latest', {}, [aTag('latest')], undefined, SKIP, 'skip: nothing to delete (1 tag kept)'],
    ['an empty repository', {}, [], undefined, SKIP, 'skip: no tags'],
    [
      'an empty repository with delete_empty_repositories',
      { delete_empty_repositories: true },
      [],
      undefined,
      DELETE_REPOSITORY,
      'delete: the repository has no tags',
    ],
  ])('%s', (_title, fields, tags, ledger, action, reason) => {
    expect(decideOne(fields, tags, ledger)).toMatchObject({ action, reason });
  });
});

describe('registry_cleanup decide, after Redis lost the records of bulk calls', () => {
  const lostAgo = (minutes: number) => new Date(NOW.getTime() - minutes * 60_000).toISOString();

  it('holds a repository without a record until an hour after the loss, since a call made before may hold the forge’s limit', () => {
    const [decision] = decideRegistryCleanup(
      aCleanupConfig(KEEP_MAIN),
      aSnapshot(aRepository(TAGS, { recordsLostAt: lostAgo(10) })),
      NOW,
    );
    expect(decision).toMatchObject({
      action: SKIP,
      reason:
        "skip: this policy's records went at 11:50:00Z (Redis lost its data, or held another forge's); a call made before may hold the forge's hourly limit until 12:50:00Z",
    });
    expect(
      nextRegistryCleanupPass(
        aCleanupConfig(KEEP_MAIN),
        aSnapshot(aRepository(TAGS, { recordsLostAt: lostAgo(10) })),
        NOW,
      )?.toISOString(),
    ).toBe('2025-06-02T12:51:00.000Z');
  });

  it('calls once the hour after the loss is over, and goes by a record written since the loss', () => {
    expect(
      decideRegistryCleanup(
        aCleanupConfig(KEEP_MAIN),
        aSnapshot(aRepository(TAGS, { recordsLostAt: lostAgo(60) })),
        NOW,
      )[0],
    ).toMatchObject({ action: BULK_DELETE });
    const recorded = aRepository(TAGS, {
      recordsLostAt: lostAgo(10),
      ledger: aLedger(61, { cleanup_started_at: null }),
    });
    expect(decideRegistryCleanup(aCleanupConfig(KEEP_MAIN), aSnapshot(recorded), NOW)[0]).toMatchObject({
      action: BULK_DELETE,
    });
  });
});

describe('registry_cleanup decide, bulk mode: the decision fields', () => {
  it('carries the forge’s parameters exactly as the policy gives them, and the counts for the report', () => {
    const decision = decideOne({ name_regex_keep: 'main', keep_n: 0, older_than: '1d' }, TAGS);
    expect(decision).toEqual({
      action: BULK_DELETE,
      target: 'acme/api/app (repository 12)',
      key: 'bulk:12:never',
      reason: 'delete 2 of 3 tags',
      params: {
        project: 1,
        repository_id: 12,
        name_regex_delete: '.*',
        name_regex_keep: 'main',
        keep_n: 0,
        older_than: '1d',
        tags_before: 3,
        planned: 2,
        follow_up: 0,
      },
      details: ['delete build-1', 'delete build-2', 'keep main: matches keep regex'],
    });
  });

  it('sends name_regex as name_regex_delete, and leaves out what the policy does not set', () => {
    expect(decideOne({ name_regex_delete: undefined, name_regex: 'build-.*' }, TAGS).params).toEqual({
      project: 1,
      repository_id: 12,
      name_regex_delete: 'build-.*',
      tags_before: 3,
      planned: 2,
      follow_up: 0,
    });
  });

  it('keys a call by the ledger entry it was decided on, so replicas deciding on the same entry collide', () => {
    const ledger = aLedger(61);
    expect(decideOne(KEEP_MAIN, TAGS, ledger).key).toBe(`bulk:12:${ledger.last_call_at}`);
    const again = decideRegistryCleanup(
      aCleanupConfig(KEEP_MAIN),
      aSnapshot(aRepository([...TAGS].reverse(), { ledger })),
      new Date(NOW.getTime() + 5000),
    );
    expect(again[0].key).toBe(`bulk:12:${ledger.last_call_at}`);
  });

  it('lists, for plan, the tags that go (oldest first) and why each other stays', () => {
    const tags = [
      aTag('latest', 0),
      aTag('v1.2.3', 50),
      aTag('build-9', 1),
      aTag('build-8', 2),
      aTag('build-1', 40),
      aTag('build-2', 20),
      aTag('odd', null),
    ];
    const decision = decideOne(
      { name_regex_delete: 'build-.*|odd', name_regex_keep: 'v.*', keep_n: 1, older_than: '14d' },
      tags,
    );
    expect(decision.reason).toBe('delete 2 of 7 tags');
    expect(decision.details).toEqual([
      'delete build-1',
      'delete build-2',
      `keep build-8: too recent (created ${aTag('build-8', 2).created_at})`,
      `keep build-9: too recent (created ${aTag('build-9', 1).created_at})`,
      'keep latest: latest',
      'keep odd: among the newest 1',
      'keep v1.2.3: not matched by delete regex',
    ]);
  });

  it('reports an open cleanup: tags before, planned, deleted, remaining', () => {
    const ledger = aLedger(30, { tags_before: 10, planned: 9 });
    expect(decideOne(KEEP_MAIN, TAGS, ledger).details?.[0]).toBe(
      `cleanup since ${ledger.cleanup_started_at}: 10 tags before, 9 planned, 7 deleted, 2 remaining`,
    );
    expect(decideOne(KEEP_MAIN, TAGS, aLedger(30, { cleanup_started_at: null })).details?.[0]).toBe('delete build-1');
  });

  it('gives a skip the repository as target and key, and the ids as params', () => {
    expect(decideOne({ name_regex_keep: '.*' }, TAGS)).toMatchObject({
      action: SKIP,
      target: 'acme/api/app (repository 12)',
      key: 'repository:12',
      params: { project: 1, repository_id: 12 },
    });
    expect(decideOne({ delete_empty_repositories: true }, [])).toMatchObject({
      key: 'repository:12:delete',
      params: { project: 1, repository_id: 12 },
    });
  });
});

describe('registry_cleanup decide, per_tag mode', () => {
  it('decides one deletion per previewed tag, oldest first, and a skip that names the kept tags', () => {
    const decisions = decideRegistryCleanup(
      aCleanupConfig({ mode: 'per_tag', ...KEEP_MAIN, keep_n: 0, older_than: '1d' }),
      aSnapshot(aRepository(TAGS)),
      NOW,
    );
    expect(decisions).toEqual([
      {
        action: DELETE_TAG,
        target: 'acme/api/app (repository 12) tag build-1',
        key: `tag:12:build-1:${TAGS[0].created_at}`,
        reason: 'delete: matches the delete regex, not among the newest 0, older than 1d',
        params: { project: 1, repository_id: 12, tag: 'build-1', created_at: TAGS[0].created_at, kept_newer: [] },
      },
      {
        action: DELETE_TAG,
        target: 'acme/api/app (repository 12) tag build-2',
        key: `tag:12:build-2:${TAGS[1].created_at}`,
        reason: 'delete: matches the delete regex, not among the newest 0, older than 1d',
        params: { project: 1, repository_id: 12, tag: 'build-2', created_at: TAGS[1].created_at, kept_newer: [] },
      },
      {
        action: SKIP,
        target: 'acme/api/app (repository 12)',
        key: 'repository:12',
        reason: 'skip: 1 of 3 tags kept',
        params: { project: 1, repository_id: 12 },
        details: ['keep main: matches keep regex'],
      },
    ]);
  });

  it('names in each deletion the newer tags keep_n keeps, which the precondition finds still there before deleting', () => {
    const tags = [aTag('pr-300', 4), aTag('pr-301', 3), aTag('main', 2), aTag('pr-302', 1)];
    const decisions = decideRegistryCleanup(
      aCleanupConfig({ mode: 'per_tag', name_regex_delete: '.*', keep_n: 2 }),
      aSnapshot(aRepository(tags)),
      NOW,
    );
    expect(decisions.filter((d) => d.action === DELETE_TAG).map((d) => [d.params.tag, d.params.kept_newer])).toEqual([
      ['pr-300', ['main', 'pr-302']],
      ['pr-301', ['main', 'pr-302']],
    ]);
  });

  it('ignores the hourly ledger, which is about bulk calls only', () => {
    const decisions = decideRegistryCleanup(
      aCleanupConfig({ mode: 'per_tag' }),
      aSnapshot(aRepository([aTag('a')], { ledger: aLedger(1) })),
      NOW,
    );
    expect(decisions.map((d) => d.action)).toEqual([DELETE_TAG]);
  });

  it('keys a tag without creation time as such, and says when nothing goes', () => {
    const [decision] = decideRegistryCleanup(
      aCleanupConfig({ mode: 'per_tag' }),
      aSnapshot(aRepository([aTag('a', null)])),
      NOW,
    );
    expect(decision.key).toBe('tag:12:a:none');
    const kept = decideRegistryCleanup(
      aCleanupConfig({ mode: 'per_tag' }),
      aSnapshot(aRepository([aTag('latest')])),
      NOW,
    );
    expect(kept).toMatchObject([
      { action: SKIP, reason: 'skip: nothing to delete (1 tag kept)', details: ['keep latest: latest'] },
    ]);
  });
});

describe('registry_cleanup decide: determinism', () => {
  const config = aCleanupConfig(KEEP_MAIN);
  const web = aRepository(TAGS, { id: 30, path: 'acme/web', projectId: 2 });
  const api = aRepository(TAGS, { id: 12, path: 'acme/api/app' });
  const tools = aRepository([], { id: 13, path: 'acme/api/tools' });

  it('orders repositories by path', () => {
    expect(decideRegistryCleanup(config, aSnapshot(web, tools, api), NOW).map((d) => d.target)).toEqual([
      'acme/api/app (repository 12)',
      'acme/api/tools (repository 13)',
      'acme/web (repository 30)',
    ]);
  });

  it('gives the same decisions whatever order the snapshot lists things in', () => {
    const shuffled = aSnapshot({ ...web, tags: [...web.tags].reverse() }, tools, {
      ...api,
      tags: [...api.tags].reverse(),
    });
    const decisions = decideRegistryCleanup(config, shuffled, NOW);
    const ordered = decideRegistryCleanup(config, aSnapshot(api, tools, web), NOW);
    expect(decisions).toEqual(ordered);
  });
});

describe('registry_cleanup nextPass: follow-ups after the hour', () => {
  const config = aCleanupConfig(KEEP_MAIN);
  const at = (ms: number) => new Date(ms).toISOString();

  it('after a call, asks for a pass an hour and a minute later', () => {
    expect(nextRegistryCleanupPass(config, aSnapshot(aRepository(TAGS)), NOW)?.toISOString()).toBe(
      '2025-06-02T13:01:00.000Z',
    );
  });

  it('for a repository held back by the hour, asks for the pass after its hour; the earliest wins', () => {
    const snapshot = aSnapshot(
      aRepository(TAGS, { ledger: aLedger(20) }),
      aRepository(TAGS, { id: 13, path: 'acme/b', ledger: aLedger(50) }),
    );
    expect(nextRegistryCleanupPass(config, snapshot, NOW)?.toISOString()).toBe(at(NOW.getTime() + 11 * 60_000));
  });

  it('asks for nothing when nothing remains, follow-ups are used up, or the last follow-up was just made', () => {
    expect(
      nextRegistryCleanupPass(aCleanupConfig({ name_regex_keep: '.*' }), aSnapshot(aRepository(TAGS)), NOW),
    ).toBeUndefined();
    const usedUp = aLedger(61, { follow_ups: 24, cleanup_started_at: '2025-06-02T03:00:00.000Z' });
    expect(nextRegistryCleanupPass(config, aSnapshot(aRepository(TAGS, { ledger: usedUp })), NOW)).toBeUndefined();
    const lastOne = aLedger(61, { follow_ups: 23, cleanup_started_at: '2025-06-02T03:00:00.000Z' });
    expect(nextRegistryCleanupPass(config, aSnapshot(aRepository(TAGS, { ledger: lastOne })), NOW)).toBeUndefined();
    const heldWithNoneLeft = aLedger(30, { follow_ups: 24, cleanup_started_at: '2025-06-02T03:00:00.000Z' });
    expect(
      nextRegistryCleanupPass(config, aSnapshot(aRepository(TAGS, { ledger: heldWithNoneLeft })), NOW),
    ).toBeUndefined();
  });

  it('asks for nothing in per_tag mode or in a policy that is a dry run', () => {
    expect(
      nextRegistryCleanupPass(aCleanupConfig({ mode: 'per_tag' }), aSnapshot(aRepository(someTags(3))), NOW),
    ).toBeUndefined();
    expect(
      nextRegistryCleanupPass(aCleanupConfig({ dry_run: true }), aSnapshot(aRepository(someTags(3))), NOW),
    ).toBeUndefined();
  });
});
