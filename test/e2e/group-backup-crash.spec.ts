import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import type { Manifest } from '../../src/policies/group-backup/group-backup.files';
import { type RunningSandbox, startSandbox } from '../../src/sandbox';
import { childEnv, runCli, startCli, waitUntil, writeTempFile } from '../support/cli';
import { nightlyBackupPolicy, speedUpExports } from '../support/group-backup';
import { acmeGroup, ADMIN_TOKEN, baseWorld } from '../support/world-builders';

/**
 * A backup killed with SIGKILL in the middle of its download, as a node losing power would be: the built command
 * against a forge whose archive is large and whose downloads are slow, so the kill lands while bytes are arriving.
 */

const PADDING_BYTES = 3_000_000;
const BYTES_PER_SECOND = 400_000;

describe('group_backup: a process killed mid-download', () => {
  let sandbox: RunningSandbox;
  let destination: string;
  let file: string;
  const prefix = `e2e-backup-crash-${process.pid}`;
  const env = () => childEnv({ GITLAB_URL: sandbox.url, GITLAB_TOKEN: ADMIN_TOKEN, REDIS_URL: process.env.REDIS_URL });
  const folder = () => join(destination, 'acme');
  const names = () => (existsSync(folder()) ? readdirSync(folder()) : []);

  beforeAll(async () => {
    sandbox = await startSandbox({ world: { ...baseWorld({ groups: [acmeGroup({ description: 'kept across a crash' })] }), now: undefined } });
    await speedUpExports(sandbox.url, { export_padding_bytes: PADDING_BYTES, download_bytes_per_second: BYTES_PER_SECOND });
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
    const redis = new Redis(process.env.REDIS_URL!);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('leaves no file under a final name, and the next run carries the same backup on to a verified archive', async () => {
    const first = startCli(['once', '-c', file], env());
    const partialBytes = (): number => {
      const partial = names().find((name) => name.endsWith('.partial'));
      return partial ? statSync(join(folder(), partial)).size : 0;
    };
    await waitUntil('the download has begun', () => partialBytes() > 100_000, 20_000);
    const killed = await first.stop('SIGKILL');
    expect(killed.signal).toBe('SIGKILL');

    // Cut off mid-way: a partial file well short of the archive, nothing under a final name, no manifest.
    expect(partialBytes()).toBeLessThan(PADDING_BYTES);
    expect(names().filter((name) => !name.startsWith('.'))).toEqual([]);

    // The killed run's claim on the backup runs out within its lease; until then a run says it cannot act yet.
    let finished = false;
    const runs: { code: number | null; stdout: string; stderr: string }[] = [];
    await waitUntil(
      'a later run finishes the backup',
      async () => {
        const run = await runCli(['once', '-c', file], env(), 60_000);
        runs.push(run);
        finished = names().some((name) => name.endsWith('.tar.gz'));
        return finished;
      },
      60_000,
    );
    expect(runs.at(-1)?.code).toBe(0);
    // Runs before that started no second download: the backup was in progress (the killed run's claim was live),
    // then uncertain for one timeout after the claim ran out.
    for (const run of runs.slice(0, -1)) expect(run.stdout).toMatch(/^(in_progress|uncertain) +backup +group acme +carry on the backup begun at /m);

    const manifest = JSON.parse(readFileSync(join(folder(), 'manifest.json'), 'utf8')) as Manifest;
    expect(manifest.archives).toHaveLength(1);
    const entry = manifest.archives[0];
    const bytes = readFileSync(join(folder(), entry.file));
    expect(bytes.length).toBeGreaterThan(PADDING_BYTES);
    expect(entry).toMatchObject({ bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') });
    // The same backup, carried on: the one export the first run asked for, downloaded again in full.
    const exports = sandbox.state.requestLog.filter((request) => request.method === 'POST' && request.path === '/api/v4/groups/10/export');
    expect(exports).toHaveLength(1);
    expect(names().filter((name) => name !== 'manifest.json')).toEqual([entry.file]);
    const redis = new Redis(process.env.REDIS_URL!);
    try {
      expect(await redis.keys(`${prefix}:state:nightly:inflight:*`)).toEqual([]);
    } finally {
      await redis.quit();
    }
  }, 90_000);
});
