import { Re2Pattern } from '../config/re2';
import { parseWorld } from '../sandbox/world';
import { differenceLines, judge } from './judge';
import type { DecidedPass } from './runner';
import type { PolicyTest } from './test-file';

const pass: DecidedPass = {
  decisions: [
    { action: 'retry', target: 'job 1', key: '1', reason: 'retry 1 of 2', params: {} },
    { action: 'retry', target: 'job 2', key: '2', reason: 'retry 1 of 2', params: {} },
    { action: 'skip', target: 'job 3', key: '3', reason: 'skip: log did not match', params: {} },
  ],
  outcomes: ['would_act', 'deferred', 'skipped'],
  unobserved: [{ target: 'project acme/gone', reason: 'GET projects/acme%2Fgone/jobs → 404: 404 Project Not Found' }],
  warnings: [],
};

function test(expect: Partial<PolicyTest['expect']>): PolicyTest {
  return {
    name: 't',
    at: 'f:1',
    line: 1,
    policy: 'p',
    world: parseWorld({}),
    worldFile: 'inline',
    now: '2025-06-02T12:00:00.000Z',
    occasion: 'command',
    as: 'bot',
    expect: { decisions: [], noOtherActions: false, notRead: ['project acme/gone'], ...expect },
  };
}

describe('judge', () => {
  it('passes when every expected decision is there, by exact reason or pattern, skips never unexpected', () => {
    const pattern = Re2Pattern.compile('^retry \\d of 2$') as Re2Pattern;
    expect(
      judge(
        test({
          decisions: [
            { action: 'retry', target: 'job 1', reason: 'retry 1 of 2', outcome: 'would_act' },
            { action: 'retry', target: 'job 2', reason_matches: pattern },
          ],
          noOtherActions: true,
        }),
        pass,
      ),
    ).toEqual([]);
  });

  it('says an outcome over max_actions_per_run, a target the pass could not read, and one it read after all', () => {
    const differences = judge(
      test({ decisions: [{ action: 'retry', target: 'job 2', outcome: 'would_act' }], notRead: ['project acme/api'] }),
      pass,
    );
    expect(differences.flatMap(differenceLines)).toEqual([
      'different outcome for retry job 2: expected would_act, a dry pass records deferred',
      'not read:   project acme/gone: GET projects/acme%2Fgone/jobs → 404: 404 Project Not Found (list it under expect.not_read if the world leaves it out on purpose)',
      'read:       project acme/api, which expect.not_read says the pass cannot read',
    ]);
  });
});
