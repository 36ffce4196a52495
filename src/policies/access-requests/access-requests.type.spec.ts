import { aPolicy } from '../../../test/support/builders/access-requests';
import { APPROVE, DENY } from './access-requests.decide';
import { accessRequestsType } from './access-requests.type';
import { accessRequestsPolicy } from './access-requests.schema';

describe('access_requests policy type', () => {
  it('runs every interval, with the schema and limit of the policy', () => {
    const config = aPolicy({ interval: '10m', max_actions_per_run: 7 });
    expect(accessRequestsType.definition).toBe(accessRequestsPolicy);
    expect(accessRequestsType.trigger(config)).toEqual({ every: 600_000 });
    expect(accessRequestsType.limits(config).actionsPerPass).toBe(7);
    expect(accessRequestsType.limits(aPolicy()).actionsPerPass).toBe(100);
    expect(Object.keys(accessRequestsType.actions).sort()).toEqual([APPROVE, DENY]);
  });
});
