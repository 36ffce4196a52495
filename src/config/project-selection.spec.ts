import { z } from 'zod';
import {
  compileGroupSelection,
  compileSelection,
  parseSelectionItem,
  type DiscoveredGroup,
  type DiscoveredProject,
  type SelectionItem,
  type SelectionTarget,
} from './project-selection';
import { groupSelection, projectSelection, projectSelectionItem } from './validators';

function item(written: string | number, target: SelectionTarget = 'project'): SelectionItem {
  const parsed = parseSelectionItem(written, target);
  if ('problem' in parsed) throw new Error(`${JSON.stringify(written)}: ${parsed.problem}`);
  return parsed;
}

function problemOf(written: string | number, target: SelectionTarget = 'project'): string | undefined {
  const parsed = parseSelectionItem(written, target);
  return 'problem' in parsed ? parsed.problem : undefined;
}

const projects = (...written: (string | number)[]) => compileSelection(written.map((w) => item(w)));
const groups = (...written: (string | number)[]) => compileGroupSelection(written.map((w) => item(w, 'group')));

let nextId = 1000;
function aProject(path_with_namespace: string, overrides: Partial<DiscoveredProject> = {}): DiscoveredProject {
  return { id: nextId++, path_with_namespace, archived: false, ...overrides };
}
function aGroup(full_path: string, id = nextId++): DiscoveredGroup {
  return { id, full_path };
}
const pathsOf = (list: readonly DiscoveredProject[]) => list.map((project) => project.path_with_namespace);

