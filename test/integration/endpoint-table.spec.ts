import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { GitlabClient } from '../../src/gitlab';
import { ENDPOINTS, renderEndpointTable } from '../support/endpoints';
import { INTEGRATION_SLUGS } from '../../src/gitlab/types/integrations';
import { apiRouter } from '../../src/sandbox/api';

/** Concrete paths for an entry: every parameter becomes `1`; a `<slug>` entry stands for every service slug. */
function samplePaths(path: string): string[] {
  const concrete = path.replace(/:\w+/g, '1');
  return concrete.includes('<slug>') ? INTEGRATION_SLUGS.map((slug) => concrete.replace('<slug>', slug)) : [concrete];
}

describe('the endpoint table', () => {
  const client = new GitlabClient({ url: 'http://127.0.0.1:9', token: 'endpoint-table-test' });
  const router = apiRouter();

  afterAll(async () => {
    await client.close();
  });

  it('lists each endpoint once', () => {
    const keys = ENDPOINTS.map((entry) => `${entry.method} ${entry.path}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(ENDPOINTS.length).toBeGreaterThanOrEqual(100);
  });

  it.each(ENDPOINTS.map((entry) => [`${entry.method} ${entry.path}`, entry] as const))(
    '%s has a client method',
    (_name, entry) => {
      const [resource, method] = entry.client.split('.') as [string, string];
      const target = (client as unknown as Record<string, Record<string, unknown> | undefined>)[resource];
      expect(typeof target?.[method]).toBe('function');
    },
  );

  it.each(ENDPOINTS.map((entry) => [`${entry.method} ${entry.path}`, entry] as const))(
    '%s has a sandbox route',
    (_name, entry) => {
      for (const path of samplePaths(entry.path))
        expect([path, router.match(entry.method, path).kind]).toEqual([path, 'found']);
    },
  );

  // The README links to docs/api-client.md, which carries the reference.
  const apiClientDoc = () => readFileSync(resolve(__dirname, '../../docs/api-client.md'), 'utf8');

  it('is the table docs/api-client.md shows', () => {
    expect(apiClientDoc()).toContain(renderEndpointTable());
  });

  it('names every integration slug in docs/api-client.md', () => {
    const doc = apiClientDoc();
    expect(INTEGRATION_SLUGS.filter((slug) => !doc.includes(`\`${slug}\``))).toEqual([]);
  });
});
