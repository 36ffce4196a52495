import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { GitlabClient } from '../../src/gitlab';
import { apiRouter } from '../../src/sandbox/api';

/** An endpoint from GitLab's public API docs (beyond the API specification), with the client method that calls it. */
export interface DocumentedEndpoint {
  readonly method: string;
  readonly path: string;
  /** `resource.method` on the client. */
  readonly client: string;
}

/**
 * Tests that each endpoint has its client method and its sandbox route, and that docs/api-client.md shows exactly
 * this table.
 */
export function describeDocumentedEndpoints(title: string, endpoints: readonly DocumentedEndpoint[]): void {
  describe(title, () => {
    const client = new GitlabClient({ url: 'http://127.0.0.1:9', token: 'endpoint-table-test' });
    const router = apiRouter();

    afterAll(async () => {
      await client.close();
    });

    it.each(endpoints.map((entry) => [`${entry.method} ${entry.path}`, entry] as const))(
      '%s has a client method and a sandbox route',
      (_name, entry) => {
        const [resource, method] = entry.client.split('.') as [string, string];
        const target = (client as unknown as Record<string, Record<string, unknown> | undefined>)[resource];
        expect(typeof target?.[method]).toBe('function');
        expect(router.match(entry.method, entry.path.replace(/:\w+/g, '1')).kind).toBe('found');
      },
    );

    it('is the table docs/api-client.md shows', () => {
      const rows = endpoints.map((entry) => `| ${entry.method} | \`${entry.path}\` | \`client.${entry.client}\` |`);
      const table = ['| method | path | client method |', '|---|---|---|', ...rows].join('\n');
      expect(readFileSync(resolve(__dirname, '../../docs/api-client.md'), 'utf8')).toContain(table);
    });
  });
}

/**
 * The first python that can import python-gitlab, found as `npm run bench` finds it: $PYTHON when set (and then only
 * it), else python3 on PATH, then the system's (where Debian's python3-gitlab installs).
 */
export function findPythonGitlab(): { command: string; version: string } | undefined {
  const candidates = process.env.PYTHON ? [process.env.PYTHON] : ['python3', '/usr/bin/python3'];
  for (const command of candidates) {
    const probe = spawnSync(command, ['-c', 'import gitlab; print(gitlab.__version__)'], { encoding: 'utf8' });
    if (probe.status === 0) return { command, version: probe.stdout.trim() };
  }
  return undefined;
}