describe('parseSelectionItem', () => {
  it.each([
    [42, { kind: 'id', id: 42, exclude: false }],
    ['42', { kind: 'id', id: 42, exclude: false }],
    ['007', { kind: 'id', id: 7, exclude: false }],
    ['!42', { kind: 'id', id: 42, exclude: true }],
    ['acme/api', { kind: 'path', path: 'acme/api', exclude: false }],
    ['Acme/Platform/api.v2', { kind: 'path', path: 'Acme/Platform/api.v2', exclude: false }],
    ['_legacy/api--v1_', { kind: 'path', path: '_legacy/api--v1_', exclude: false }],
    ['acme/42', { kind: 'path', path: 'acme/42', exclude: false }],
    ['!acme/legacy', { kind: 'path', path: 'acme/legacy', exclude: true }],
    ['acme/*', { kind: 'glob', pattern: 'acme/*', root: 'acme', includeSubgroups: false, exclude: false }],
    ['acme/**', { kind: 'glob', pattern: 'acme/**', root: 'acme', includeSubgroups: true, exclude: false }],
    ['acme/api-*', { kind: 'glob', pattern: 'acme/api-*', root: 'acme', includeSubgroups: false, exclude: false }],
    ['acme/api-?', { kind: 'glob', pattern: 'acme/api-?', root: 'acme', includeSubgroups: false, exclude: false }],
    ['acme/*/api', { kind: 'glob', pattern: 'acme/*/api', root: 'acme', includeSubgroups: true, exclude: false }],
    [
      'acme/platform/**/web',
      { kind: 'glob', pattern: 'acme/platform/**/web', root: 'acme/platform', includeSubgroups: true, exclude: false },
    ],
    [
      'acme/platform/api/*',
      {
        kind: 'glob',
        pattern: 'acme/platform/api/*',
        root: 'acme/platform/api',
        includeSubgroups: false,
        exclude: false,
      },
    ],
    [
      '!acme/legacy-*',
      { kind: 'glob', pattern: 'acme/legacy-*', root: 'acme', includeSubgroups: false, exclude: true },
    ],
    [
      '!**/sandbox-*',
      { kind: 'glob', pattern: '**/sandbox-*', root: undefined, includeSubgroups: true, exclude: true },
    ],
    ['!*/api', { kind: 'glob', pattern: '*/api', root: undefined, includeSubgroups: true, exclude: true }],
  ])('reads %j', (written, expected) => {
    expect(item(written)).toMatchObject({ ...expected, written });
  });

  it.each([
    ['acme', { kind: 'path', path: 'acme' }],
    ['acme/platform', { kind: 'path', path: 'acme/platform' }],
    ['acme/*', { kind: 'glob', root: 'acme', includeSubgroups: false }],
    ['acme/**', { kind: 'glob', root: 'acme', includeSubgroups: true }],
    ['!acme', { kind: 'path', path: 'acme', exclude: true }],
    ['!sandbox-*', { kind: 'glob', root: undefined, exclude: true }],
    [7, { kind: 'id', id: 7 }],
  ])('reads group item %j', (written, expected) => {
    expect(item(written, 'group')).toMatchObject(expected);
  });

  const MESSAGES = {
    empty: 'an empty item selects nothing; write a project id, full path or glob such as "acme/*"',
    bang: '"!" alone excludes nothing; write what to exclude after it, such as "!acme/legacy-*"',
    id: 'an id must be a positive whole number',
    wildcardStart: (body: string) =>
      `a glob starts with a literal group path such as "acme/": the projects a glob selects are found by listing that group, and ${JSON.stringify(body)} would have to list every group on the forge`,
    character: (character: string) =>
      `${JSON.stringify(character)} cannot appear in a path: paths hold letters a-z, digits, "_", "-" and "."; the wildcards are "*" (within a segment), "**" (any number of segments) and "?" (one character)`,
    doubleStar: (segment: string) =>
      `"**" must be a whole segment, as in "acme/**/web"; within a segment such as ${JSON.stringify(segment)} a single "*" already matches any characters`,
  };

  it.each([
    ['', MESSAGES.empty],
    ['   ', MESSAGES.empty],
    ['!', MESSAGES.bang],
    [0, MESSAGES.id],
    [-3, MESSAGES.id],
    [1.5, MESSAGES.id],
    [Number.NaN, MESSAGES.id],
    [2 ** 53, MESSAGES.id],
    ['0', MESSAGES.id],
    ['!0', MESSAGES.id],
    ['99999999999999999999', MESSAGES.id],
    ['*/api', MESSAGES.wildcardStart('*/api')],
    ['**', MESSAGES.wildcardStart('**')],
    ['**/web', MESSAGES.wildcardStart('**/web')],
    ['acme*/api', MESSAGES.wildcardStart('acme*/api')],
    ['acme*', MESSAGES.wildcardStart('acme*')],
    ['acme/api v2', MESSAGES.character(' ')],
    ['acme/{api,web}', MESSAGES.character('{')],
    ['acme/[ab]pi', MESSAGES.character('[')],
    ['acme/café', MESSAGES.character('é')],
    ['acme\\api', MESSAGES.character('\\')],
    ['!!acme/api', MESSAGES.character('!')],
    ['acme/api+x', MESSAGES.character('+')],
    ['acme/a**', MESSAGES.doubleStar('a**')],
    ['acme/***', MESSAGES.doubleStar('***')],
    ['acme/**x/web', MESSAGES.doubleStar('**x')],
    ['acme/', 'a trailing "/" matches no path; write "acme", or "acme/**" for everything below it'],
    ['acme/api//', 'a trailing "/" matches no path; write "acme/api", or "acme/api/**" for everything below it'],
    ['/acme/api', 'a full path has no leading "/"; write "acme/api"'],
    ['acme//x', '"//" (an empty segment) matches no path; paths have one "/" between segments'],
    ['/', '"/" is no path; write a project id, full path or glob such as "acme/*"'],
    ['!//', '"//" is no path; write a project id, full path or glob such as "acme/*"'],
    ['acme/-api', 'segment "-api" starts with "-", which no path on the forge does'],
    ['acme/-*', 'segment "-*" starts with "-", which no path on the forge does'],
    [
      'acme/api.git',
      'segment "api.git" ends in ".git", which no path on the forge does (a clone URL adds it; the path has none)',
    ],
    [
      'acme/feed.atom',
      'segment "feed.atom" ends in ".atom", which no path on the forge does (a clone URL adds it; the path has none)',
    ],
    [
      'acme',
      '"acme" is a group path, and a project\'s full path has its group in front, such as "acme/api"; for the projects of group "acme" write "acme/*" (directly in it) or "acme/**" (with its subgroups)',
    ],
    [
      '!acme',
      '"acme" is a group path, and a project\'s full path has its group in front, such as "acme/api"; for the projects of group "acme" write "!acme/*" (directly in it) or "!acme/**" (with its subgroups)',
    ],
    [
      '!api-*',
      '"api-*" matches only top-level names, and every project\'s full path starts with its group; write "**/api-*" to match it in every group',
    ],
  ])('refuses %j', (written, message) => {
    expect(problemOf(written)).toBe(message);
  });

  it.each([
    ['', 'an empty item selects nothing; write a group id, full path or glob such as "acme/**"'],
    [
      '*',
      'a glob starts with a literal group path such as "acme/": the groups a glob selects are found by listing that group, and "*" would have to list every group on the forge',
    ],
    ['acme/', 'a trailing "/" matches no path; write "acme", or "acme/**" for everything below it'],
    ['acme/a b', MESSAGES.character(' ')],
  ])('refuses group item %j', (written, message) => {
    expect(problemOf(written, 'group')).toBe(message);
  });

  it('quotes only the start of a very long item', () => {
    const long = `${'x'.repeat(200)}*`;
    expect(problemOf(long)).toContain(`"${'x'.repeat(60)}… (141 more characters)"`);
  });
});

