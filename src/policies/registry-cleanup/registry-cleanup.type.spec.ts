import { aCleanupConfig } from '../../../test/support/builders/registry';
import { BULK_DELETE, DELETE_REPOSITORY, DELETE_TAG } from './registry-cleanup.decide';
import { registryCleanupType } from './registry-cleanup.type';
import { registryCleanupPolicy } from './registry-cleanup.schema';

describe('registry_cleanup policy type', () => {
  it('runs on its cron schedule, in its time zone, with the schema and limit of the policy', () => {
    const config = aCleanupConfig({ schedule: '30 2 * * *', timezone: 'Europe/Berlin', max_actions_per_run: 7 });
    expect(registryCleanupType.definition).toBe(registryCleanupPolicy);
    expect(registryCleanupType.trigger(config)).toEqual({ cron: '30 2 * * *', timezone: 'Europe/Berlin' });
    expect(registryCleanupType.trigger(aCleanupConfig())).toEqual({ cron: '0 3 * * *' });
    expect(registryCleanupType.limits(config).actionsPerPass).toBe(7);
    expect(Object.keys(registryCleanupType.actions).sort()).toEqual(
      [BULK_DELETE, DELETE_REPOSITORY, DELETE_TAG].sort(),
    );
  });
});
