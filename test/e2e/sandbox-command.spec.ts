import { childEnv, runCli, startCli, startSandboxCommand, statusOf, waitUntil, writeTempFile } from '../support/cli';
import { freePort } from '../support/redis-server';

describe('forgewarden sandbox', () => {
  it('serves the demo world until SIGTERM', async () => {
    const port = await freePort();
    const sandbox = startCli(['sandbox', '--port', String(port)], childEnv());
    try {
      await waitUntil(
        'the sandbox answers',
        async () => (await statusOf(`http://127.0.0.1:${port}/api/v4/user`)) === 401,
      );
      const response = await fetch(`http://127.0.0.1:${port}/api/v4/projects/acme%2Fapi/jobs?scope[]=failed`, {
        headers: { 'PRIVATE-TOKEN': 'glpat-sandbox-admin-token' },
      });
      expect(response.status).toBe(200);
      const failed = (await response.json()) as Array<{ status: string }>;
      expect(failed.length).toBeGreaterThan(0);
      expect(new Set(failed.map((job) => job.status))).toEqual(new Set(['failed']));
      expect(sandbox.stdout).toContain(`sandbox forge on http://127.0.0.1:${port}/api/v4`);
    } finally {
      const result = await sandbox.stop('SIGTERM');
      expect(result.code).toBe(0);
    }
  });

  it('rejects a bad world file with exit 2, naming file, line and key', async () => {
    const world = writeTempFile('world.yml', ['users:', '  - username: a', '    emial: a@example.com', ''].join('\n'));
    const result = await runCli(['sandbox', '--port', '0', '--world', world]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      new RegExp(
        `^${world.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:3:5 users\\[0\\]\\.emial: unknown key "emial"; did you mean "email"\\?$`,
        'm',
      ),
    );
  });

  it('says in one line that its port is taken and how to choose another, with exit 2', async () => {
    const first = await startSandboxCommand();
    try {
      const port = new URL(first.url).port;
      const result = await runCli(['sandbox', '--port', port]);
      expect({ code: result.code, stdout: result.stdout, stderr: result.stderr }).toEqual({
        code: 2,
        stdout: '',
        stderr: `forgewarden sandbox: port ${port} on 127.0.0.1 is taken by another process; choose another with --port N (0 picks a free one)\n`,
      });
    } finally {
      await first.process.stop('SIGINT');
    }
  });

  it('rejects a port that is not one', async () => {
    const result = await runCli(['sandbox', '--port', 'eighty']);
    expect(result).toMatchObject({
      code: 2,
      stderr: 'forgewarden sandbox: --port must be a whole number from 0 to 65535 (got "eighty")\n',
    });
  });
});