describe('matching discovered paths', () => {
  it.each([
    ['acme/*', 'acme/api', true],
    ['acme/*', 'acme/a/api', false],
    ['acme/*', 'acme', false],
    ['acme/*', 'other/api', false],
    ['acme/*', 'acmex/api', false],
    ['acme/**', 'acme/x', true],
    ['acme/**', 'acme/a/b/x', true],
    ['acme/**', 'acmex/api', false],
    ['acme/**', 'other/acme/api', false],
    ['acme/api-*', 'acme/api-gateway', true],
    ['acme/api-*', 'acme/api-', true],
    ['acme/api-*', 'acme/api', false],
    ['acme/api-*', 'acme/api-x/y', false],
    ['acme/api-*', 'acme/sub/api-x', false],
    ['acme/*-svc', 'acme/billing-svc', true],
    ['acme/a*b*c', 'acme/aXbYc', true],
    ['acme/a*b*c', 'acme/aXbY', false],
    ['acme/api-?', 'acme/api-1', true],
    ['acme/api-?', 'acme/api-12', false],
    ['acme/api-?', 'acme/api-', false],
    ['acme/?', 'acme/x/y', false],
    ['acme/**/web', 'acme/web', true],
    ['acme/**/web', 'acme/a/web', true],
    ['acme/**/web', 'acme/a/b/web', true],
    ['acme/**/web', 'acme/a/web/x', false],
    ['acme/**/web', 'acme/a/webapp', false],
    ['acme/**/web', 'acme/aweb', false],
    ['acme/**/**/web', 'acme/web', true],
    ['acme/**/**/web', 'acme/a/b/web', true],
    ['acme/*/api', 'acme/team/api', true],
    ['acme/*/api', 'acme/api', false],
    ['acme/*/api', 'acme/a/b/api', false],
    ['acme/*/**', 'acme/team/api', true],
    ['acme/*/**', 'acme/team', true],
    ['acme/platform/**/svc-*', 'acme/platform/x/svc-a', true],
    ['acme/platform/**/svc-*', 'acme/other/x/svc-a', false],
    ['acme/api.v*', 'acme/api.v2', true],
    ['acme/api.v*', 'acme/apixv2', false],
    ['ACME/Api-*', 'acme/API-gateway', true],
    ['acme/**', 'AcMe/Sub/Project', true],
    ['acme/**/WEB', 'Acme/a/web', true],
  ])('%s against %s: %s', (pattern, path, expected) => {
    expect(projects(pattern).matches(path)).toBe(expected);
  });

  it('is true when any include glob matches, and ignores ids, exact paths and excludes', () => {
    const selection = projects(42, 'acme/api', 'acme/tools/*', 'beta/**', '!acme/tools/old');
    expect(selection.matches('beta/x/y')).toBe(true);
    expect(selection.matches('acme/tools/old')).toBe(true);
    expect(selection.matches('acme/api')).toBe(false);
  });

  it('an exclude glob starting with a wildcard matches in every group', () => {
    const selection = projects('acme/**', '!**/sandbox-*', '!*/scratch');
    expect(selection.excluded('acme/sandbox-1')).toBe(true);
    expect(selection.excluded('acme/a/b/sandbox-1')).toBe(true);
    expect(selection.excluded('acme/scratch')).toBe(true);
    expect(selection.excluded('acme/a/scratch')).toBe(false);
    expect(selection.excluded('acme/api')).toBe(false);
  });

  it('excluded() matches ids, exact paths (any case) and globs', () => {
    const selection = projects('acme/**', '!7', '!acme/Legacy', '!acme/old-*');
    expect(selection.excluded('acme/whatever', 7)).toBe(true);
    expect(selection.excluded('acme/whatever', 8)).toBe(false);
    expect(selection.excluded('ACME/legacy', 9)).toBe(true);
    expect(selection.excluded('acme/OLD-x')).toBe(true);
    expect(selection.excluded('acme/older')).toBe(false);
  });

  it('answers a pattern that a backtracking matcher would take exponential steps on', () => {
    const selection = projects(`acme/${'*a'.repeat(30)}b`);
    expect(selection.matches(`acme/${'a'.repeat(5000)}`)).toBe(false);
  });
});

