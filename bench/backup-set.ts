/**
 * A backup set at the forge's default limits (`npm run bench -- --only backup-set`, about 8 minutes):
 * `node dist/main.js once` with a group_backup policy at its defaults (but its destination) against the sandbox forge
 * serving a group `acme` with two subgroups and 50 projects, each project's export about 20 MB of incompressible data
 * (`export_padding_bytes`), under the forge's default export limits (6 project export requests a minute per user in a
 * 60 s window, one download a minute per user and project; the sandbox's defaults, not shortened). The policy paces
 * its export requests by that limit, so the set takes about ⌈50 / 6⌉ minutes; the plan's own estimate
 * (`setDurationMs`, what `plan` prints) is a minute more.
 *
 * Measured from outside: the command's wall time; its RSS sampled every 100 ms (VmRSS, and VmHWM for the peak), noted
 * as each project archive appears in place, to show it stays flat over the set; the bytes written (every file under
 * the destination). The set must be whole, or the bench throws: exit 0, `set.json` complete with 50 project archives
 * and none missing, 50 archives on disk, and no 429 in the sandbox's request log (the forge never refused a request).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalFiles } from '../src/effects/local-files';
import { setDurationMs } from '../src/policies/group-backup/group-backup.decide';
import { filesOf, PROJECTS_FOLDER, readSetFile } from '../src/policies/group-backup/group-backup.set';
import {
  benchPrefix,
  DAEMON_NODE_FLAGS,
  dropKeys,
  get,
  MAIN,
  ROOT,
  runCommand,
  type Sandbox,
  startSandbox,
  waitForExit,
} from './processes';

const TOKEN = 'glpat-sandbox-backup-set-admin';
const PROJECTS = 50;
/** About 20 MB an archive: the padding is incompressible, the rest of an archive a few KB. */
const PADDING_BYTES = 20_000_000;
/** The forge's default project export limit, which the policy's `project_exports_per_minute` defaults to. */
const EXPORTS_PER_MINUTE = 6;
/** Subgroups of acme, and how many of the 50 projects each holds (the rest are in acme itself). */
const SUBGROUPS = [
  { path: 'platform', projects: 17 },
  { path: 'tools', projects: 17 },
];
/** A safety net: the command is stopped here (the set takes about 8 minutes at the limits, the plan says 10). */
const DEADLINE_MS = 20 * 60_000;

export interface BackupSetRow {
  figure: string;
  forgewarden: string;
  peers: string;
  ratio: string;
  floor: string;
}

/** The archives' size as the world sets it, in decimal megabytes (the measured sizes are in MB of 2^20 bytes, as in the other rows). */
const SIZE_TEXT = `${PADDING_BYTES / 1_000_000} MB (${PADDING_BYTES.toLocaleString('en')} bytes of padding)`;
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const min = (msValue: number) =>
  `${Math.floor(msValue / 60_000)}:${String(Math.floor((msValue % 60_000) / 1000)).padStart(2, '0')}`;

/** What the sandbox logged of a request: enough to find the exports, the downloads and any refusal. */
interface LoggedRequest {
  readonly time: string;
  readonly method: string;
  readonly path: string;
  readonly status: number;
}

/** The RSS when the n-th project archive was first seen in place. */
interface Sample {
  readonly archives: number;
  readonly atMs: number;
  readonly rss: number;
}

function worldText(): string {
  const projects: { path: string; namespace: string }[] = [];
  const inAcme = PROJECTS - SUBGROUPS.reduce((sum, group) => sum + group.projects, 0);
  for (let i = 1; i <= inAcme; i++) projects.push({ path: `service-${String(i).padStart(2, '0')}`, namespace: 'acme' });
  for (const group of SUBGROUPS) {
    for (let i = 1; i <= group.projects; i++)
      projects.push({ path: `${group.path}-${String(i).padStart(2, '0')}`, namespace: `acme/${group.path}` });
  }
  // JSON is YAML. Only the archive size is set: the export limits, their window and the export delay are the defaults.
  return JSON.stringify({
    settings: { export_padding_bytes: PADDING_BYTES },
    users: [{ username: 'root', admin: true, tokens: [TOKEN] }],
    groups: [
      { path: 'acme', members: [{ user: 'root', access_level: 'owner' }] },
      ...SUBGROUPS.map((group) => ({ path: group.path, parent: 'acme' })),
    ],
    projects,
  });
}

