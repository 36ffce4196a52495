import { aCleanupConfig, aTag, NOW } from '../../../test/support/builders/registry';
import { previewRules } from './registry-cleanup.decide';
import { forgeMatcher, previewCleanup, type PreviewTag } from './registry-cleanup.preview';

const AT_CUTOFF = new Date(NOW.getTime() - 7 * 86_400_000).toISOString();
const JUST_BEFORE_CUTOFF = new Date(NOW.getTime() - 7 * 86_400_000 - 1).toISOString();

/** The preview of `tags` under a policy written with `fields`: the tags that go (oldest first) and why others stay. */
function preview(fields: Record<string, unknown>, tags: readonly PreviewTag[]) {
  const result = previewCleanup(tags, previewRules(aCleanupConfig(fields)), NOW);
  const kept = Object.fromEntries(result.verdicts.flatMap((v) => (v.deleted ? [] : [[v.name, v.reason]])));
  return { deleted: result.deleted, kept };
}

describe('registry_cleanup preview: the forge’s rules', () => {
  it.each<[string, Record<string, unknown>, PreviewTag[], string[], Record<string, string>]>([
    [
      'delete all: .* takes every tag, oldest first',
      { name_regex_delete: '.*' },
      [aTag('b', 1), aTag('a', 3), aTag('c', 2)],
      ['a', 'c', 'b'],
      {},
    ],
    [
      'the keep regex wins over the delete regex',
      { name_regex_delete: '.*', name_regex_keep: 'v\\d+\\.\\d+\\.\\d+|main' },
      [aTag('v1.2.3'), aTag('main'), aTag('build-1'), aTag('v1.2.3-rc1')],
      ['build-1'],
      // `v...|main` is `\Av...` or `...main\z`: v1.2.3-rc1 starts with v1.2.3 and is kept too.
      { 'v1.2.3': 'matches keep regex', main: 'matches keep regex', 'v1.2.3-rc1': 'matches keep regex' },
    ],
    [
      'a tag the delete regex does not match stays',
      { name_regex_delete: 'build-.*' },
      [aTag('build-1'), aTag('main')],
      ['build-1'],
      { main: 'not matched by delete regex' },
    ],
    [
      'latest survives .*',
      { name_regex_delete: '.*' },
      [aTag('latest', 400), aTag('old', 400)],
      ['old'],
      { latest: 'latest' },
    ],
    [
      'latest survives even when the keep regex would not keep it and keep_n is 0',
      { name_regex_delete: 'lat.*', keep_n: 0 },
      [aTag('latest', 400), aTag('later', 400)],
      ['later'],
      { latest: 'latest' },
    ],
    [
      'keep_n keeps the newest candidates',
      { keep_n: 2 },
      [aTag('d', 1), aTag('a', 4), aTag('c', 2), aTag('b', 3)],
      ['a', 'b'],
      { d: 'among the newest 2', c: 'among the newest 2' },
    ],
    [
      'keep_n counts candidates only: kept-by-name tags do not use up its places',
      { name_regex_keep: 'main', keep_n: 1 },
      [aTag('main', 0), aTag('b', 2), aTag('a', 3)],
      ['a'],
      { main: 'matches keep regex', b: 'among the newest 1' },
    ],
    [
      'keep_n larger than the candidates keeps them all',
      { keep_n: 10 },
      [aTag('a'), aTag('b')],
      [],
      { a: 'among the newest 10', b: 'among the newest 10' },
    ],
    [
      'older_than deletes only tags strictly older; one exactly at the cut-off stays',
      { older_than: '7d' },
      [
        { name: 'at-cutoff', created_at: AT_CUTOFF },
        { name: 'just-before', created_at: JUST_BEFORE_CUTOFF },
        aTag('recent', 1),
      ],
      ['just-before'],
      {
        'at-cutoff': `too recent (created ${AT_CUTOFF})`,
        recent: `too recent (created ${aTag('recent', 1).created_at})`,
      },
    ],
    [
      'under keep_n a tag without timestamp counts as the newest',
      { keep_n: 1 },
      [aTag('no-time', null), aTag('newest-with-time', 0), aTag('old', 10)],
      ['old', 'newest-with-time'],
      { 'no-time': 'among the newest 1' },
    ],
    [
      'under older_than a tag without timestamp is never deleted',
      { older_than: '1d' },
      [aTag('no-time', null), aTag('old', 10)],
      ['old'],
      { 'no-time': 'no creation time' },
    ],
    [
      'keep_n then older_than: the newest are kept first, the rest only when old enough',
      { keep_n: 1, older_than: '5d' },
      [aTag('a', 10), aTag('b', 6), aTag('c', 4), aTag('d', 1)],
      ['a', 'b'],
      { d: 'among the newest 1', c: `too recent (created ${aTag('c', 4).created_at})` },
    ],
    [
      'a|b is anchored as \\Aa|b\\z: names starting with a or ending with b',
      { name_regex_delete: 'a|b' },
      [aTag('alpha'), aTag('crab'), aTag('cab-x'), aTag('xa'), aTag('b')],
      ['alpha', 'b', 'crab'],
      { 'cab-x': 'not matched by delete regex', xa: 'not matched by delete regex' },
    ],
    [
      'a pattern matches the whole name, not a part of it',
      { name_regex_delete: 'build' },
      [aTag('build'), aTag('build-1'), aTag('rebuild')],
      ['build'],
      { 'build-1': 'not matched by delete regex', rebuild: 'not matched by delete regex' },
    ],
    [
      'name_regex is accepted as the synonym of name_regex_delete',
      { name_regex_delete: undefined, name_regex: 'tmp-.*' },
      [aTag('tmp-1'), aTag('main')],
      ['tmp-1'],
      { main: 'not matched by delete regex' },
    ],
    [
      'with both, name_regex_delete wins as on the forge',
      { name_regex_delete: 'tmp-.*', name_regex: '.*' },
      [aTag('tmp-1'), aTag('main')],
      ['tmp-1'],
      { main: 'not matched by delete regex' },
    ],
  ])('%s', (_title, fields, tags, deleted, kept) => {
    const result = preview(fields, tags);
    // Oldest first; tags created at the same time in name order.
    expect(result.deleted).toEqual(deleted);
    expect(result.kept).toEqual(kept);
  });

  it('gives every tag a verdict, in the order given', () => {
    const tags = [aTag('latest'), aTag('b', 2), aTag('a', 3)];
    const { verdicts } = previewCleanup(tags, { nameRegexDelete: '.*', keepN: 1 }, NOW);
    expect(verdicts).toEqual([
      { name: 'latest', created_at: tags[0].created_at, deleted: false, reason: 'latest' },
      { name: 'b', created_at: tags[1].created_at, deleted: false, reason: 'among the newest 1' },
      { name: 'a', created_at: tags[2].created_at, deleted: true },
    ]);
  });

  it('does not depend on the order of the tags', () => {
    const tags = [aTag('a', 5), aTag('b', 4), aTag('c', null), aTag('d', 2), aTag('e', 2)];
    const rules = { nameRegexDelete: '.*', keepN: 2, olderThanMs: 3 * 86_400_000 };
    expect(previewCleanup([...tags].reverse(), rules, NOW).deleted).toEqual(previewCleanup(tags, rules, NOW).deleted);
  });

  it('matches the way the forge anchors, alternation included', () => {
    const matches = forgeMatcher('v1|2$');
    expect(['v1', 'v1x', 'x2', 'x1'].map(matches)).toEqual([true, true, true, false]);
    expect(forgeMatcher('(?i)MAIN')('main')).toBe(true);
  });
});