describe('splitting items', () => {
  it('keeps explicit includes in the order written, and globs and excludes apart', () => {
    const selection = projects('acme/tools/*', 42, 'acme/api', '!acme/old', '7', 'beta/**', '!9');
    expect(selection.explicit.map((entry) => entry.written)).toEqual([42, 'acme/api', '7']);
    expect(selection.ids).toEqual([42, 7]);
    expect(selection.paths).toEqual(['acme/api']);
    expect(selection.globs.map((glob) => glob.pattern)).toEqual(['acme/tools/*', 'beta/**']);
    expect(selection.excludes.map((entry) => entry.written)).toEqual(['!acme/old', '!9']);
  });

  it('names a project or group only where an id or a path is written (ignoring case), never where a glob found it', () => {
    const selection = projects('acme/tools/*', 42, 'Acme/API', '!acme/old');
    expect([42, '42', 'acme/api', 'ACME/api'].map((ref) => selection.names(ref))).toEqual([true, true, true, true]);
    expect(['acme/tools/cli', 'acme/old', 7].map((ref) => selection.names(ref))).toEqual([false, false, false]);
    expect(groups('acme/**', 'beta').names('beta')).toBe(true);
    expect(groups('acme/**', 'beta').names('acme/sub')).toBe(false);
  });

  it('prints back as written', () => {
    expect(JSON.stringify({ projects: projects(42, '!acme/old', 'acme/*') })).toBe(
      '{"projects":[42,"!acme/old","acme/*"]}',
    );
  });
});

describe('discovery roots', () => {
  it.each<[string[], { group: string; includeSubgroups: boolean }[]]>([
    [['acme/*'], [{ group: 'acme', includeSubgroups: false }]],
    [['acme/**'], [{ group: 'acme', includeSubgroups: true }]],
    [['acme/api-*'], [{ group: 'acme', includeSubgroups: false }]],
    [['acme/*/api'], [{ group: 'acme', includeSubgroups: true }]],
    [['acme/platform/**/web'], [{ group: 'acme/platform', includeSubgroups: true }]],
    [['acme/platform/svc-*'], [{ group: 'acme/platform', includeSubgroups: false }]],
    // Globs on one group share its listing, with subgroups if any needs them.
    [['acme/api-*', 'acme/**/web'], [{ group: 'acme', includeSubgroups: true }]],
    [['acme/*', 'Acme/web-*'], [{ group: 'acme', includeSubgroups: false }]],
    // A group inside one listed with its subgroups is not listed again, whatever the order.
    [['acme/platform/*', 'acme/**'], [{ group: 'acme', includeSubgroups: true }]],
    [['acme/**', 'ACME/Platform/**/x'], [{ group: 'acme', includeSubgroups: true }]],
    // ...but one beside it, or inside one listed without subgroups, is.
    [
      ['acme/*', 'acme/platform/*', 'acmex/*'],
      [
        { group: 'acme', includeSubgroups: false },
        { group: 'acme/platform', includeSubgroups: false },
        { group: 'acmex', includeSubgroups: false },
      ],
    ],
    [
      ['beta/**', 'acme/*'],
      [
        { group: 'beta', includeSubgroups: true },
        { group: 'acme', includeSubgroups: false },
      ],
    ],
  ])('for %j: %j', (written, roots) => {
    expect(projects(...written).discoveryRoots()).toEqual(roots);
  });

  it('lists nothing for ids, exact paths and excludes', () => {
    expect(projects(42, 'acme/api', 'acme/x', '!beta/*', '!**/old').discoveryRoots()).toEqual([]);
  });
});