/** The policy at its defaults (download_interval 1m, project_exports_per_minute 6, timeout 1h), but its destination. */
function policyText(url: string, prefix: string, destination: string): string {
  return [
    'version: 1',
    `gitlab: { url: "${url}", token: "\${GITLAB_TOKEN}" }`,
    `redis: { prefix: ${prefix} }`,
    'dry_run: false',
    'policies:',
    '  - name: backup-set',
    '    type: group_backup',
    '    groups: [acme]',
    '    schedule: "0 2 * * *"',
    `    destination: ${JSON.stringify(destination)}`,
    '',
  ].join('\n');
}

/** Project archives in place (not the dot-named partial downloads) under the set's folders, however deep. */
function archivesInPlace(groupFolder: string): string[] {
  if (!existsSync(groupFolder)) return [];
  const found: string[] = [];
  for (const set of readdirSync(groupFolder)) {
    const projects = join(groupFolder, set, PROJECTS_FOLDER);
    if (!existsSync(projects)) continue;
    for (const entry of readdirSync(projects, { recursive: true, encoding: 'utf8' })) {
      const name = entry.split('/').at(-1) ?? '';
      if (name.endsWith('.tar.gz') && !name.startsWith('.')) found.push(join(projects, entry));
    }
  }
  return found;
}

/** Every file under `dir` and its size. */
function filesUnder(dir: string): { count: number; bytes: number } {
  let count = 0;
  let bytes = 0;
  for (const entry of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    const stats = statSync(join(dir, entry));
    if (!stats.isFile()) continue;
    count += 1;
    bytes += stats.size;
  }
  return { count, bytes };
}

