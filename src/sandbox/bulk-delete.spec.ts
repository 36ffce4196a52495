import {
  checkRegexParams,
  forgeTagMatcher,
  selectTagsToDelete,
  type BulkDeleteParams,
  type TagForCleanup,
} from './bulk-delete';

const NOW = new Date('2025-06-02T12:00:00Z');
const HOUR = 3600 * 1000;

/** A tag `hoursOld` hours before NOW; null = no timestamp. */
function tag(name: string, hoursOld: number | null): TagForCleanup {
  return { name, createdAt: hoursOld === null ? null : new Date(NOW.getTime() - hoursOld * HOUR) };
}

function deleted(tags: TagForCleanup[], params: BulkDeleteParams, cap?: number): string[] {
  const outcome = selectTagsToDelete(tags, params, NOW, cap);
  if (!outcome.ok) throw new Error(outcome.error);
  return [...outcome.toDelete].sort();
}

describe('selectTagsToDelete', () => {
  const tags = [
    tag('latest', 1),
    tag('main', 2),
    tag('v1.2.3', 24 * 10),
    tag('v1.2.2', 24 * 30),
    tag('build-1', 24 * 40),
    tag('build-2', 24 * 20),
    tag('build-3', 5),
    tag('nightly', null),
  ];

  it.each<[string, BulkDeleteParams, string[]]>([
    [
      '`.*` deletes everything except latest',
      { name_regex_delete: '.*' },
      ['build-1', 'build-2', 'build-3', 'main', 'nightly', 'v1.2.2', 'v1.2.3'],
    ],
    ['latest survives even when named explicitly', { name_regex_delete: 'latest' }, []],
    [
      'keep wins over delete',
      { name_regex_delete: '.*', name_regex_keep: 'v.*|main' },
      ['build-1', 'build-2', 'build-3', 'nightly'],
    ],
    ['keep `.*` deletes nothing', { name_regex_delete: '.*', name_regex_keep: '.*' }, []],
    ['patterns are anchored at both ends', { name_regex_delete: 'build' }, []],
    ['a partial pattern needs its own wildcard', { name_regex_delete: 'build-.*' }, ['build-1', 'build-2', 'build-3']],
    ['name_regex is a synonym of name_regex_delete', { name_regex: 'build-.*' }, ['build-1', 'build-2', 'build-3']],
    [
      'name_regex_delete wins over name_regex',
      { name_regex_delete: 'v.*', name_regex: 'build-.*' },
      ['v1.2.2', 'v1.2.3'],
    ],
    ['keep_n keeps the newest candidates', { name_regex_delete: 'build-.*', keep_n: 1 }, ['build-1', 'build-2']],
    ['keep_n 0 keeps none', { name_regex_delete: 'build-.*', keep_n: 0 }, ['build-1', 'build-2', 'build-3']],
    ['keep_n larger than the candidates deletes nothing', { name_regex_delete: 'build-.*', keep_n: 10 }, []],
    [
      'keep_n counts a tag without timestamp as newest',
      { name_regex_delete: 'build-.*|nightly', keep_n: 1 },
      ['build-1', 'build-2', 'build-3'],
    ],
    [
      'older_than deletes only strictly older tags',
      { name_regex_delete: '.*', older_than: '20d' },
      ['build-1', 'v1.2.2'],
    ],
    ['older_than never deletes a tag without timestamp', { name_regex_delete: 'nightly', older_than: '1h' }, []],
    ['older_than in weeks', { name_regex_delete: '.*', older_than: '2w' }, ['build-1', 'build-2', 'v1.2.2']],
    ['older_than in months', { name_regex_delete: '.*', older_than: '1month' }, ['build-1']],
    ['keep_n applies before older_than', { name_regex_delete: 'build-.*', keep_n: 2, older_than: '1h' }, ['build-1']],
  ])('%s', (_title, params, expected) => {
    expect(deleted(tags, params)).toEqual(expected);
  });

  it('applies the pattern as \\A + pattern + \\z without a group: `a|b` is "starts with a" or "ends with b"', () => {
    const names = [tag('alpha', 1), tag('xb', 1), tag('b-middle-x', 1), tag('zeta', 1), tag('a', 1)];
    expect(deleted(names, { name_regex_delete: 'a|b' })).toEqual(['a', 'alpha', 'xb']);
    expect(forgeTagMatcher('a|b')('xab')).toBe(true);
    expect(forgeTagMatcher('a|b')('xax')).toBe(false);
  });

  it('a tag exactly at the older_than cut-off is kept (strictly older only)', () => {
    expect(deleted([tag('edge', 24), tag('older', 24.01)], { name_regex_delete: '.*', older_than: '1d' })).toEqual([
      'older',
    ]);
  });

  it('the per-call cap deletes only the first N tags to delete, oldest first', () => {
    const many = Array.from({ length: 10 }, (_, i) => tag(`t${i}`, 100 - i));
    expect(deleted(many, { name_regex_delete: '.*' }, 3)).toEqual(['t0', 't1', 't2']);
  });

  it('reports an older_than it cannot read instead of deleting', () => {
    expect(selectTagsToDelete(tags, { name_regex_delete: '.*', older_than: 'soon' }, NOW)).toEqual({
      ok: false,
      error: 'older_than is not a duration: soon',
    });
  });
});

describe('checkRegexParams', () => {
  it.each<[BulkDeleteParams, string | undefined]>([
    [{ name_regex_delete: '.*' }, undefined],
    [{ name_regex_delete: '(' }, 'name_regex_delete'],
    [{ name_regex: 'v[0-9' }, 'name_regex'],
    [{ name_regex_delete: '.*', name_regex_keep: 'a(?=b)' }, 'name_regex_keep'],
  ])('%j → invalid %s', (params, invalid) => {
    const check = checkRegexParams(params);
    if (invalid === undefined) {
      expect(check.ok).toBe(true);
    } else {
      expect(check).toMatchObject({ ok: false, param: invalid });
      expect(check.ok === false && check.message).toMatch(/^is an invalid regexp: /);
    }
  });
});