describe('ProjectSelection.select', () => {
  it('puts explicit ids and paths first in the order written, then glob matches by path', () => {
    const api = aProject('acme/api', { id: 42 });
    const web = aProject('acme/web');
    const tool = aProject('acme/tools/b');
    const toolA = aProject('acme/tools/a');
    const other = aProject('beta/thing', { id: 7 });
    const selection = projects('acme/tools/*', 7, 'ACME/Web', 42);
    expect(pathsOf(selection.select([api, web, tool, toolA, other], false))).toEqual([
      'beta/thing',
      'acme/web',
      'acme/api',
      'acme/tools/a',
      'acme/tools/b',
    ]);
  });

  it('includes explicit items even when archived, but glob matches only with includeArchived', () => {
    const old = aProject('acme/old', { archived: true });
    const oldToo = aProject('acme/old-too', { archived: true, id: 55 });
    const live = aProject('acme/live');
    const selection = projects('acme/*', 'acme/old', 55);
    expect(pathsOf(selection.select([old, oldToo, live], false))).toEqual(['acme/old', 'acme/old-too', 'acme/live']);

    const globOnly = projects('acme/*');
    expect(pathsOf(globOnly.select([old, oldToo, live], false))).toEqual(['acme/live']);
    expect(pathsOf(globOnly.select([old, oldToo, live], true))).toEqual(['acme/live', 'acme/old', 'acme/old-too']);
  });

  it.each<[string, (string | number)[], string[]]>([
    ['an exclude glob beats a glob', ['acme/*', '!acme/legacy-*'], ['acme/api']],
    ['an exclude glob beats an explicit path', ['acme/legacy-one', 'acme/*', '!acme/legacy-*'], ['acme/api']],
    ['an exclude path beats an explicit id', [11, 'acme/*', '!acme/legacy-one'], ['acme/api', 'acme/legacy-two']],
    ['an exclude id beats an explicit path', ['acme/legacy-one', '!11'], []],
    ['an exclude id beats a glob', ['acme/*', '!11'], ['acme/api', 'acme/legacy-two']],
    [
      'an exclude written before the include still wins',
      ['!acme/api', 'acme/*'],
      ['acme/legacy-one', 'acme/legacy-two'],
    ],
    ['an exclude matches paths in any case', ['acme/*', '!ACME/API'], ['acme/legacy-one', 'acme/legacy-two']],
  ])('%s', (_case, written, expected) => {
    const discovered = [aProject('acme/api'), aProject('acme/legacy-one', { id: 11 }), aProject('acme/legacy-two')];
    expect(pathsOf(projects(...written).select(discovered, false))).toEqual(expected);
  });

  it('selects each project once, at its first place, though listed twice or found by two roots', () => {
    const api = aProject('acme/api', { id: 42 });
    const web = aProject('acme/team/web');
    const discovered = [web, api, web, { ...api }];
    const selection = projects('acme/**', 'acme/team/*', 42, 'acme/api', '42');
    expect(pathsOf(selection.select(discovered, false))).toEqual(['acme/api', 'acme/team/web']);
  });

  it('leaves out what matches no include, and explicit items the forge did not return', () => {
    const selection = projects('acme/*', 99, 'acme/gone');
    const discovered = [aProject('acme/api'), aProject('acme/sub/deep'), aProject('acmex/api')];
    expect(pathsOf(selection.select(discovered, true))).toEqual(['acme/api']);
    expect(selection.unresolved(discovered).map((entry) => entry.written)).toEqual([99, 'acme/gone']);
  });

  it('finds an explicit path whatever its case, and keeps the forge spelling', () => {
    const selection = projects('ACME/Api');
    const api = aProject('acme/api');
    expect(selection.select([api], false)).toEqual([api]);
    expect(selection.unresolved([api])).toEqual([]);
  });

  it('orders glob matches by path ignoring case, then exactly, then by id', () => {
    const discovered = [
      aProject('acme/b'),
      aProject('acme/B', { id: 2 }),
      aProject('acme/a'),
      aProject('acme/C'),
      aProject('acme/B', { id: 1 }),
    ];
    const selected = projects('acme/*').select(discovered, false);
    expect(selected.map((project) => `${project.path_with_namespace}#${project.id < 1000 ? project.id : ''}`)).toEqual([
      'acme/a#',
      'acme/B#1',
      'acme/B#2',
      'acme/b#',
      'acme/C#',
    ]);
  });

  it("returns the caller's own objects", () => {
    const withExtra = { ...aProject('acme/api'), default_branch: 'main' };
    const [selected] = projects('acme/*').select([withExtra], false);
    expect(selected.default_branch).toBe('main');
  });
});

