import { SKIP } from '../engine/decision';
import type { DecidedPass } from './runner';
import type { ExpectedDecision, PolicyTest } from './test-file';

/**
 * Pure: what a test expected against what its pass decided, as the lines of a readable diff. Expected decisions are
 * matched to decided ones by action and target, in order; a decision on the same target with another action is a
 * different action rather than one missing and one unexpected.
 */

export type Difference =
  | { readonly kind: 'missing'; readonly expected: ExpectedDecision }
  | { readonly kind: 'unexpected'; readonly action: string; readonly target: string; readonly reason: string }
  | {
      readonly kind: 'different_action';
      readonly expected: ExpectedDecision;
      readonly action: string;
      readonly reason: string;
    }
  | { readonly kind: 'different_reason'; readonly expected: ExpectedDecision; readonly reason: string }
  | { readonly kind: 'different_outcome'; readonly expected: ExpectedDecision; readonly outcome: string }
  | { readonly kind: 'not_read'; readonly target: string; readonly reason: string }
  | { readonly kind: 'read'; readonly target: string }
  | { readonly kind: 'failed'; readonly error: string };

export function judge(test: PolicyTest, pass: DecidedPass): Difference[] {
  if (pass.error !== undefined) return [{ kind: 'failed', error: pass.error }];
  const differences: Difference[] = [];
  const used = new Set<number>();
  const find = (match: (index: number) => boolean): number =>
    pass.decisions.findIndex((_, index) => !used.has(index) && match(index));
  for (const expected of test.expect.decisions) {
    let index = find(
      (i) => pass.decisions[i].action === expected.action && pass.decisions[i].target === expected.target,
    );
    if (index < 0) {
      index = find((i) => pass.decisions[i].target === expected.target);
      if (index < 0) {
        differences.push({ kind: 'missing', expected });
      } else {
        used.add(index);
        differences.push({
          kind: 'different_action',
          expected,
          action: pass.decisions[index].action,
          reason: pass.decisions[index].reason,
        });
      }
      continue;
    }
    used.add(index);
    const decided = pass.decisions[index];
    if (expected.outcome !== undefined && pass.outcomes[index] !== expected.outcome)
      differences.push({ kind: 'different_outcome', expected, outcome: pass.outcomes[index] });
    const reasonMatches =
      expected.reason !== undefined
        ? decided.reason === expected.reason
        : expected.reason_matches === undefined || expected.reason_matches.test(decided.reason);
    if (!reasonMatches) differences.push({ kind: 'different_reason', expected, reason: decided.reason });
  }
  if (test.expect.noOtherActions) {
    pass.decisions.forEach((decision, index) => {
      if (!used.has(index) && decision.action !== SKIP)
        differences.push({
          kind: 'unexpected',
          action: decision.action,
          target: decision.target,
          reason: decision.reason,
        });
    });
  }
  const allowed = new Set(test.expect.notRead);
  for (const target of pass.unobserved)
    if (!allowed.has(target.target))
      differences.push({ kind: 'not_read', target: target.target, reason: target.reason });
  const unread = new Set(pass.unobserved.map((target) => target.target));
  for (const target of test.expect.notRead) if (!unread.has(target)) differences.push({ kind: 'read', target });
  return differences;
}

/** Each difference as lines a person reads under the failed test. */
export function differenceLines(difference: Difference): string[] {
  switch (difference.kind) {
    case 'missing':
      return [
        `missing:    ${difference.expected.action} ${difference.expected.target}${expectedReason(difference.expected)}`,
      ];
    case 'unexpected':
      return [`unexpected: ${difference.action} ${difference.target} (${difference.reason})`];
    case 'different_action':
      return [
        `different action for ${difference.expected.target}: expected ${difference.expected.action}, decided ${difference.action} (${difference.reason})`,
      ];
    case 'different_reason':
      return [
        `different reason for ${difference.expected.action} ${difference.expected.target}:`,
        difference.expected.reason !== undefined
          ? `  expected: ${difference.expected.reason}`
          : `  expected to match: ${String(difference.expected.reason_matches)}`,
        `  decided:  ${difference.reason}`,
      ];
    case 'different_outcome':
      return [
        `different outcome for ${difference.expected.action} ${difference.expected.target}: expected ${difference.expected.outcome ?? ''}, a dry pass records ${difference.outcome}`,
      ];
    case 'not_read':
      return [
        `not read:   ${difference.target}: ${difference.reason} (list it under expect.not_read if the world leaves it out on purpose)`,
      ];
    case 'read':
      return [`read:       ${difference.target}, which expect.not_read says the pass cannot read`];
    case 'failed':
      return [`the pass failed: ${difference.error}`];
  }
}

function expectedReason(expected: ExpectedDecision): string {
  if (expected.reason !== undefined) return ` (${expected.reason})`;
  return expected.reason_matches !== undefined ? ` (reason matching ${String(expected.reason_matches)})` : '';
}
