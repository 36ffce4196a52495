import type { Outcome } from './outcome';
import { POLICIES } from './policy-file';
import { SETTINGS_ITEMS } from './project-settings';

/**
 * One row of the table: a policy in a scenario, against the expected outcome (the fault-free reference run; for the
 * reference run itself, the world's design). `expected` counts the actions the expected outcome took, `done` those
 * this run also took, `missing` those it did not (or did wrongly), `extra` actions the expected outcome did not take,
 * `duplicated` actions carried out more than once. A row passes when `done` equals `expected` and the others are 0.
 */
export interface Row {
  scenario: string;
  policy: string;
  faults: number;
  expected: number;
  done: number;
  duplicated: number;
  missing: number;
  extra: number;
  /** One line per difference, naming the record and what the forge holds: the evidence for a failing row. */
  details: string[];
  /**
   * The humans-at-work scenario's figures (humans.ts): there `expected` counts the targets the person left alone, and
   * a row fails on any violation too.
   */
  humans?: HumanRowFigures;
}

export interface HumanRowFigures {
  /** The daemon's harmful writes the judge checked at the moment the forge handled them. */
  actions: number;
  /** The person's changes to this policy's targets. */
  interventions: number;
  /** Actions the daemon did not send because their precondition no longer held (audit outcome `stale`). */
  stale: number;
  /** Targets the forge refused for good and the daemon parked (audit outcome `refused`). */
  refused: number;
  checks: number;
  violations: number;
  /** Writes the person contradicted while the daemon was re-reading them: counted, not failed. */
  races: number;
}

export type Counts = Omit<Row, 'scenario' | 'policy' | 'faults'>;

export function passed(row: Counts): boolean {
  return (
    row.duplicated === 0 &&
    row.missing === 0 &&
    row.extra === 0 &&
    row.done === row.expected &&
    (row.humans?.violations ?? 0) === 0
  );
}

/** All five rows; `converged` uses them without the duplicates (an action done twice cannot be undone by waiting). */
/** What a scenario did that changes what is expected of it. */
export interface CompareOptions {
  /**
   * Redis came back without its data: the fingerprints of the integration secrets the daemon set are gone with it,
   * and a secret it cannot read back is set once more (docs/policies.md, project_settings integrations).
   */
  readonly redisBackEmpty?: boolean;
}

export function compare(
  expected: Outcome,
  actual: Outcome,
  options: CompareOptions = {},
): Record<keyof typeof POLICIES, Counts> {
  return {
    jobRetry: compareJobRetry(expected, actual),
    registry: compareRegistry(expected, actual),
    access: compareAccess(expected, actual),
    keys: compareKeys(expected, actual),
    settings: compareSettings(expected, actual, options),
    tokens: compareTokens(expected, actual),
  };
}

export function converged(expected: Outcome, actual: Outcome): boolean {
  return Object.values(compare(expected, actual)).every((c) => c.missing === 0 && c.extra === 0);
}

function compareJobRetry(expected: Outcome, actual: Outcome): Counts {
  const details: string[] = [];
  let done = 0;
  for (const id of sorted(expected.retried)) {
    if (actual.retried.has(id)) done += 1;
    else details.push(`job ${id} was not retried`);
  }
  const extra = sorted(actual.retried).filter((id) => !expected.retried.has(id));
  for (const id of extra) details.push(`job ${id} was retried, the expected run left it`);
  let duplicated = 0;
  for (const [id, times] of [...actual.retryActs].sort((a, b) => a[0] - b[0])) {
    if (times <= 1) continue;
    duplicated += times - 1;
    details.push(`job ${id} was retried ${times} times (the forge carried out ${times} POST .../retry)`);
  }
  return {
    expected: expected.retried.size,
    done,
    duplicated,
    missing: expected.retried.size - done,
    extra: extra.length,
    details,
  };
}