describe('GroupSelection', () => {
  const tree = [
    aGroup('acme', 1),
    aGroup('acme/platform', 2),
    aGroup('acme/platform/infra', 3),
    aGroup('acme/web', 4),
    aGroup('acmex', 5),
    aGroup('beta', 6),
  ];
  const selectPaths = (...written: (string | number)[]) =>
    groups(...written)
      .select(tree)
      .map((group) => group.full_path);

  it.each<[(string | number)[], string[]]>([
    // `**` matches zero segments: the group itself and everything below it.
    [['acme/**'], ['acme', 'acme/platform', 'acme/platform/infra', 'acme/web']],
    // `*` is one segment: the direct subgroups, not the group itself.
    [['acme/*'], ['acme/platform', 'acme/web']],
    [['acme/*/**'], ['acme/platform', 'acme/platform/infra', 'acme/web']],
    [['acme/**/infra'], ['acme/platform/infra']],
    [['acme/plat*'], ['acme/platform']],
    [['acme'], ['acme']],
    [['ACME/Platform'], ['acme/platform']],
    [
      [6, 'acme/*'],
      ['beta', 'acme/platform', 'acme/web'],
    ],
    [
      ['acme/**', '!acme/platform/**'],
      ['acme', 'acme/web'],
    ],
    [
      ['acme/**', '!acme'],
      ['acme/platform', 'acme/platform/infra', 'acme/web'],
    ],
    [
      ['acme/**', '!infra'],
      ['acme', 'acme/platform', 'acme/platform/infra', 'acme/web'],
    ],
    [
      ['acme/**', '!**/infra'],
      ['acme', 'acme/platform', 'acme/web'],
    ],
    [
      ['acme/**', '!4'],
      ['acme', 'acme/platform', 'acme/platform/infra'],
    ],
  ])('%j selects %j', (written, expected) => {
    expect(selectPaths(...written)).toEqual(expected);
  });

  it.each<[string[], { group: string; includeSubgroups: boolean }[]]>([
    [['acme/*'], [{ group: 'acme', includeSubgroups: false }]],
    [['acme/**'], [{ group: 'acme', includeSubgroups: true }]],
    [['acme/*/x'], [{ group: 'acme', includeSubgroups: true }]],
    [['acme', 'beta/platform-*'], [{ group: 'beta', includeSubgroups: false }]],
  ])('discovery roots of %j: %j', (written, roots) => {
    expect(groups(...written).discoveryRoots()).toEqual(roots);
  });

  it('names the explicit groups the forge did not return', () => {
    expect(
      groups('acme', 'gone', 77)
        .unresolved(tree)
        .map((entry) => entry.written),
    ).toEqual(['gone', 77]);
  });
});

