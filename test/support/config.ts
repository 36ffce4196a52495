import type { AppConfig } from '../../src/config/schema';
import { parseConfig } from '../../src/config/load';
import { POLICY_TYPES } from '../../src/policies';

/** A validated configuration for in-process tests, on the test Redis with a key prefix of its own. */
export function testConfig(overrides: {
  prefix: string;
  redisUrl?: string;
  httpPort?: number;
  shutdownTimeout?: string;
}): AppConfig {
  const text = [
    'version: 1',
    'gitlab: { url: "https://gitlab.example.com", token: "glpat-integration-000000" }',
    `redis: { url: "${overrides.redisUrl ?? process.env.REDIS_URL}", prefix: "${overrides.prefix}", connect_timeout: 2s }`,
    `http: { port: ${overrides.httpPort ?? 0} }`,
    `shutdown_timeout: ${overrides.shutdownTimeout ?? '30s'}`,
  ].join('\n');
  return parseConfig(text, 'test.yml', { policyTypes: POLICY_TYPES, env: {} });
}
