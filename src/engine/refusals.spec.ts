import { ForbiddenError } from '../gitlab';
import type { Decision, UnsettledTarget } from './policy';
import { fingerprintOf, park, parkedDecisions, parkedKey } from './refusals';

const NOW = new Date('2025-06-02T12:00:00Z');
const refused: Decision = {
  action: 'protect',
  target: 'acme/api main',
  key: '42:main:protect:1',
  reason: 'not protected',
  params: { project: 42, name: 'main' },
};

function anOpenTarget(decision: Decision, outcome: string, refusal = outcome === 'refused'): UnsettledTarget {
  const error = new ForbiddenError({
    status: 403,
    method: 'POST',
    path: 'projects/42/protected_branches',
    body: { message: '403 Forbidden' },
    message: '403 Forbidden',
  });
  return {
    key: decision.key,
    action: decision.action,
    target: decision.target,
    params: decision.params,
    outcome,
    since: NOW.toISOString(),
    ...(refusal ? { refusal: park(decision, error, undefined, NOW) } : {}),
  };
}

describe('parked decisions', () => {
  it('are the refused open targets, not those that failed or wait', () => {
    const failed = { ...refused, key: '42:main:protect:2' };
    const deferred = { ...refused, key: '42:main:protect:3' };
    const unsettled = [
      anOpenTarget(refused, 'refused'),
      anOpenTarget(failed, 'failed'),
      anOpenTarget(deferred, 'deferred'),
    ];
    expect(parkedDecisions(unsettled)).toEqual([{ key: refused.key, action: refused.action, params: refused.params }]);
  });

  it('lend their key to the same decision only, among the keys the policy calls its own', () => {
    const parked = parkedDecisions([anOpenTarget(refused, 'refused')]);
    const mine = (key: string) => key.startsWith('42:main:protect:');
    expect(parkedKey(parked, { action: 'protect', params: { project: 42, name: 'main' } }, mine)).toBe(refused.key);
    // Other params or another action are another decision: the executor would send it at once.
    expect(parkedKey(parked, { action: 'protect', params: { project: 42, name: 'stable' } }, mine)).toBeUndefined();
    expect(parkedKey(parked, { action: 'reprotect', params: refused.params }, mine)).toBeUndefined();
    expect(parkedKey(parked, refused, (key) => key.startsWith('43:'))).toBeUndefined();
    // The same judgement as the executor's: what it compares with the refusal's fingerprint.
    expect(fingerprintOf({ action: 'protect', params: { project: 42, name: 'main' } })).toBe(
      anOpenTarget(refused, 'refused').refusal?.fingerprint,
    );
  });
});
