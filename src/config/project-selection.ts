import { quote } from './problems';
import { Re2Pattern } from './re2';

// Which projects (or groups) a policy covers: the `projects:` and `groups:` lists of the policy file. An item is an id,
// a full path or a glob on full paths, and a leading `!` makes it an exclude (docs/policies.md, "Projects and groups by
// glob"; the syntax is Renovate's `autodiscoverFilter`, which operators know).
//
// Rules where the design leaves room:
// - An id is a positive whole number, written as a YAML number (`42`) or as a string of digits (`"42"`): the API itself
//   reads a `:id` of digits as an id and anything else as a path (`INTEGER_ID_REGEX = /^-?\d+$/` in GitLab's
//   lib/api/helpers.rb), so a path made only of digits could not be addressed anyway. `"!42"` excludes by id.
// - Wildcards: `*` is any characters within one segment, `?` exactly one character within one segment, `**` a whole
//   segment that matches zero or more segments. Nothing else (`[...]`, `{a,b}`) is a wildcard: those characters cannot
//   occur in a path, so they are refused rather than taken literally.
// - Zero segments: `acme/**` matches `acme` itself as well. No project has a one-segment path, so for projects this
//   changes nothing; for groups it is what the design asks: `acme/**` = acme and every subgroup, while `acme/*` =
//   acme's direct subgroups only (a `*` always stands for exactly one segment).
// - An include glob starts with a literal group path, because that is the group whose listing finds its candidates.
//   An exclude lists nothing, it only filters what the includes found, so `!**/sandbox-*` (such projects in every
//   group) is allowed.
// - Matching is case-insensitive throughout (ids aside): exact paths, globs and excludes.

/** What a selection picks from: projects (full path `group/project`) or groups (full path `group[/subgroup...]`). */
export type SelectionTarget = 'project' | 'group';

interface SelectionItemBase {
  /** As the operator wrote it, for messages and for printing the configuration back. */
  readonly written: string | number;
  readonly exclude: boolean;
}

export interface IdItem extends SelectionItemBase {
  readonly kind: 'id';
  readonly id: number;
}

export interface PathItem extends SelectionItemBase {
  readonly kind: 'path';
  /** Without the leading `!`. */
  readonly path: string;
}

export interface GlobItem extends SelectionItemBase {
  readonly kind: 'glob';
  /** Without the leading `!`. */
  readonly pattern: string;
  /**
   * The literal group path the glob starts with, whose listing finds the candidates (`acme/platform` for
   * `acme/platform/api-*`). Undefined only for an exclude that starts with a wildcard.
   */
  readonly root: string | undefined;
  /** Whether candidates lie deeper than directly in `root`: the glob has `**`, or more than one segment after it. */
  readonly includeSubgroups: boolean;
  /** The glob as an anchored, case-insensitive RE2 pattern over a full path. */
  readonly matcher: Re2Pattern;
}

export type SelectionItem = IdItem | PathItem | GlobItem;

/** The result of reading one item: the item, or why it is not one. */
export type ParsedSelectionItem = SelectionItem | { readonly problem: string };

/** A group to list to find a selection's glob candidates. */
export interface DiscoveryRoot {
  /** Full path of the group, spelled as first written. */
  readonly group: string;
  /**
   * Projects: list with `include_subgroups=true`. Groups: list all descendant groups rather than the direct
   * subgroups only. False: what lies directly in `group` is enough.
   */
  readonly includeSubgroups: boolean;
}

/** A project as the forge lists it (`GET /groups/:id/projects`, `GET /projects/:id`). */
export interface DiscoveredProject {
  readonly id: number;
  readonly path_with_namespace: string;
  readonly archived: boolean;
}

/** A group as the forge lists it (`GET /groups/:id`, `/subgroups`, `/descendant_groups`). */
export interface DiscoveredGroup {
  readonly id: number;
  readonly full_path: string;
}