function compareRegistry(expected: Outcome, actual: Outcome): Counts {
  const details: string[] = [];
  let expectedDeleted = 0;
  let done = 0;
  let missing = 0;
  let extra = 0;
  for (const [repository, inWorld] of [...expected.tagsInWorld].sort((a, b) => a[0] - b[0])) {
    const wantLeft = expected.tagsLeft.get(repository) ?? new Set<string>();
    const gotLeft = actual.tagsLeft.get(repository) ?? new Set<string>();
    const wantDeleted = [...inWorld].filter((tag) => !wantLeft.has(tag));
    const notDeleted = wantDeleted.filter((tag) => gotLeft.has(tag)).sort();
    const wronglyDeleted = [...inWorld].filter((tag) => wantLeft.has(tag) && !gotLeft.has(tag)).sort();
    expectedDeleted += wantDeleted.length;
    done += wantDeleted.length - notDeleted.length;
    missing += notDeleted.length;
    extra += wronglyDeleted.length;
    if (notDeleted.length > 0)
      details.push(`repository ${repository}: ${notDeleted.length} tag(s) not deleted: ${abbreviate(notDeleted)}`);
    if (wronglyDeleted.length > 0)
      details.push(
        `repository ${repository}: ${wronglyDeleted.length} tag(s) deleted that the expected run kept: ${abbreviate(wronglyDeleted)}`,
      );
  }
  return {
    expected: expectedDeleted,
    done,
    duplicated: actual.bulkRepeats.length,
    missing,
    extra,
    details: [...details, ...actual.bulkRepeats],
  };
}

function compareAccess(expected: Outcome, actual: Outcome): Counts {
  const details: string[] = [];
  let done = 0;
  let missing = 0;
  let extra = 0;
  const describe = (decision: number | 'deny' | undefined): string =>
    decision === undefined ? 'left pending' : decision === 'deny' ? 'denied' : `approved at level ${decision}`;
  for (const key of [...new Set([...expected.access.keys(), ...actual.access.keys()])].sort()) {
    const want = expected.access.get(key);
    const got = actual.access.get(key);
    if (want === got) {
      done += 1;
      continue;
    }
    if (want !== undefined) missing += 1;
    if (got !== undefined) extra += 1;
    details.push(`request ${key} (source:id:user): expected ${describe(want)}, forge has it ${describe(got)}`);
  }
  let duplicated = 0;
  for (const [key, times] of actual.accessActs) {
    if (times <= 1) continue;
    duplicated += times - 1;
    details.push(`request ${key}: the forge carried out ${times} approvals/denials`);
  }
  return { expected: expected.access.size, done, duplicated, missing, extra, details };
}

function compareKeys(expected: Outcome, actual: Outcome): Counts {
  const details: string[] = [];
  let expectedRotations = 0;
  let done = 0;
  let missing = 0;
  let extra = 0;
  let duplicated = 0;
  for (const [id, want] of expected.keys) {
    const got = actual.keys.get(id);
    if (!got) continue;
    const wantRotated = want.removed && want.newKeys === 1;
    if (wantRotated) expectedRotations += 1;
    if (got.newKeys > 1) {
      duplicated += got.newKeys - 1;
      details.push(`${got.label}: ${got.newKeys} new keys uploaded for it`);
    }
    const sound = got.problems.length === 0;
    const rotated = got.removed && got.newKeys >= 1;
    if (wantRotated && rotated && sound) done += 1;
    else if (wantRotated) {
      missing += 1;
      details.push(
        `${got.label}: ${got.problems.length > 0 ? got.problems.join('; ') : got.newKeys === 0 ? 'not rotated' : 'rotation incomplete'}`,
      );
    } else if (got.newKeys > 0 || got.removed) {
      extra += 1;
      details.push(
        `${got.label}: rotated or touched, the expected run left it (${got.problems.join('; ') || `${got.newKeys} new key(s), old key ${got.removed ? 'removed' : 'kept'}`})`,
      );
    }
  }
  return { expected: expectedRotations, done, duplicated, missing, extra, details };
}

