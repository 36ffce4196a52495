import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalFiles } from '../../src/effects/local-files';
import { GitlabClient } from '../../src/gitlab';
import { sha256File } from '../../src/policies/group-backup/group-backup.archive';
import {
  GROUP_ARCHIVE,
  SET_FILE,
  type SetFileContent,
  writeSetFile,
} from '../../src/policies/group-backup/group-backup.set';
import { type RequestLogEntry, type RunningSandbox, startSandbox } from '../../src/sandbox';
import { projectTransferOf } from '../../src/sandbox/project-transfer-state';
import type { ProjectRecord } from '../../src/sandbox/state';
import {
  asImportedContents,
  type BackupSetFixture,
  makeBackupSet,
  projectContents,
  setWorld,
} from '../support/backup-set';
import { childEnv, runCli, type CliResult } from '../support/cli';
import { call } from '../support/sandbox-http';
import { ADMIN_TOKEN, MAINTAINER_TOKEN } from '../support/world-builders';
import { dropKeys } from '../support/redis-server';

const PROJECT_IMPORT_PATH = '/api/v4/projects/import';
const GROUP_IMPORT_PATH = '/api/v4/groups/import';

/** A row of the table a set restore ends with. */
interface Row {
  readonly result: string;
  readonly detail: string;
}