const DIGITS = /^\d+$/;
// Characters of a path on the forge (its router's PATH_REGEX_STR in lib/gitlab/path_regex.rb): letters a-z, digits,
// "_", "-" and ".". Plus the wildcards.
const PATH_CHARACTER = /[A-Za-z0-9_.\-*?]/;
const WILDCARD = /[*?]/;
// The forge refuses these endings on every namespace and project path (NO_SUFFIX_REGEX in path_regex.rb).
const FORBIDDEN_SUFFIXES = ['.git', '.atom'];

/**
 * Reads one item of a `projects:` (or, with `target` 'group', a `groups:`) list.
 *
 * Segments are checked against what the forge's router accepts (lib/gitlab/path_regex.rb: a segment starts with a
 * letter, digit, `_` or `.`, continues with those and `-`, and does not end in `.git` or `.atom`), not against the
 * stricter rules the forge applies to new paths today (docs.gitlab.com/user/reserved_names: start and end with a
 * letter or digit, no consecutive special characters): projects created under the older rules keep their paths
 * (`_legacy`, `api--v1`), and a selection must be able to name them. It is also what `projectRef()` accepts.
 */
export function parseSelectionItem(item: string | number, target: SelectionTarget = 'project'): ParsedSelectionItem {
  if (typeof item === 'number') {
    return isId(item) ? { kind: 'id', id: item, exclude: false, written: item } : { problem: ID_PROBLEM };
  }
  const what =
    target === 'project'
      ? 'project id, full path or glob such as "acme/*"'
      : 'group id, full path or glob such as "acme/**"';
  if (item.trim() === '') return { problem: `an empty item selects nothing; write a ${what}` };
  const exclude = item.startsWith('!');
  const body = exclude ? item.slice(1) : item;
  if (body === '')
    return { problem: '"!" alone excludes nothing; write what to exclude after it, such as "!acme/legacy-*"' };

  if (DIGITS.test(body)) {
    const id = Number(body);
    return isId(id) ? { kind: 'id', id, exclude, written: item } : { problem: ID_PROBLEM };
  }

  if (/^\/+$/.test(body)) return { problem: `${quote(body)} is no path; write a ${what}` };
  const segments = body.split('/');
  const shapeProblem = segmentsProblem(body, segments);
  if (shapeProblem) return { problem: shapeProblem };

  const firstWildcard = segments.findIndex((segment) => WILDCARD.test(segment));
  if (firstWildcard < 0) {
    if (target === 'project' && segments.length < 2) return { problem: groupIsNoProject(body, exclude) };
    return { kind: 'path', path: body, exclude, written: item };
  }

  const literalPrefix = segments.slice(0, firstWildcard);
  if (!exclude && literalPrefix.length === 0) {
    return {
      problem:
        `a glob starts with a literal group path such as "acme/": the ${target}s a glob selects are found by listing ` +
        `that group, and ${quote(body)} would have to list every group on the forge`,
    };
  }
  if (target === 'project' && !segments.includes('**') && segments.length < 2) {
    // Only an exclude gets here (an include without a literal group was refused above).
    return {
      problem: `${quote(body)} matches only top-level names, and every project's full path starts with its group; write ${quote(`**/${body}`)} to match it in every group`,
    };
  }

  const rest = segments.slice(literalPrefix.length);
  return {
    kind: 'glob',
    pattern: body,
    root: literalPrefix.length > 0 ? literalPrefix.join('/') : undefined,
    includeSubgroups: rest.includes('**') || rest.length > 1,
    matcher: compileGlob(segments),
    exclude,
    written: item,
  };
}

const ID_PROBLEM = 'an id must be a positive whole number';

function isId(value: number): boolean {
  return Number.isSafeInteger(value) && value > 0;
}