describe('zod validators', () => {
  const issuesOf = (schema: z.ZodType, value: unknown) =>
    schema.safeParse(value).error?.issues.map((issue) => ({ path: issue.path, message: issue.message }));

  it('projectSelection() yields a ProjectSelection of the items written', () => {
    const selection = projectSelection().parse(['acme/api', 42, '"7"'.slice(1, -1), 'acme/tools/*', '!acme/tools/old']);
    expect(selection.ids).toEqual([42, 7]);
    expect(selection.paths).toEqual(['acme/api']);
    expect(selection.discoveryRoots()).toEqual([{ group: 'acme/tools', includeSubgroups: false }]);
    expect(selection.excluded('acme/tools/old')).toBe(true);
  });

  it('reports each bad item at its own index, all at once', () => {
    expect(issuesOf(projectSelection(), ['acme/api', 'acme//x', 42, '*/api', 0, null])).toEqual([
      { path: [1], message: '"//" (an empty segment) matches no path; paths have one "/" between segments' },
      { path: [3], message: expect.stringMatching(/^a glob starts with a literal group path/) as unknown },
      { path: [4], message: 'an id must be a positive whole number' },
      {
        path: [5],
        message: 'expected a project id, full path or glob such as "acme/*"; quote an exclude: "!acme/legacy-*"',
      },
    ]);
  });

  it('reports problems at the key path inside a policy', () => {
    const policy = z.object({ policies: z.array(z.object({ projects: projectSelection() })) });
    expect(issuesOf(policy, { policies: [{ projects: ['acme/*'] }, { projects: ['acme/ok', 'acme/a**'] }] })).toEqual([
      {
        path: ['policies', 1, 'projects', 1],
        message: expect.stringMatching(/^"\*\*" must be a whole segment/) as unknown,
      },
    ]);
  });

  it.each<[unknown, string]>([
    [[], 'give at least one project'],
    [
      ['!acme/old', '!7'],
      'every item here excludes, so no project is selected; add what to include, such as "acme/**"',
    ],
    ['acme/api', 'expected a list of projects such as [acme/api, 42, "acme/tools/*"]'],
  ])('refuses the list %j as a whole', (value, message) => {
    expect(issuesOf(projectSelection(), value)).toEqual([{ path: [], message }]);
  });

  it('projectSelectionItem() checks one item', () => {
    expect(projectSelectionItem().parse('!acme/old-*')).toMatchObject({ kind: 'glob', exclude: true, root: 'acme' });
    expect(issuesOf(projectSelectionItem(), true)).toEqual([
      {
        path: [],
        message: 'expected a project id, full path or glob such as "acme/*"; quote an exclude: "!acme/legacy-*"',
      },
    ]);
    expect(issuesOf(projectSelectionItem(), 'acme')).toEqual([
      { path: [], message: expect.stringMatching(/^"acme" is a group path/) as unknown },
    ]);
  });

  it('groupSelection() takes group paths and yields a GroupSelection', () => {
    const selection = groupSelection().parse(['acme', 'beta/**', 12, '!beta/sandbox']);
    expect(
      selection
        .select([aGroup('beta', 1), aGroup('beta/sandbox', 2), aGroup('acme', 3), aGroup('beta/x', 4)])
        .map((g) => g.full_path),
    ).toEqual(['acme', 'beta', 'beta/x']);
    expect(issuesOf(groupSelection(), ['acme', 'acme/'])).toEqual([
      { path: [1], message: 'a trailing "/" matches no path; write "acme", or "acme/**" for everything below it' },
    ]);
    expect(issuesOf(groupSelection(), [false])).toEqual([
      {
        path: [0],
        message: 'expected a group id, full path or glob such as "acme/**"; quote an exclude: "!acme/legacy"',
      },
    ]);
    expect(issuesOf(groupSelection(), ['!acme'])).toEqual([
      { path: [], message: 'every item here excludes, so no group is selected; add what to include, such as "acme"' },
    ]);
  });

  it('describes the written form in the JSON Schema for editors', () => {
    const schema = z.toJSONSchema(z.object({ projects: projectSelection() }), {
      io: 'input',
      unrepresentable: 'any',
    }) as unknown as {
      properties: { projects: { type: string; items: { type: string[] }; minItems: number; description: string } };
    };
    expect(schema.properties.projects.type).toBe('array');
    expect(schema.properties.projects.minItems).toBe(1);
    expect(schema.properties.projects.items.type).toEqual(['number', 'string']);
    expect(schema.properties.projects.description).toMatch(/^Projects by id/);
  });
});