/**
 * Project settings, item by item: an item the design changes counts in `expected`, and is `done` when the forge holds
 * what the expected run left; an item the design leaves alone (or does not know) must not change (`extra`). A write
 * the forge carried out beyond the expected run's counts as `duplicated`, except one per write whose answer the daemon
 * did not get (it cannot know that the forge acted, and setting the same value again changes nothing).
 */
function compareSettings(expected: Outcome, actual: Outcome, options: CompareOptions): Counts {
  const before = new Map(SETTINGS_ITEMS.map(({ item, before: value }) => [item, value]));
  const details: string[] = [];
  let drifts = 0;
  let done = 0;
  let missing = 0;
  let extra = 0;
  for (const item of [...new Set([...expected.settings.keys(), ...actual.settings.keys()])].sort()) {
    const want = expected.settings.get(item) ?? 'absent';
    const got = actual.settings.get(item) ?? 'absent';
    const was = before.get(item) ?? 'absent';
    if (was !== want) {
      drifts += 1;
      if (got === want) done += 1;
      else {
        missing += 1;
        details.push(`${item}: expected ${want}, forge holds ${got}`);
      }
    } else if (got !== want) {
      extra += 1;
      details.push(`${item}: changed although the expected run left it as ${want}; forge holds ${got}`);
    }
  }
  let duplicated = 0;
  for (const [item, writes] of [...actual.settingsWrites].sort((a, b) => a[0].localeCompare(b[0]))) {
    const secretAgain = options.redisBackEmpty === true && item.includes(' integration ') ? 1 : 0;
    const allowed = (expected.settingsWrites.get(item)?.carried ?? 0) + writes.unanswered + secretAgain;
    if (writes.carried <= allowed) continue;
    duplicated += writes.carried - allowed;
    details.push(
      `${item}: the forge carried out ${writes.carried} write(s), ${allowed} expected (${writes.unanswered} unanswered)`,
    );
  }
  return { expected: drifts, done, duplicated, missing, extra, details };
}

/**
 * Token families: `done` when rotated soundly (the old token revoked or gone, one new active token, its value in the
 * delivery variable). `duplicated`: new tokens beyond one that no lost answer explains, and every family revocation
 * (reuse detection fires on a stale token rotated or used: a rotation done twice). `extra`: a family touched that the
 * expected run left, and each token value found in a daemon's log.
 */
function compareTokens(expected: Outcome, actual: Outcome): Counts {
  const details: string[] = [];
  let expectedRotations = 0;
  let done = 0;
  let missing = 0;
  let extra = 0;
  let duplicated = 0;
  for (const [key, want] of expected.tokens) {
    const got = actual.tokens.get(key);
    if (!got) continue;
    if (want.rotated) expectedRotations += 1;
    if (got.surplus > 0) {
      duplicated += got.surplus;
      details.push(`${got.label}: ${got.surplus} new token(s) beyond one that no lost answer explains`);
    }
    if (want.rotated && got.rotated) done += 1;
    else if (want.rotated) {
      missing += 1;
      details.push(`${got.label}: ${got.problems.join('; ') || 'not rotated'}`);
    } else if (got.touched) {
      extra += 1;
      details.push(
        `${got.label}: rotated or revoked, the expected run left it (${got.problems.join('; ') || 'rotated'})`,
      );
    }
  }
  duplicated += actual.familyRevocations.length;
  extra += actual.tokenLeaks.length;
  return {
    expected: expectedRotations,
    done,
    duplicated,
    missing,
    extra,
    details: [...details, ...actual.familyRevocations, ...actual.tokenLeaks],
  };
}

function sorted(values: Set<number>): number[] {
  return [...values].sort((a, b) => a - b);
}

function abbreviate(items: string[]): string {
  return items.length <= 6 ? items.join(', ') : `${items.slice(0, 6).join(', ')}, … (${items.length - 6} more)`;
}