/** The most entries of `times` (ms, sorted) in any window of `windowMs`. */
function mostInWindow(times: readonly number[], windowMs: number): number {
  let most = 0;
  for (let first = 0, last = 0; last < times.length; last++) {
    while (times[last] - times[first] >= windowMs) first++;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

/** The set's duration as `forgewarden plan` words it ("about 10 min at 6 project exports a minute"), if it says so. */
function planEstimate(configFile: string): string | undefined {
  const plan = spawnSync(process.execPath, [MAIN, 'plan', '-c', configFile], {
    cwd: ROOT,
    env: { ...process.env, GITLAB_TOKEN: TOKEN, LOG_LEVEL: 'warn' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return /the group archive and \d+ projects?, (about [^,\n]+? a minute)/.exec(plan.stdout)?.[1];
}

export async function backupSetBench(log: (line?: string) => void): Promise<{ rows: BackupSetRow[]; notes: string[] }> {
  const expectedMs = setDurationMs(PROJECTS, EXPORTS_PER_MINUTE);
  log(
    `\n### a backup set of ${PROJECTS} projects of ${SIZE_TEXT} each at the forge's default limits (group_backup, \`once\`; about ${min(expectedMs)} min)`,
  );
  const dir = mkdtempSync(join(tmpdir(), 'forgewarden-backup-set-bench-'));
  const worldFile = join(dir, 'world.yml');
  writeFileSync(worldFile, worldText());
  const prefix = benchPrefix('backup-set');
  let sandbox: Sandbox | undefined;
  try {
    sandbox = await startSandbox(worldFile);
    // The limits the sandbox applies, as it says: the forge's defaults, not a shortened window.
    const settings = JSON.parse((await get(`${sandbox.url}/__sandbox/settings`)) ?? '{}') as {
      export_rate_limits?: Record<string, number>;
      export_padding_bytes?: number;
    };
    const limits = settings.export_rate_limits ?? {};
    if (
      limits.window_ms !== 60_000 ||
      limits.project_export !== EXPORTS_PER_MINUTE ||
      limits.project_download_export !== 1 ||
      settings.export_padding_bytes !== PADDING_BYTES
    ) {
      throw new Error(
        `backup set bench: the sandbox's settings are not the forge's defaults with ${PADDING_BYTES} bytes of padding: ${JSON.stringify(settings)}`,
      );
    }
    const destination = join(dir, 'backups');
    const groupFolder = join(destination, 'acme');
    const configFile = join(dir, 'backup-set.yml');
    writeFileSync(configFile, policyText(sandbox.url, prefix, destination));
    const planned = planEstimate(configFile);
    log(
      `- plan: ${planned ?? 'no estimate found in its output'}; setDurationMs(${PROJECTS}, ${EXPORTS_PER_MINUTE}) = ${min(expectedMs)}`,
    );

    // The RSS as each archive appears (the folder is read at every sample, every 100 ms: the last archive, set.json,
    // the manifest and the exit come within a few hundred ms), and the last sample before the exit.
    const samples: Sample[] = [];
    let seen = 0;
    let lastLogMs = 0;
    let last: { rss: number; atMs: number } | undefined;
    const startedAt = Date.now();
    const run = await runCommand(
      ['once', '-c', configFile],
      { GITLAB_TOKEN: TOKEN },
      {
        nodeFlags: DAEMON_NODE_FLAGS,
        timeoutMs: DEADLINE_MS,
        onSample: (memory, atMs) => {
          last = { rss: memory.rss, atMs };
          const archives = archivesInPlace(groupFolder).length;
          if (archives > seen) samples.push({ archives: (seen = archives), atMs, rss: memory.rss });
          if (atMs - lastLogMs >= 60_000) {
            lastLogMs = atMs;
            log(
              `  ${min(atMs)}: ${seen} of ${PROJECTS} archives in place, RSS ${mb(memory.rss)} (peak ${mb(memory.peak)})`,
            );
          }
        },
      },
    );

    // The outcome, or a loud failure: exit 0, a complete set of 50, 50 archives on disk, no 429.
    const tail = run.stderr.trim().split('\n').slice(-3).join(' / ');
    if (run.code !== 0)
      throw new Error(`backup set bench: \`once\` exited with ${run.code} after ${min(run.wallMs)}: ${tail}`);
    const sets = readdirSync(groupFolder).filter((name) => existsSync(join(groupFolder, name, 'set.json')));
    if (sets.length !== 1)
      throw new Error(`backup set bench: expected one set under ${groupFolder}, found ${sets.length}`);
    const set = await readSetFile(new LocalFiles(), join(groupFolder, sets[0]));
    const onDisk = archivesInPlace(groupFolder);
    if (
      set.state !== 'complete' ||
      set.projects.length !== PROJECTS ||
      set.missing.length !== 0 ||
      onDisk.length !== PROJECTS
    ) {
      throw new Error(
        `backup set bench: the set is ${set.state} with ${set.projects.length} project archives (${onDisk.length} on disk), expected ${PROJECTS}; missing: ${set.missing.map((project) => `${project.path} (${project.reason})`).join(', ') || 'none'}`,
      );
    }
    const small = set.projects.filter((project) => project.bytes < PADDING_BYTES);
    if (small.length)
      throw new Error(
        `backup set bench: ${small.length} project archives are smaller than their ${PADDING_BYTES} bytes of padding: ${small.map((project) => project.path).join(', ')}`,
      );
    const requests = JSON.parse((await get(`${sandbox.url}/__sandbox/requests`)) ?? 'null') as LoggedRequest[] | null;
    if (!requests) throw new Error('backup set bench: the sandbox did not give its request log');
    const refused = requests.filter((request) => request.status === 429);
    if (refused.length)
      throw new Error(
        `backup set bench: the forge answered 429 ${refused.length} times: ${refused
          .slice(0, 3)
          .map((r) => `${r.method} ${r.path} at ${r.time}`)
          .join(', ')}`,
      );

    const exportTimes = requests
      .filter((r) => r.method === 'POST' && /^\/api\/v4\/projects\/\d+\/export$/.test(r.path))
      .map((r) => Date.parse(r.time))
      .sort((a, b) => a - b);
    const downloads = requests.filter(
      (r) => r.method === 'GET' && /^\/api\/v4\/projects\/\d+\/export\/download$/.test(r.path),
    );
    const downloaded = downloads.filter((r) => r.status === 200).length;
    const byStatus = new Map<number, number>();
    for (const request of requests) byStatus.set(request.status, (byStatus.get(request.status) ?? 0) + 1);
    const written = filesUnder(destination);
    const setBytes = filesOf(set).reduce((sum, file) => sum + file.bytes, 0);
    const first = samples[0];
    const complete = samples.find((sample) => sample.archives >= PROJECTS);
    const after = samples.filter((sample) => sample.archives >= 1).map((sample) => sample.rss);
    const end = last ?? { rss: NaN, atMs: NaN };
    const lastExportMs = exportTimes.length ? (exportTimes.at(-1) ?? 0) - startedAt : NaN;

    log(
      `- \`once\` ${min(run.wallMs)} wall (${(run.wallMs / 1000).toFixed(1)} s); expected at the limits ${min(expectedMs)} (the plan's ⌈${PROJECTS} / ${EXPORTS_PER_MINUTE}⌉ + 1 minutes): ${((100 * run.wallMs) / expectedMs).toFixed(0)}% of it`,
    );
    log(
      `- ${exportTimes.length} project export requests, at most ${mostInWindow(exportTimes, 60_000)} in any 60 s, the last ${min(lastExportMs)} after the start; ${downloaded} downloads (${downloads.length} tries); ${requests.length} requests in all (${[
        ...byStatus,
      ]
        .sort(([a], [b]) => a - b)
        .map(([status, count]) => `${count} × ${status}`)
        .join(', ')}), no 429`,
    );
    log(
      `- set ${sets[0]}: ${set.state}, group archive and ${set.projects.length} project archives, ${mb(setBytes)} in set.json; ${written.count} files, ${mb(written.bytes)} (${written.bytes.toLocaleString('en')} bytes) written under the destination`,
    );
    const whole = complete ? `, ${mb(complete.rss)} with all ${PROJECTS} in place (${min(complete.atMs)})` : '';
    log(
      `- RSS: ${mb(first?.rss ?? NaN)} after the first project (${min(first?.atMs ?? NaN)}), ${after.length ? `${mb(Math.min(...after))}–${mb(Math.max(...after))}` : 'n/a'} as the archives arrived${whole}, ${mb(end.rss)} at the last sample (${min(end.atMs)}); peak ${mb(run.peakRss)} (VmHWM)`,
    );
    log(
      `  per archive: ${samples.map((sample) => `${sample.archives}@${min(sample.atMs)} ${(sample.rss / 1024 / 1024).toFixed(0)}`).join(', ')} (MB)`,
    );

    return {
      rows: [
        {
          figure: `a backup set of ${PROJECTS} projects of ${SIZE_TEXT} each at the forge's default limits (6 exports a minute, \`once\`, sandbox over loopback)`,
          forgewarden: `${min(run.wallMs)} min wall, ${mb(written.bytes)} (${written.bytes.toLocaleString('en')} bytes) written, complete, no 429; RSS ${mb(first?.rss ?? NaN)} after the first project, ${mb(end.rss)} at the end, peak ${mb(run.peakRss)}`,
          peers: '',
          ratio: `${((100 * run.wallMs) / expectedMs).toFixed(0)}% of the plan's estimate`,
          floor: `plan: ${min(expectedMs)} min (⌈${PROJECTS} / ${EXPORTS_PER_MINUTE}⌉ + 1); last export request at ${min(lastExportMs)}`,
        },
      ],
      notes:
        planned && !planned.startsWith(`about ${Math.round(expectedMs / 60_000)} min`)
          ? [`The backup set's plan says "${planned}", setDurationMs ${min(expectedMs)} min.`]
          : [],
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
