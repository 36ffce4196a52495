import { resolve } from 'node:path';
import { loadConfigFile } from '../../src/config/load';
import { POLICY_TYPES } from '../../src/policies';
import { childEnv, runCli } from '../support/cli';

/**
 * config/example.yml is what the README tells an operator to copy for a real forge: it must stay valid as the schema
 * changes, keep dry run on, and show every policy type.
 */
const EXAMPLE = resolve(__dirname, '../../config/example.yml');
const ENV = { GITLAB_URL: 'https://gitlab.example.com', GITLAB_TOKEN: 'glpat-example-0123456789' };

describe('config/example.yml', () => {
  it("passes the built command's validate with exit 0", async () => {
    const result = await runCli(['validate', '-c', EXAMPLE], childEnv(ENV));
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`${EXAMPLE}: valid, ${POLICY_TYPES.length} policies`);
  });

  it('runs dry and has one example of each policy type', () => {
    const config = loadConfigFile(EXAMPLE, { policyTypes: POLICY_TYPES, env: ENV });
    expect(config.dry_run).toBe(true);
    expect(config.policies.map((policy) => policy.type).sort()).toEqual(POLICY_TYPES.map((type) => type.type).sort());
    expect(config.policies.every((policy) => policy.dry_run === undefined)).toBe(true);
  });
});
