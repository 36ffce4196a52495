import { KnownPolicies } from '../engine/known-policies';
import { accessRequestsPolicy } from './access-requests/access-requests.schema';
import { groupBackupPolicy } from './group-backup/group-backup.schema';
import { jobRetryPolicy } from './job-retry/job-retry.schema';
import { keyRotationPolicy } from './key-rotation/key-rotation.schema';
import { projectSettingsPolicy } from './project-settings/project-settings.schema';
import { registryCleanupPolicy } from './registry-cleanup/registry-cleanup.schema';
import { POLICIES, POLICY_TYPES, policyType } from '.';

describe('the list of policy types', () => {
  it('validates the policy file against the definitions of the runners the engine runs', () => {
    expect(POLICY_TYPES).toEqual([
      jobRetryPolicy,
      registryCleanupPolicy,
      accessRequestsPolicy,
      keyRotationPolicy,
      projectSettingsPolicy,
      groupBackupPolicy,
    ]);
    expect(POLICY_TYPES).toEqual(POLICIES.map((runner) => runner.definition));
  });

  it('gives the engine each runner once, by its type', () => {
    const registry = new KnownPolicies(POLICIES);
    for (const runner of POLICIES) {
      expect(registry.get(runner.definition.type)).toBe(runner);
      expect(policyType(runner.definition.type)).toBe(runner);
    }
    expect(() => new KnownPolicies([...POLICIES, ...POLICIES.slice(0, 1)])).toThrow(
      'policy type "job_retry" is registered twice',
    );
    expect(policyType('nope')).toBeUndefined();
  });
});
