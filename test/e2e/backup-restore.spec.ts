import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Manifest } from '../../src/policies/group-backup/group-backup.files';
import { type RunningSandbox, startSandbox } from '../../src/sandbox';
import type { ProjectRecord } from '../../src/sandbox/state';
import { asImportedContents, projectContents, setWorld } from '../support/backup-set';
import { childEnv, runCli, writeTempFile } from '../support/cli';
import { speedUpExports } from '../support/group-backup';
import { ADMIN_TOKEN } from '../support/world-builders';
import { dropKeys } from '../support/redis-server';

/**
 * What docs/policies.md promises of a backup set: group_backup's own set of a group tree (three levels, five
 * projects, one of them archived), taken by the built command, then restored by the built command under a new path,
 * every project in its place with what its archive carries.
 */

describe('a backup set taken by group_backup and restored by restore', () => {
  let sandbox: RunningSandbox;
  let destination: string;
  let file: string;
  const prefix = `e2e-backup-restore-${process.pid}`;
  const env = () => childEnv({ GITLAB_URL: sandbox.url, GITLAB_TOKEN: ADMIN_TOKEN, REDIS_URL: process.env.REDIS_URL });
  const project = (fullPath: string): ProjectRecord => {
    const found = sandbox.state.project(fullPath);
    if (!found) throw new Error(`no project ${fullPath} on the forge`);
    return found;
  };

  beforeAll(async () => {
    sandbox = await startSandbox({ world: setWorld() });
    await speedUpExports(sandbox.url);
    destination = mkdtempSync(join(tmpdir(), 'forgewarden-backup-restore-'));
    file = writeTempFile(
      'backup-restore.yml',
      [
        'version: 1',
        'gitlab: { url: "${GITLAB_URL}", token: "${GITLAB_TOKEN}", max_requests_per_minute: 6000 }',
        `redis: { url: "\${REDIS_URL}", prefix: ${prefix} }`,
        'dry_run: false',
        'policies:',
        '  - name: nightly',
        '    type: group_backup',
        '    groups: [acme]',
        '    schedule: "0 2 * * *"',
        `    destination: ${JSON.stringify(destination)}`,
        '    include_archived: true',
        '    keep: { daily: 7 }',
        '    download_interval: 1s',
      ].join('\n'),
    );
  });

  afterAll(async () => {
    await sandbox?.close();
    rmSync(destination, { recursive: true, force: true });
    await dropKeys(prefix);
  });

  it('backs up the tree as one complete set and restores it into a new path with every project in place and its contents', async () => {
    const backup = await runCli(['once', '-c', file], env(), 60_000);
    expect(backup.code).toBe(0);
    const manifest = JSON.parse(readFileSync(join(destination, 'acme', 'manifest.json'), 'utf8')) as Manifest;
    expect(manifest.sets).toHaveLength(1);
    const [set] = manifest.sets;
    expect(set).toMatchObject({ state: 'complete', missing: [] });
    const paths = ['api', 'platform/billing', 'platform/console', 'platform/edge/gateway', 'web'];
    expect(set?.projects.map((entry) => entry.path)).toEqual(paths);
    expect(readdirSync(join(destination, 'acme', set.set)).sort()).toEqual(['group.tar.gz', 'projects', 'set.json']);

    const folder = join(destination, 'acme', set.set);
    const restored = await runCli(
      ['restore', '-c', file, '--from', folder, '--group', 'acme-restored', '--wait', '10'],
      env(),
      60_000,
    );
    expect(restored.stderr.split('\n').filter((line) => line !== '' && !line.startsWith('{'))).toEqual([]);
    expect(restored.code).toBe(0);
    expect(restored.stdout).toMatch(/\n5 of 5 projects restored\n$/);

    // The tree: the group and its subgroups under the new path, every project in its place, as its archive carries it.
    for (const group of ['acme-restored', 'acme-restored/platform', 'acme-restored/platform/edge'])
      expect(sandbox.state.group(group)).toBeDefined();
    for (const path of paths)
      expect(projectContents(sandbox.state, project(`acme-restored/${path}`))).toEqual(
        asImportedContents(sandbox.state, project(`acme/${path}`)),
      );
    expect(projectContents(sandbox.state, project('acme-restored/api')).attributes).toMatchObject({
      name: 'API',
      description: 'The public API',
    });
    expect(projectContents(sandbox.state, project('acme-restored/platform/console')).attributes).toMatchObject({
      archived: true,
    });
    expect(sandbox.state.requestLog.filter((request) => request.status === 429)).toEqual([]);
  }, 150_000);
});
