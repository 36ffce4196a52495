import { aPolicy } from '../../../test/support/builders/access-requests';
import { APPROVE, DENY } from './access-requests.decide';
import { accessRequestsRunner } from './access-requests.runner';
import { accessRequestsPolicy } from './access-requests.schema';

describe('access_requests runner', () => {
  it('runs every interval, with the schema and limit of the policy', () => {
    const config = aPolicy({ interval: '10m', max_actions_per_run: 7 });
    expect(accessRequestsRunner.definition).toBe(accessRequestsPolicy);
    expect(accessRequestsRunner.trigger(config)).toEqual({ every: 600_000 });
    expect(accessRequestsRunner.limits(config).actionsPerPass).toBe(7);
    expect(accessRequestsRunner.limits(aPolicy()).actionsPerPass).toBe(100);
    expect(Object.keys(accessRequestsRunner.actions).sort()).toEqual([APPROVE, DENY]);
  });
});