/** Why `segments` (of `body`, split at `/`) can match no path on the forge, or undefined when they can. */
function segmentsProblem(body: string, segments: readonly string[]): string | undefined {
  if (segments[0] === '') return `a full path has no leading "/"; write ${quote(body.replace(/^\/+/, ''))}`;
  if (segments[segments.length - 1] === '') {
    return `a trailing "/" matches no path; write ${quote(body.replace(/\/+$/, ''))}, or ${quote(`${body.replace(/\/+$/, '')}/**`)} for everything below it`;
  }
  if (segments.includes('')) return '"//" (an empty segment) matches no path; paths have one "/" between segments';
  for (const segment of segments) {
    const problem = segmentProblem(segment);
    if (problem) return problem;
  }
  return undefined;
}

function segmentProblem(segment: string): string | undefined {
  for (const character of segment) {
    if (!PATH_CHARACTER.test(character)) {
      return (
        `${quote(character)} cannot appear in a path: paths hold letters a-z, digits, "_", "-" and "."; ` +
        'the wildcards are "*" (within a segment), "**" (any number of segments) and "?" (one character)'
      );
    }
  }
  if (segment.includes('**') && segment !== '**') {
    return `"**" must be a whole segment, as in "acme/**/web"; within a segment such as ${quote(segment)} a single "*" already matches any characters`;
  }
  if (segment.startsWith('-')) return `segment ${quote(segment)} starts with "-", which no path on the forge does`;
  const suffix = FORBIDDEN_SUFFIXES.find((ending) => segment.endsWith(ending));
  if (suffix) {
    return `segment ${quote(segment)} ends in ${quote(suffix)}, which no path on the forge does (a clone URL adds it; the path has none)`;
  }
  return undefined;
}

