import { EngineService } from '../../src/engine/engine.service';
import { POLICY_TYPES } from '../../src/policies';
import type { World } from '../../src/sandbox';
import { useEngineHarness } from '../support/engine-harness';
import { acmeGroup, baseWorld, type ProjectInput } from '../support/world-builders';

/** A project with one repository `app` (id `id * 10`) holding one tag. */
function withRepository(path: string, namespace: string, id: number): ProjectInput {
  return {
    id,
    path,
    namespace,
    registry: [{ id: id * 10, name: 'app', tags: [{ name: 'build-1', created_at: 'now-30d' }] }],
  };
}

function world(): World {
  return {
    ...baseWorld({
      groups: [acmeGroup(), { id: 11, path: 'platform', parent: 'acme' }],
      projects: [
        withRepository('api', 'acme', 1),
        withRepository('web', 'acme/platform', 2),
        withRepository('legacy', 'acme/platform', 3),
      ],
    }),
    now: undefined,
  };
}

describe('registry_cleanup over project globs, against the sandbox with a real Redis', () => {
  const harness = useEngineHarness({ name: 'registry-globs', world, policyTypes: POLICY_TYPES });

  it('cleans the repositories of exactly the projects the globs select', async () => {
    const engineApp = await harness.app({
      gitlab: 'max_requests_per_minute: 10000',
      policies: [
        '  - name: cleanup',
        '    type: registry_cleanup',
        '    schedule: "0 3 * * *"',
        '    projects: ["acme/**", "!acme/platform/legacy"]',
        '    name_regex_delete: ".*"',
      ],
    });
    const pass = await engineApp.get(EngineService).runPass('cleanup', 'plan');
    expect(pass.error).toBeUndefined();
    expect(pass.decisions.map((decision) => decision.target).sort()).toEqual([
      'acme/api/app (repository 10)',
      'acme/platform/web/app (repository 20)',
    ]);
    expect(pass.covered).toEqual(['acme/api', 'acme/platform/web']);
    const registryReads = harness.sandbox.state.requestLog
      .filter((entry) => /\/registry\/repositories$/.test(entry.path))
      .map((entry) => entry.path);
    expect(registryReads.sort()).toEqual([
      '/api/v4/projects/acme%2Fapi/registry/repositories',
      '/api/v4/projects/acme%2Fplatform%2Fweb/registry/repositories',
    ]);
  });
});
