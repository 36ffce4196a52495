/**
 * Group backups at size (`npm run bench -- --only backup`): `node dist/main.js once` with a group_backup policy,
 * against the sandbox forge (`node dist/main.js sandbox`) whose export of the group is 20 MB, then 200 MB, of
 * incompressible data. Measured from outside: the command's wall time and peak RSS (VmHWM), and the time from the
 * download's request (the archive ready) to the command's exit: download, verify (gunzip, tar walk, SHA-256 in one
 * streamed pass over the file on disk), rename and manifest. The archive is streamed, so the peak RSS is the same for
 * both sizes; `gzip -t` on the same file is the floor of the verify alone.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  benchPrefix,
  DAEMON_NODE_FLAGS,
  dropKeys,
  get,
  runCommand,
  type Sandbox,
  startSandbox,
  waitForExit,
} from './processes';

const TOKEN = 'glpat-sandbox-backup-admin';
/** Two sizes, ten times apart: a streamed backup's peak RSS is the same for both. */
const SIZES = [20 * 1024 * 1024, 200 * 1024 * 1024];

export interface BackupRow {
  figure: string;
  forgewarden: string;
  peers: string;
  ratio: string;
  floor: string;
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const s = (msValue: number) => `${(msValue / 1000).toFixed(2)} s`;

function worldText(paddingBytes: number): string {
  // JSON is YAML. No export delay and a limit window of a second: the figure is the daemon's, not the forge's wait.
  return JSON.stringify({
    settings: { export_padding_bytes: paddingBytes, export_delay_ms: 0, export_rate_limits: { window_ms: 1000 } },
    users: [{ username: 'root', admin: true, tokens: [TOKEN] }],
    groups: [
      { path: 'acme', members: [{ user: 'root', access_level: 'owner' }] },
      { path: 'platform', parent: 'acme' },
    ],
  });
}

function policyText(url: string, prefix: string, destination: string): string {
  return [
    'version: 1',
    `gitlab: { url: "${url}", token: "\${GITLAB_TOKEN}", timeout: 60s }`,
    `redis: { prefix: ${prefix} }`,
    'dry_run: false',
    'policies:',
    '  - name: backup',
    '    type: group_backup',
    '    groups: [acme]',
    '    schedule: "0 2 * * *"',
    `    destination: ${JSON.stringify(destination)}`,
    '    download_interval: 1s',
    '',
  ].join('\n');
}

interface LoggedRequest {
  readonly time: string;
  readonly path: string;
  readonly status: number;
}

interface BackupRun {
  readonly bytes: number;
  readonly wallMs: number;
  /** From the download's request (the archive was ready) to the command's exit: download, verify, rename, manifest. */
  readonly fromDownloadMs: number;
  readonly peakRss: number;
  readonly gzipMs: number;
}

export async function backupBench(log: (line?: string) => void): Promise<{ rows: BackupRow[]; notes: string[] }> {
  const rows: BackupRow[] = [];
  const notes: string[] = [];
  log(`\n### group backups of ${SIZES.map(mb).join(' and ')} (group_backup, \`once\`)`);
  const runs: BackupRun[] = [];
  for (const size of SIZES) {
    const run = await backupOnce(size, notes);
    if (!run) return { rows, notes };
    runs.push(run);
    log(
      `- ${mb(run.bytes)}: \`once\` ${s(run.wallMs)} wall (process start, the export being made, first download try after 1 s, …); from the download to the exit ${s(run.fromDownloadMs)} (${mb((run.bytes / run.fromDownloadMs) * 1000)}/s downloaded, verified and put in place); peak RSS ${mb(run.peakRss)}; \`gzip -t\` of the archive ${s(run.gzipMs)}`,
    );
  }
  for (const run of runs) {
    rows.push({
      figure: `group backup of a ${mb(run.bytes)} export (\`once\`, sandbox over loopback)`,
      forgewarden: `download, verify and manifest ${s(run.fromDownloadMs)} (${mb((run.bytes / run.fromDownloadMs) * 1000)}/s); peak RSS ${mb(run.peakRss)}`,
      peers: '',
      ratio: '',
      floor: Number.isNaN(run.gzipMs) ? '' : `\`gzip -t\` of the archive ${s(run.gzipMs)}`,
    });
  }
  return { rows, notes };
}

async function backupOnce(paddingBytes: number, notes: string[]): Promise<BackupRun | undefined> {
  const dir = mkdtempSync(join(tmpdir(), 'forgewarden-backup-bench-'));
  const worldFile = join(dir, 'world.yml');
  writeFileSync(worldFile, worldText(paddingBytes));
  const prefix = benchPrefix('backup');
  let sandbox: Sandbox | undefined;
  try {
    sandbox = await startSandbox(worldFile);
    const destination = join(dir, 'backups');
    const configFile = join(dir, 'backup.yml');
    writeFileSync(configFile, policyText(sandbox.url, prefix, destination));
    const { wallMs, peakRss, code, stderr, endedAt } = await runCommand(
      ['once', '-c', configFile],
      { GITLAB_TOKEN: TOKEN },
      { nodeFlags: DAEMON_NODE_FLAGS, timeoutMs: 300_000 },
    );
    // A run makes one backup set, DEST/acme/<time>/, whose group export is group.tar.gz (docs/policies.md).
    const archives = readdirSync(join(destination, 'acme'), { recursive: true, encoding: 'utf8' }).filter((name) =>
      name.endsWith('group.tar.gz'),
    );
    if (code !== 0 || archives.length !== 1) {
      notes.push(
        `The backup bench's \`once\` exited with ${code}, ${archives.length} group archives written: ${stderr.trim().split('\n').slice(-2).join(' / ')}`,
      );
      return undefined;
    }
    const archive = join(destination, 'acme', archives[0] ?? '');
    // The sandbox's world has no clock of its own, so its request times are this machine's.
    const requests = JSON.parse((await get(`${sandbox.url}/__sandbox/requests`)) ?? '[]') as LoggedRequest[];
    const download = requests.find((request) => request.path.endsWith('/export/download') && request.status === 200);
    const gzipStarted = performance.now();
    const gzip = spawnSync('gzip', ['-t', archive]);
    return {
      bytes: statSync(archive).size,
      wallMs,
      fromDownloadMs: download ? endedAt - Date.parse(download.time) : NaN,
      peakRss,
      gzipMs: gzip.status === 0 ? performance.now() - gzipStarted : NaN,
    };
  } finally {
    if (sandbox) {
      sandbox.child.kill('SIGTERM');
      await waitForExit(sandbox.child, 10_000);
    }
    await dropKeys(prefix);
    rmSync(dir, { recursive: true, force: true });
  }
}