describe('restore: a whole backup set (the group, then each project in its place), against the sandbox forge', () => {
  let sandbox: RunningSandbox;
  let dir: string;
  let fixture: BackupSetFixture;
  let dryRunFile: string;
  let actingFile: string;
  const prefix = `e2e-restore-set-${process.pid}`;

  const env = (): NodeJS.ProcessEnv =>
    childEnv({ GITLAB_URL: sandbox.url, GITLAB_TOKEN: ADMIN_TOKEN, REDIS_URL: process.env.REDIS_URL });

  const policyFile = (name: string, dryRun?: boolean): string => {
    const file = join(dir, name);
    writeFileSync(
      file,
      [
        'version: 1',
        'gitlab: { url: "${GITLAB_URL}", token: "${GITLAB_TOKEN}", max_requests_per_minute: 6000 }',
        `redis: { url: "\${REDIS_URL}", prefix: ${prefix} }`,
        ...(dryRun === undefined ? [] : [`dry_run: ${dryRun}`]),
        'policies: []',
      ].join('\n'),
    );
    return file;
  };

  /** Runs `restore` to its end and returns its result with the requests the forge received meanwhile. */
  const restore = async (
    args: string[],
    whileRunning?: () => Promise<void>,
  ): Promise<CliResult & { requests: RequestLogEntry[] }> => {
    const before = sandbox.state.requestLog.length;
    const running = runCli(['restore', '--wait', '10', ...args], env(), 60_000);
    await whileRunning?.();
    const result = await running;
    return { ...result, requests: sandbox.state.requestLog.slice(before) };
  };

  const projectImports = (requests: RequestLogEntry[]): RequestLogEntry[] =>
    requests.filter((entry) => entry.method === 'POST' && entry.path === PROJECT_IMPORT_PATH);
  const posts = (requests: RequestLogEntry[]): string[] =>
    requests.filter((entry) => entry.method === 'POST').map((entry) => entry.path);

  /** What the command printed for the user on stderr: everything but the logger's JSON lines. */
  const message = (result: CliResult): string[] =>
    result.stderr.split('\n').filter((line) => line !== '' && !line.startsWith('{'));

  /** The table at the end of stdout, by the project's new full path; its columns start where the header's titles do. */
  const table = (stdout: string): Map<string, Row> => {
    const lines = stdout.split('\n');
    const start = lines.findIndex((line) => /^project +result +detail$/.test(line));
    if (start < 0) throw new Error(`no table in:\n${stdout}`);
    const header = lines[start];
    const [resultAt, detailAt] = [header.indexOf('result'), header.indexOf('detail')];
    const rows = new Map<string, Row>();
    for (const line of lines.slice(start + 1)) {
      if (/^\d+ of \d+ projects? /.test(line) || line === '') break;
      rows.set(line.slice(0, resultAt).trim(), {
        result: line.slice(resultAt, detailAt).trim(),
        detail: line.slice(detailAt),
      });
    }
    return rows;
  };

  /** A copy of the set's folder to change for one test. */
  const copyOfSet = (name: string): string => {
    const folder = join(dir, 'copies', name, fixture.content.set);
    cpSync(fixture.folder, folder, { recursive: true });
    return folder;
  };

  const setLimits = async (limits: Record<string, number>): Promise<void> => {
    const answer = await call(sandbox.url, '/__sandbox/settings', {
      method: 'POST',
      body: { export_rate_limits: limits },
    });
    expect(answer.status).toBe(200);
  };

  const project = (fullPath: string): ProjectRecord => {
    const found = sandbox.state.project(fullPath);
    if (!found) throw new Error(`no project ${fullPath} on the forge`);
    return found;
  };

  const contents = (record: ProjectRecord) => projectContents(sandbox.state, record);
  const asImported = (record: ProjectRecord) => asImportedContents(sandbox.state, record);

  const expectRestoredAsOriginal = (groupPath: string, relativePath: string): void => {
    expect(contents(project(`${groupPath}/${relativePath}`))).toEqual(asImported(project(`acme/${relativePath}`)));
  };

  const paths = (): string[] => fixture.content.projects.map((entry) => entry.path);

  beforeAll(async () => {
    sandbox = await startSandbox({ world: setWorld(), bulkDeleteDelayMs: 0 });
    dir = mkdtempSync(join(tmpdir(), 'forgewarden-restore-set-'));
    fixture = await makeBackupSet(sandbox, join(dir, 'backups'));
    dryRunFile = policyFile('dry-run.yml');
    actingFile = policyFile('acting.yml', false);
  });

  // Limits of a second between the tests: each test's imports start in a window of their own, on the forge and in the
  // count the daemon keeps in Redis for every process of the token (a minute's, as the forge's default).
  beforeEach(async () => {
    await setLimits({ window_ms: 1_000 });
    await dropKeys(`${prefix}:forge:limit`);
  });

  afterAll(async () => {
    await sandbox?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    await dropKeys(prefix);
  });

  it('takes a real set of the sandbox: group archive, one archive per project in its folder, set.json listing them', () => {
    expect(paths()).toEqual(['api', 'platform/billing', 'platform/console', 'platform/edge/gateway', 'web']);
    expect(fixture.content).toMatchObject({ state: 'complete', group: { full_path: 'acme' }, missing: [] });
    for (const entry of fixture.content.projects)
      expect(readFileSync(join(fixture.folder, entry.file)).length).toBe(entry.bytes);
  });

  // First of the tests that import: the forge's own limits (6 project imports a minute) start it afresh.
  it("restores the group, its subgroups and every project in place with its contents, under the forge's default limits without a 429", async () => {
    await setLimits({ window_ms: 60_000 });
    const result = await restore(['-c', actingFile, '--from', fixture.folder, '--group', 'acme-restored']);
    expect(result.code).toBe(0);

    const group = sandbox.state.group('acme-restored');
    expect(group).toMatchObject({ name: 'acme-restored', parent_id: null, description: 'The Acme group' });
    expect(sandbox.state.group('acme-restored/platform')).toMatchObject({
      name: 'Platform',
      description: 'Platform team',
    });
    expect(sandbox.state.group('acme-restored/platform/edge')).toMatchObject({
      name: 'Edge',
      description: 'At the edge',
    });
    expect(result.stdout.split('\n')[0]).toMatch(
      new RegExp(
        `^restored ${join(fixture.folder, GROUP_ARCHIVE)} \\(\\d+ bytes, sha256 [0-9a-f]{64}\\) as group acme-restored \\(id ${group!.id}, private\\)$`,
      ),
    );

    for (const entry of fixture.content.projects) {
      const restored = project(`acme-restored/${entry.path}`);
      expect(restored.name).toBe(entry.name);
      expectRestoredAsOriginal('acme-restored', entry.path);
    }
    // The contents were compared whole; these say what they hold, so the comparison is not of empty lists.
    const api = contents(project('acme-restored/api'));
    expect(api.attributes).toMatchObject({ name: 'API', description: 'The public API' });
    expect(api.project_members).toEqual([
      { username: 'alice', access_level: 40 },
      { username: 'olaf', access_level: 20 },
    ]);
    expect(api.ci_pipelines[0]?.jobs.map((job) => [job.name, job.status])).toEqual([
      ['build', 'success'],
      ['test', 'failed'],
    ]);
    expect(api.protected_branches[0]).toMatchObject({
      name: 'main',
      push_access_levels: expect.arrayContaining([{ user: 'mia' }]),
    });
    expect(api.issues[0]?.resource_weight_events.map((event) => event.weight)).toEqual([3]);
    expect(contents(project('acme-restored/web')).attributes).toMatchObject({
      default_branch: 'develop',
      request_access_enabled: false,
    });
    expect(contents(project('acme-restored/platform/console')).attributes).toMatchObject({ archived: true });
    expect(contents(project('acme-restored/platform/billing')).project_members).toEqual([
      { username: 'mia', access_level: 40 },
    ]);

    const uploads = projectImports(result.requests);
    expect(uploads.map((entry) => [entry.status, entry.body.namespace, entry.body.path, entry.body.name])).toEqual([
      [201, String(group!.id), 'api', 'API'],
      [201, String(sandbox.state.group('acme-restored/platform')!.id), 'billing', 'Billing'],
      [201, String(sandbox.state.group('acme-restored/platform')!.id), 'console', 'Console'],
      [201, String(sandbox.state.group('acme-restored/platform/edge')!.id), 'gateway', 'Gateway'],
      [201, String(group!.id), 'web', 'Web'],
    ]);
    expect(result.requests.filter((entry) => entry.status === 429)).toEqual([]);
    expect(sandbox.state.requestLog.filter((entry) => entry.status === 429)).toEqual([]);

    const rows = table(result.stdout);
    expect([...rows.keys()]).toEqual(paths().map((path) => `acme-restored/${path}`));
    for (const path of paths()) {
      expect(rows.get(`acme-restored/${path}`)).toEqual({
        result: 'restored',
        detail: `project ${project(`acme-restored/${path}`).id}, from projects/${path}.tar.gz`,
      });
    }
    expect(result.stdout.endsWith('\n5 of 5 projects restored\n')).toBe(true);
  });

  it("in a dry run (the file's default, or --dry-run) checks the archives and the path, lists what it would create and sends no POST", async () => {
    for (const args of [
      ['-c', dryRunFile],
      ['-c', actingFile, '--dry-run'],
    ]) {
      const result = await restore([...args, '--from', fixture.folder, '--group', 'acme-dry']);
      expect(result.code).toBe(0);
      expect(posts(result.requests)).toEqual([]);
      expect(result.requests.map((entry) => `${entry.method} ${entry.path}`)).toContain(
        'GET /api/v4/namespaces/acme-dry/exists',
      );
      const { bytes, sha256 } = fixture.content.group_archive;
      expect(result.stdout.split('\n').slice(0, 2)).toEqual([
        `would restore ${join(fixture.folder, GROUP_ARCHIVE)} (${bytes} bytes, sha256 ${sha256}) as group acme-dry: the archive is valid and the path is free`,
        "dry run (the file's dry_run, or --dry-run): run with --no-dry-run to create the group and its projects",
      ]);
      expect(Object.fromEntries(table(result.stdout))).toEqual({
        'acme-dry/api': { result: 'would restore', detail: 'would import projects/api.tar.gz into acme-dry' },
        'acme-dry/platform/billing': {
          result: 'would restore',
          detail: 'would import projects/platform/billing.tar.gz into acme-dry/platform',
        },
        'acme-dry/platform/console': {
          result: 'would restore',
          detail: 'would import projects/platform/console.tar.gz into acme-dry/platform',
        },
        'acme-dry/platform/edge/gateway': {
          result: 'would restore',
          detail: 'would import projects/platform/edge/gateway.tar.gz into acme-dry/platform/edge',
        },
        'acme-dry/web': { result: 'would restore', detail: 'would import projects/web.tar.gz into acme-dry' },
      });
    }
    expect(sandbox.state.group('acme-dry')).toBeUndefined();
  });

  it('skips a project whose path someone took meanwhile, naming it and how to restore it later, and restores the others (exit 1)', async () => {
    const folder = fixture.folder;
    const hold = sandbox.state.holds.add({ method: 'POST', path: `^${PROJECT_IMPORT_PATH}$`, agent: 'forgewarden' });
    let theirs = 0;
    const result = await restore(['-c', actingFile, '--from', folder, '--group', 'acme-taken'], async () => {
      // While the restore's first project import waits at the door, a person imports a project of their own at acme-taken/web.
      await sandbox.state.holds.reached(hold.id);
      const person = new GitlabClient({
        url: sandbox.url,
        token: MAINTAINER_TOKEN,
        maxRequestsPerMinute: 0,
        minWriteIntervalMs: 0,
        retry: { maxAttempts: 1 },
      });
      try {
        theirs = (
          await person.projectTransfer.import({
            file: join(folder, 'projects/web.tar.gz'),
            namespace: 'acme-taken',
            path: 'web',
            name: 'Their web',
          })
        ).id;
      } finally {
        await person.close();
        sandbox.state.holds.release(hold.id);
      }
    });
    expect(result.code).toBe(1);
    const rows = table(result.stdout);
    expect(rows.get('acme-taken/web')).toEqual({
      result: 'skipped',
      detail: `the path is taken by project ${theirs} (Their web); move or rename that project, then run forgewarden restore --group acme-taken --from ${folder} --project web`,
    });
    for (const path of paths().filter((path) => path !== 'web')) {
      expect(rows.get(`acme-taken/${path}`)?.result).toBe('restored');
      expectRestoredAsOriginal('acme-taken', path);
    }
    expect(project('acme-taken/web')).toMatchObject({ id: theirs, name: 'Their web' });
    const bots = projectImports(result.requests).filter(
      (entry) => entry.headers['user-agent']?.startsWith('forgewarden') && entry.body.name !== 'Their web',
    );
    expect(bots.map((entry) => entry.body.path)).toEqual(['api', 'billing', 'console', 'gateway']);
  });

  it('leaves out a project whose archive is damaged or not the one the set lists, with the reason, and restores the others (exit 1)', async () => {
    const folder = copyOfSet('damaged');
    const web = join(folder, 'projects/web.tar.gz');
    const whole = readFileSync(web);
    writeFileSync(web, whole.subarray(0, Math.floor(whole.length / 2)));
    // Still a whole archive of the same size, but other bytes: the gzip header's modification time, one second on.
    const consoleFile = join(folder, 'projects/platform/console.tar.gz');
    const changed = readFileSync(consoleFile);
    changed.writeUInt32LE(changed.readUInt32LE(4) + 1, 4);
    writeFileSync(consoleFile, changed);

    const result = await restore(['-c', actingFile, '--from', folder, '--group', 'acme-damaged']);
    expect(result.code).toBe(1);
    const rows = table(result.stdout);
    expect(rows.get('acme-damaged/web')?.result).toBe('skipped');
    expect(rows.get('acme-damaged/web')?.detail).toMatch(
      /^its archive projects\/web\.tar\.gz is not a whole archive: truncated/,
    );
    expect(rows.get('acme-damaged/platform/console')).toEqual({
      result: 'skipped',
      detail:
        "its archive's SHA-256 is not the set's (projects/platform/console.tar.gz changed since the backup verified it)",
    });
    for (const path of ['api', 'platform/billing', 'platform/edge/gateway']) {
      expect(rows.get(`acme-damaged/${path}`)?.result).toBe('restored');
      expectRestoredAsOriginal('acme-damaged', path);
    }
    expect(projectImports(result.requests).map((entry) => entry.body.path)).toEqual(['api', 'billing', 'gateway']);
    expect(sandbox.state.project('acme-damaged/web')).toBeUndefined();
    expect(sandbox.state.project('acme-damaged/platform/console')).toBeUndefined();
    expect(result.stdout.endsWith('\n3 of 5 projects restored\n')).toBe(true);
  });

  it('with --project restores that one project into the existing group (its dry run first) and nothing else', async () => {
    // The group alone first, from the set's group archive; the forge fills in its subgroups.
    const group = await restore([
      '-c',
      actingFile,
      '--from',
      join(fixture.folder, GROUP_ARCHIVE),
      '--group',
      'acme-one',
    ]);
    expect(group.code).toBe(0);
    await sandbox.state.whenIdle();
    const asked = ['--from', fixture.folder, '--group', 'acme-one', '--project', 'platform/edge/gateway'];

    const dry = await restore(['-c', actingFile, '--dry-run', ...asked]);
    expect(dry.code).toBe(0);
    expect(posts(dry.requests)).toEqual([]);
    expect(Object.fromEntries(table(dry.stdout))).toEqual({
      'acme-one/platform/edge/gateway': {
        result: 'would restore',
        detail: 'would import projects/platform/edge/gateway.tar.gz into acme-one/platform/edge',
      },
    });

    const result = await restore(['-c', actingFile, ...asked]);
    expect(result.code).toBe(0);
    expect(posts(result.requests)).toEqual([PROJECT_IMPORT_PATH]);
    expect(posts(result.requests)).not.toContain(GROUP_IMPORT_PATH);
    const restored = project('acme-one/platform/edge/gateway');
    expect(Object.fromEntries(table(result.stdout))).toEqual({
      'acme-one/platform/edge/gateway': {
        result: 'restored',
        detail: `project ${restored.id}, from projects/platform/edge/gateway.tar.gz`,
      },
    });
    expect(result.stdout.endsWith('\n1 of 1 project restored\n')).toBe(true);
    expectRestoredAsOriginal('acme-one', 'platform/edge/gateway');
    const inGroup = [...sandbox.state.projects.values()]
      .map((record) => sandbox.state.projectFullPath(record))
      .filter((path) => path.startsWith('acme-one/'));
    expect(inGroup).toEqual(['acme-one/platform/edge/gateway']);
  });

  it('with --project names a taken path, a group or subgroup that does not exist and a project the set does not hold', async () => {
    const group = await restore([
      '-c',
      actingFile,
      '--from',
      join(fixture.folder, GROUP_ARCHIVE),
      '--group',
      'acme-two',
    ]);
    expect(group.code).toBe(0);
    await sandbox.state.whenIdle();
    const asked = ['--from', fixture.folder, '--group', 'acme-two', '--project', 'platform/edge/gateway'];
    const first = await restore(['-c', actingFile, ...asked]);
    expect(first.code).toBe(0);
    const restored = project('acme-two/platform/edge/gateway');

    // Again: the path is taken now, by the project just restored.
    const again = await restore(['-c', actingFile, ...asked]);
    expect(again.code).toBe(1);
    expect(projectImports(again.requests)).toEqual([]);
    expect(table(again.stdout).get('acme-two/platform/edge/gateway')).toEqual({
      result: 'skipped',
      detail: `the path is taken by project ${restored.id} (Gateway); move or rename that project, then run forgewarden restore --group acme-two --from ${fixture.folder} --project platform/edge/gateway`,
    });

    const noGroup = await restore([
      '-c',
      actingFile,
      '--from',
      fixture.folder,
      '--group',
      'acme-nowhere',
      '--project',
      'api',
    ]);
    expect(noGroup.code).toBe(1);
    expect(message(noGroup)).toEqual([
      'forgewarden restore: the group acme-nowhere does not exist, or this token cannot see it: --project restores into an existing group (without --project, restore creates the group and its projects); nothing was uploaded',
    ]);
    expect(posts(noGroup.requests)).toEqual([]);

    const noSubgroup = await restore([
      '-c',
      actingFile,
      '--from',
      fixture.folder,
      '--group',
      'acme-two/platform',
      '--project',
      'platform/billing',
    ]);
    expect(noSubgroup.code).toBe(1);
    expect(message(noSubgroup)).toEqual([
      'forgewarden restore: the group acme-two/platform/platform does not exist, or this token cannot see it; platform/billing goes there, so it must exist first; nothing was uploaded',
    ]);
    expect(posts(noSubgroup.requests)).toEqual([]);

    const unknown = await restore([
      '-c',
      actingFile,
      '--from',
      fixture.folder,
      '--group',
      'acme-two',
      '--project',
      'platform/nope',
    ]);
    expect([unknown.code, message(unknown)]).toEqual([
      2,
      [
        `forgewarden restore: --project platform/nope: not a project of the set ${fixture.folder}; its projects include api, platform/billing, platform/console, platform/edge/gateway, web`,
      ],
    ]);
    expect(unknown.requests).toEqual([]);

    const fromFile = await restore([
      '-c',
      actingFile,
      '--from',
      join(fixture.folder, GROUP_ARCHIVE),
      '--group',
      'acme-two',
      '--project',
      'api',
    ]);
    expect(fromFile.code).toBe(2);
    expect(fromFile.requests).toEqual([]);
  });

  it('after an upload whose answer was lost, looks whether the project is there before saying anything', async () => {
    const group = await restore([
      '-c',
      actingFile,
      '--from',
      join(fixture.folder, GROUP_ARCHIVE),
      '--group',
      'acme-lost',
    ]);
    expect(group.code).toBe(0);

    sandbox.state.faults.add({ method: 'POST', path: `^${PROJECT_IMPORT_PATH}$`, status: 502, after: true, times: 1 });
    const acted = await restore([
      '-c',
      actingFile,
      '--from',
      fixture.folder,
      '--group',
      'acme-lost',
      '--project',
      'api',
    ]);
    expect(acted.code).toBe(0);
    expect(projectImports(acted.requests)).toHaveLength(1);
    expect(table(acted.stdout).get('acme-lost/api')).toEqual({
      result: 'restored',
      detail: `project ${project('acme-lost/api').id}, from projects/api.tar.gz; the answer to the upload was lost (POST projects/import → 502: 502 Bad Gateway), but the import went through`,
    });
    expectRestoredAsOriginal('acme-lost', 'api');

    sandbox.state.faults.add({ method: 'POST', path: `^${PROJECT_IMPORT_PATH}$`, status: 502, times: 1 });
    const notActed = await restore([
      '-c',
      actingFile,
      '--from',
      fixture.folder,
      '--group',
      'acme-lost',
      '--project',
      'web',
    ]);
    expect(notActed.code).toBe(1);
    expect(table(notActed.stdout).get('acme-lost/web')).toEqual({
      result: 'failed',
      detail: `POST projects/import → 502: 502 Bad Gateway; acme-lost/web does not exist, so the import has not gone through; running forgewarden restore --group acme-lost --from ${fixture.folder} --project web is safe`,
    });
    expect(sandbox.state.project('acme-lost/web')).toBeUndefined();
  });

  it('reports a project whose import the forge failed with its import_error, and one whose subgroup never appeared within --wait', async () => {
    const folder = copyOfSet('odd');
    // web's archive is a whole tar.gz the forge cannot import (the group's export), listed with its own checksum.
    cpSync(join(folder, GROUP_ARCHIVE), join(folder, 'projects/web.tar.gz'));
    // ghost/api goes to a subgroup the group archive does not hold.
    mkdirSync(join(folder, 'projects/ghost'));
    cpSync(join(folder, 'projects/api.tar.gz'), join(folder, 'projects/ghost/api.tar.gz'));
    const checksum = async (file: string) => sha256File(new LocalFiles(), join(folder, file));
    const content: SetFileContent = {
      ...fixture.content,
      projects: [
        ...(await Promise.all(
          fixture.content.projects.map(async (entry) =>
            entry.path === 'web' ? { ...entry, ...(await checksum(entry.file)) } : entry,
          ),
        )),
        {
          id: 99,
          path: 'ghost/api',
          name: 'Ghost API',
          file: 'projects/ghost/api.tar.gz',
          ...(await checksum('projects/ghost/api.tar.gz')),
        },
      ],
    };
    await writeSetFile(new LocalFiles(), folder, content);

    const result = await restore(['-c', actingFile, '--from', folder, '--group', 'acme-odd', '--wait', '2']);
    expect(result.code).toBe(1);
    const rows = table(result.stdout);
    const web = project('acme-odd/web');
    expect(rows.get('acme-odd/web')).toEqual({
      result: 'failed',
      detail: `the forge's import failed: Invalid file format: tree/project.json is missing; it leaves project ${web.id} at the path: delete it, then run forgewarden restore --group acme-odd --from ${folder} --project web`,
    });
    expect(rows.get('acme-odd/ghost/api')).toEqual({
      result: 'skipped',
      detail: `the group acme-odd/ghost did not exist 2 s after the group's import; once it does: forgewarden restore --group acme-odd --from ${folder} --project ghost/api`,
    });
    for (const path of ['api', 'platform/billing', 'platform/console', 'platform/edge/gateway'])
      expect(rows.get(`acme-odd/${path}`)?.result).toBe('restored');
    expect(projectImports(result.requests).map((entry) => entry.body.path)).toEqual([
      'api',
      'billing',
      'console',
      'gateway',
      'web',
    ]);
  });

  it("lists a project the set lacks as not in the set, with the set's reason, restores the rest and exits 1", async () => {
    const billing = project('acme/platform/billing');
    projectTransferOf(sandbox.state).failingExports.add(billing.id);
    let partial: BackupSetFixture;
    try {
      partial = await makeBackupSet(sandbox, join(dir, 'partial-backups'));
    } finally {
      projectTransferOf(sandbox.state).failingExports.delete(billing.id);
    }
    expect(partial.content).toMatchObject({
      state: 'partial',
      missing: [
        { id: billing.id, path: 'platform/billing', reason: 'its export did not finish (export_status failed)' },
      ],
    });

    const result = await restore(['-c', actingFile, '--from', partial.folder, '--group', 'acme-partial']);
    expect(result.code).toBe(1);
    const rows = table(result.stdout);
    expect(rows.get('acme-partial/platform/billing')).toEqual({
      result: 'not in the set',
      detail: 'its export did not finish (export_status failed)',
    });
    for (const path of ['api', 'platform/console', 'platform/edge/gateway', 'web'])
      expect(rows.get(`acme-partial/${path}`)?.result).toBe('restored');
    expect(sandbox.state.project('acme-partial/platform/billing')).toBeUndefined();
    expect(result.stdout.endsWith('\n4 of 5 projects restored\n')).toBe(true);

    const asked = await restore([
      '-c',
      actingFile,
      '--from',
      partial.folder,
      '--group',
      'acme-partial',
      '--project',
      'platform/billing',
    ]);
    expect(asked.code).toBe(1);
    expect(message(asked)).toEqual([
      `forgewarden restore: platform/billing is not in the set ${partial.folder}: its export did not finish (export_status failed); there is no archive of it to restore`,
    ]);
    expect(asked.requests).toEqual([]);
  });

  it('refuses a folder without set.json, an invalid set.json and a damaged group archive before contacting the forge (exit 1)', async () => {
    const unfinished = copyOfSet('unfinished');
    rmSync(join(unfinished, SET_FILE));
    const absent = await restore(['-c', actingFile, '--from', unfinished, '--group', 'acme-unfinished']);
    expect([absent.code, message(absent)]).toEqual([
      1,
      [
        `forgewarden restore: ${join(unfinished, SET_FILE)}: no such file: ${unfinished} is not a finished backup set; nothing was uploaded`,
      ],
    ]);
    expect(absent.stdout).toBe('');
    expect(absent.requests).toEqual([]);

    writeFileSync(join(unfinished, SET_FILE), JSON.stringify({ version: 1, kind: 'forgewarden-backup-set' }));
    const invalid = await restore(['-c', actingFile, '--from', unfinished, '--group', 'acme-unfinished']);
    expect([invalid.code, message(invalid)]).toEqual([
      1,
      [`forgewarden restore: ${join(unfinished, SET_FILE)}: group: expected { id, full_path }; nothing was uploaded`],
    ]);
    expect(invalid.requests).toEqual([]);

    const damaged = copyOfSet('damaged-group');
    const groupFile = join(damaged, GROUP_ARCHIVE);
    writeFileSync(groupFile, readFileSync(groupFile).subarray(0, 40));
    const badGroup = await restore(['-c', actingFile, '--from', damaged, '--group', 'acme-damaged-group']);
    expect(badGroup.code).toBe(1);
    const [line, ...rest] = message(badGroup);
    expect(rest).toEqual([]);
    expect(line).toMatch(
      new RegExp(
        `^forgewarden restore: ${damaged}: the group archive group\\.tar\\.gz is not a whole archive: .*; nothing was uploaded$`,
      ),
    );
    expect(badGroup.requests).toEqual([]);
    expect([...table(badGroup.stdout).values()]).toEqual(
      paths().map(() => ({ result: 'skipped', detail: 'the group was not restored' })),
    );
    expect(sandbox.state.group('acme-damaged-group')).toBeUndefined();
  });

  it('names a folder of sets as a usage error, pointing at its newest set', async () => {
    const groupFolder = join(dir, 'backups', 'acme');
    mkdirSync(join(groupFolder, '2025-06-01T020000Z'), { recursive: true });
    const result = await restore(['-c', actingFile, '--from', groupFolder, '--group', 'acme-which']);
    expect([result.code, message(result)]).toEqual([
      2,
      [
        `forgewarden restore: --from ${groupFolder}: a folder of backup sets, not one; name one of them, such as ${fixture.folder} (the newest)`,
      ],
    ]);
    expect(result.requests).toEqual([]);
  });
});
