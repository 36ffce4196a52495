import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import type { Manifest } from '../../src/policies/group-backup/group-backup.files';
import { type RunningSandbox, startSandbox } from '../../src/sandbox';
import { childEnv, runCli, startCli, waitUntil, writeTempFile } from '../support/cli';
import { nightlyBackupPolicy, speedUpExports } from '../support/group-backup';
import { acmeGroup, ADMIN_TOKEN, aProject, baseWorld } from '../support/world-builders';
import { dropKeys } from '../support/redis-server';

/**
 * A backup set killed with SIGKILL in the middle of its projects, as a node losing power would be: the built command
 * against a forge whose archives are large and whose downloads are slow, so the kill lands while bytes are arriving,
 * with some projects in place and others not.
 */

const PADDING_BYTES = 1_000_000;
const BYTES_PER_SECOND = 500_000;
const PROJECTS = ['api', 'web', 'platform/auth', 'platform/billing', 'platform/edge/cdn'];

describe('group_backup: a set killed mid-way', () => {
  let sandbox: RunningSandbox;
  let destination: string;
  let file: string;
  const prefix = `e2e-backup-crash-${process.pid}`;
  const env = () => childEnv({ GITLAB_URL: sandbox.url, GITLAB_TOKEN: ADMIN_TOKEN, REDIS_URL: process.env.REDIS_URL });
  const folder = () => join(destination, 'acme');
  const sets = () =>
    existsSync(folder()) ? readdirSync(folder()).filter((name) => /^\d{4}-\d\d-\d\dT\d{6}Z$/.test(name)) : [];
  /** Every file under the set's folder, relative to it. */
  const filesOfSet = (): string[] => {
    const [set] = sets();
    if (!set) return [];
    const walk = (relative: string): string[] =>
      readdirSync(join(folder(), set, relative), { withFileTypes: true }).flatMap((entry) =>
        entry.isDirectory() ? walk(join(relative, entry.name)) : [join(relative, entry.name)],
      );
    return walk('').sort();
  };
  const finals = () => filesOfSet().filter((name) => !name.split('/').some((part) => part.startsWith('.')));

  beforeAll(async () => {
    sandbox = await startSandbox({
      world: {
        ...baseWorld({
          groups: [
            acmeGroup({ description: 'kept across a crash' }),
            { id: 11, path: 'platform', parent: 'acme' },
            { id: 12, path: 'edge', parent: 'acme/platform' },
          ],
          projects: PROJECTS.map((path, index) => {
            const segments = path.split('/');
            return {
              ...aProject(segments.at(-1) ?? path, { id: index + 1, name: `Project ${path}` }),
              namespace: ['acme', ...segments.slice(0, -1)].join('/'),
            };
          }),
        }),
        now: undefined,
      },
    });
    await speedUpExports(sandbox.url, {
      export_padding_bytes: PADDING_BYTES,
      download_bytes_per_second: BYTES_PER_SECOND,
    });
    destination = mkdtempSync(join(tmpdir(), 'forgewarden-backup-crash-'));
    file = writeTempFile(
      'backup.yml',
      [
        'version: 1',
        // A short timeout: after the kill, the backup's claim is taken over once its lease and one timeout have passed.
        'gitlab: { url: "${GITLAB_URL}", token: "${GITLAB_TOKEN}", max_requests_per_minute: 6000, timeout: 2s }',
        `redis: { url: "\${REDIS_URL}", prefix: ${prefix} }`,
        'dry_run: false',
        'policies:',
        ...nightlyBackupPolicy(destination),
      ].join('\n'),
    );
  });

  afterAll(async () => {
    await sandbox?.close();
    rmSync(destination, { recursive: true, force: true });
    await dropKeys(prefix);
  });

  it('leaves no file under a final name half written, and the next run carries the same set on without exporting any project twice', async () => {
    const first = startCli(['once', '-c', file], env());
    // Killed once some project's archive is in place and another's download has begun.
    const projectArchives = () => finals().filter((name) => name.startsWith('projects/'));
    const partialBytes = (): number => {
      const partial = filesOfSet().find((name) => name.startsWith('projects/') && name.endsWith('.partial'));
      return partial ? statSync(join(folder(), sets()[0] ?? '', partial)).size : 0;
    };
    await waitUntil(
      'a project is in place and another is downloading',
      () => projectArchives().length >= 1 && partialBytes() > 50_000,
      60_000,
    );
    const killed = await first.stop('SIGKILL');
    expect(killed.signal).toBe('SIGKILL');

    // Cut off mid-way: one set folder, no set.json, no manifest; every archive under a final name is whole.
    expect(sets()).toHaveLength(1);
    const inPlace = finals();
    expect(inPlace).not.toContain('set.json');
    expect(inPlace.filter((name) => name.startsWith('projects/')).length).toBeLessThan(PROJECTS.length);
    expect(existsSync(join(folder(), 'manifest.json'))).toBe(false);
    const before = new Map(inPlace.map((name) => [name, readFileSync(join(folder(), sets()[0] ?? '', name))]));

    // The killed run's claim on the backup runs out within its lease; until then a run says it cannot act yet.
    const runs: { code: number | null; stdout: string; stderr: string }[] = [];
    await waitUntil(
      'a later run finishes the set',
      async () => {
        const run = await runCli(['once', '-c', file], env(), 90_000);
        runs.push(run);
        return existsSync(join(folder(), 'manifest.json'));
      },
      120_000,
    );
    expect(runs.at(-1)?.code).toBe(0);
    for (const run of runs.slice(0, -1))
      expect(run.stdout).toMatch(/^(in_progress|uncertain) +backup +group acme +carry on the backup begun at /m);

    const manifest = JSON.parse(readFileSync(join(folder(), 'manifest.json'), 'utf8')) as Manifest;
    expect(manifest.sets).toHaveLength(1);
    const [set] = manifest.sets;
    expect(set?.set).toBe(sets()[0]);
    expect(set?.state).toBe('complete');
    expect(set?.projects.map((project) => project.path)).toEqual([...PROJECTS].sort());
    for (const entry of [set.group_archive, ...set.projects]) {
      const bytes = readFileSync(join(folder(), set.set, entry.file));
      expect(bytes.length).toBeGreaterThan(PADDING_BYTES);
      expect(entry).toMatchObject({ bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') });
    }
    // What was in place before the kill is what the set holds: carried on, not downloaded again.
    for (const [name, bytes] of before) expect(readFileSync(join(folder(), set.set, name)).equals(bytes)).toBe(true);
    // Each export asked for once: the group's, and every project's, across the kill.
    const posts = sandbox.state.requestLog
      .filter((request) => request.method === 'POST' && request.path.endsWith('/export'))
      .map((request) => request.path);
    expect(posts.sort()).toEqual(
      ['/api/v4/groups/10/export', ...PROJECTS.map((_path, index) => `/api/v4/projects/${index + 1}/export`)].sort(),
    );
    expect(sandbox.state.requestLog.filter((request) => request.status === 429)).toEqual([]);
    expect(filesOfSet().filter((name) => name.includes('.partial'))).toEqual([]);
    const redis = new Redis(process.env.REDIS_URL!);
    try {
      expect(await redis.keys(`${prefix}:state:nightly:*`)).toEqual([]);
    } finally {
      await redis.quit();
    }
  }, 200_000);
});