function groupIsNoProject(path: string, exclude: boolean): string {
  const bang = exclude ? '!' : '';
  return (
    `${quote(path)} is a group path, and a project's full path has its group in front, such as "acme/api"; ` +
    `for the projects of group ${quote(path)} write ${quote(`${bang}${path}/*`)} (directly in it) or ` +
    `${quote(`${bang}${path}/**`)} (with its subgroups)`
  );
}

/**
 * The glob as RE2, anchored and case-insensitive. Each segment is either `**` (zero or more whole segments) or
 * literal characters with `*` and `?` that never cross a `/`. Path characters need no escaping but `.`.
 */
function compileGlob(segments: readonly string[]): Re2Pattern {
  // `**/**` means what `**` means; collapsing keeps the expression small.
  const collapsed = segments.filter((segment, index) => segment !== '**' || segments[index - 1] !== '**');
  let source = '';
  let separatorDue = false;
  collapsed.forEach((segment, index) => {
    if (segment === '**') {
      if (index > 0) {
        source += '(?:/[^/]+)*';
        separatorDue = true;
      } else if (collapsed.length === 1) {
        source += '[^/]+(?:/[^/]+)*';
        separatorDue = true;
      } else {
        // A leading `**` takes its own separators, so that `**/legacy` matches `legacy` as well as `a/b/legacy`.
        source += '(?:[^/]+/)*';
        separatorDue = false;
      }
      return;
    }
    if (separatorDue) source += '/';
    source += segment.replace(/[.*?]/g, (character) =>
      character === '.' ? '\\.' : character === '*' ? '[^/]*' : '[^/]',
    );
    separatorDue = true;
  });
  const compiled = Re2Pattern.compile(`(?i)^${source}$`);
  // The source is built from checked path characters only; failing here is a bug in this function, not in a file.
  if ('error' in compiled)
    throw new Error(`glob ${quote(segments.join('/'))} translated to invalid RE2: ${compiled.error}`);
  return compiled;
}

/** The items of a selection, read and sorted by role; shared by projects and groups. */
abstract class Selection {
  /** Included ids and exact paths, in the order written: these are selected first, in this order. */
  readonly explicit: readonly (IdItem | PathItem)[];
  /** Included globs, in the order written. */
  readonly globs: readonly GlobItem[];
  /** Every exclude: ids, exact paths and globs. They apply to every include, explicit ones too. */
  readonly excludes: readonly SelectionItem[];

  protected constructor(readonly items: readonly SelectionItem[]) {
    const includes = items.filter((item) => !item.exclude);
    this.explicit = includes.filter((item): item is IdItem | PathItem => item.kind !== 'glob');
    this.globs = includes.filter((item): item is GlobItem => item.kind === 'glob');
    this.excludes = items.filter((item) => item.exclude);
  }

  /** Included ids, in the order written. */
  get ids(): readonly number[] {
    return this.explicit.flatMap((item) => (item.kind === 'id' ? [item.id] : []));
  }

  /** Included exact paths, in the order written. */
  get paths(): readonly string[] {
    return this.explicit.flatMap((item) => (item.kind === 'path' ? [item.path] : []));
  }

  /**
   * The groups to list so that every glob's candidates are found, each once: globs on the same group share its
   * listing (needing subgroups if any of them does), and a group below one that is listed with its subgroups is
   * not listed again. In the order first written.
   */
  discoveryRoots(): DiscoveryRoot[] {
    const byPath = new Map<string, { group: string; includeSubgroups: boolean }>();
    for (const glob of this.globs) {
      if (glob.root === undefined) continue;
      const key = glob.root.toLowerCase();
      const known = byPath.get(key);
      if (known) known.includeSubgroups ||= glob.includeSubgroups;
      else byPath.set(key, { group: glob.root, includeSubgroups: glob.includeSubgroups });
    }
    const deepRoots = [...byPath.keys()].filter((key) => byPath.get(key)?.includeSubgroups);
    return [...byPath.entries()]
      .filter(([key]) => !deepRoots.some((deep) => key.startsWith(`${deep}/`)))
      .map(([, root]) => ({ ...root }));
  }

  /**
   * Whether the file names `ref` itself, as it is written (an id, or a path ignoring case), rather than a glob having
   * found it: a target named so that is gone is an error for it, one a glob found drops out.
   */
  names(ref: string | number): boolean {
    const wanted = String(ref).toLowerCase();
    return this.explicit.some((item) => String(item.kind === 'id' ? item.id : item.path).toLowerCase() === wanted);
  }

  /** Whether an include glob matches `fullPath` (case-insensitive). Ids and exact paths are not globs: see `select`. */
  matches(fullPath: string): boolean {
    return this.globs.some((glob) => glob.matcher.test(fullPath));
  }

  /** Whether an exclude matches the project or group: by its id, or by its full path (case-insensitive). */
  excluded(fullPath: string, id?: number): boolean {
    const lower = fullPath.toLowerCase();
    return this.excludes.some((item) => {
      if (item.kind === 'id') return item.id === id;
      if (item.kind === 'path') return item.path.toLowerCase() === lower;
      return item.matcher.test(fullPath);
    });
  }

  /**
   * The explicit includes that none of `discovered` answers to (deleted, renamed, or out of the token's reach), in
   * the order written, so that `plan` and `doctor` can name them.
   */
  protected unresolvedAmong<T>(
    discovered: readonly T[],
    idOf: (target: T) => number,
    pathOf: (target: T) => string,
  ): (IdItem | PathItem)[] {
    const ids = new Set(discovered.map(idOf));
    const paths = new Set(discovered.map((target) => pathOf(target).toLowerCase()));
    return this.explicit.filter((item) =>
      item.kind === 'id' ? !ids.has(item.id) : !paths.has(item.path.toLowerCase()),
    );
  }

  /**
   * The final list: explicit includes first, in the order written, whatever their state; then what the globs match,
   * by path, leaving out what `keep` refuses (archived projects); each target once, excludes always winning.
   */
  protected selectAmong<T>(
    discovered: readonly T[],
    idOf: (target: T) => number,
    pathOf: (target: T) => string,
    keep: (target: T) => boolean,
  ): T[] {
    const byId = new Map<number, T>();
    const byPath = new Map<string, T>();
    for (const target of discovered) {
      if (!byId.has(idOf(target))) byId.set(idOf(target), target);
      const path = pathOf(target).toLowerCase();
      if (!byPath.has(path)) byPath.set(path, target);
    }

    const chosen = new Map<number, T>();
    const choose = (target: T) => {
      if (!chosen.has(idOf(target)) && !this.excluded(pathOf(target), idOf(target))) chosen.set(idOf(target), target);
    };
    for (const item of this.explicit) {
      const target = item.kind === 'id' ? byId.get(item.id) : byPath.get(item.path.toLowerCase());
      if (target !== undefined) choose(target);
    }
    [...byId.values()]
      .filter((target) => keep(target) && this.matches(pathOf(target)))
      .sort((a, b) => comparePaths(pathOf(a), pathOf(b)) || idOf(a) - idOf(b))
      .forEach(choose);
    return [...chosen.values()];
  }

  /** The items as written, so a printed configuration reads like the file. */
  toJSON(): (string | number)[] {
    return this.items.map((item) => item.written);
  }
}

/** By path ignoring case (as the forge routes them), then exactly, so the order is the same on every replica. */
function comparePaths(a: string, b: string): number {
  const lowerA = a.toLowerCase();
  const lowerB = b.toLowerCase();
  if (lowerA !== lowerB) return lowerA < lowerB ? -1 : 1;
  return a === b ? 0 : a < b ? -1 : 1;
}

/**
 * A `projects:` list. Its user lists the `discoveryRoots()` with `GET /groups/:id/projects`, resolves the `explicit`
 * items itself (`GET /projects/:id`; they are included even when archived, so a listing that leaves out archived
 * projects would miss them), and hands everything it found to `select`.
 */
export class ProjectSelection extends Selection {
  constructor(items: readonly SelectionItem[]) {
    super(items);
  }

  /**
   * What the policy covers, from every project found: explicit ids and paths first, in the order written, even when
   * archived; then the glob matches sorted by path, archived ones only with `includeArchived`; each project once (by
   * id) and nothing an exclude matches. An explicit item missing from `discovered` is left out (see `unresolved`).
   */
  select<P extends DiscoveredProject>(discovered: readonly P[], includeArchived: boolean): P[] {
    return this.selectAmong(
      discovered,
      (project) => project.id,
      (project) => project.path_with_namespace,
      (project) => includeArchived || !project.archived,
    );
  }

  unresolved(discovered: readonly DiscoveredProject[]): (IdItem | PathItem)[] {
    return this.unresolvedAmong(
      discovered,
      (project) => project.id,
      (project) => project.path_with_namespace,
    );
  }
}

/**
 * A `groups:` list (access_requests). The same syntax over group full paths: `acme/**` = acme and every subgroup,
 * `acme/*` = acme's direct subgroups. Its user lists, for each `discoveryRoots()` entry, the group itself and its
 * subgroups (`/subgroups`, or `/descendant_groups` when `includeSubgroups`), resolves the `explicit` items, and hands
 * everything to `select`.
 */
export class GroupSelection extends Selection {
  constructor(items: readonly SelectionItem[]) {
    super(items);
  }

  /** Explicit ids and paths first, in the order written; then the glob matches sorted by path; each group once. */
  select<G extends DiscoveredGroup>(discovered: readonly G[]): G[] {
    return this.selectAmong(
      discovered,
      (group) => group.id,
      (group) => group.full_path,
      () => true,
    );
  }

  unresolved(discovered: readonly DiscoveredGroup[]): (IdItem | PathItem)[] {
    return this.unresolvedAmong(
      discovered,
      (group) => group.id,
      (group) => group.full_path,
    );
  }
}

export function compileSelection(items: readonly SelectionItem[]): ProjectSelection {
  return new ProjectSelection(items);
}

export function compileGroupSelection(items: readonly SelectionItem[]): GroupSelection {
  return new GroupSelection(items);
}
