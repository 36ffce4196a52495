import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { LocalFiles } from '../../src/effects/local-files';
import { GitlabClient } from '../../src/gitlab';
import { sha256File } from '../../src/policies/group-backup/group-backup.archive';
import {
  GROUP_ARCHIVE,
  type MissingProject,
  type ProjectArchive,
  projectArchiveFile,
  relativeProjectPath,
  type SetFileContent,
  writeSetFile,
} from '../../src/policies/group-backup/group-backup.set';
import type { RunningSandbox, World } from '../../src/sandbox';
import { archivedAttributes, archivedRelations } from '../../src/sandbox/project-archive';
import type { ProjectRecord, SandboxState } from '../../src/sandbox/state';
import { speedUpExports } from './group-backup';
import { collect } from './sandbox-clients';
import { ADMIN_TOKEN, baseWorld } from './world-builders';

/**
 * A real backup set of group acme, taken from the sandbox as group_backup takes one: the group's export and each
 * project's export, downloaded through the client into `DEST/acme/STAMP/` (`group.tar.gz`, `projects/PATH.tar.gz`),
 * with its `set.json` written last by the set's own writer. A project whose export fails is listed as `missing`.
 */

/** The fixture's files are written and hashed through the disk class group_backup uses. */
const files = new LocalFiles();

/** The set's folder name. */
export const SET_STAMP = '2025-06-02T120000Z';

/**
 * acme with subgroups acme/platform and acme/platform/edge and five projects spread over them, each carrying
 * something the project archive holds (members, pipelines with jobs, protected branches, issues and merge requests
 * with their events, settings such as the default branch, request access and archived).
 */
export function setWorld(): World {
  return baseWorld({
    groups: [
      {
        id: 10,
        path: 'acme',
        name: 'Acme',
        description: 'The Acme group',
        members: [
          { user: 'root', access_level: 'owner' },
          { user: 'mia', access_level: 'maintainer' },
          { user: 'alice', access_level: 'developer' },
        ],
      },
      { id: 11, path: 'platform', name: 'Platform', parent: 'acme', description: 'Platform team' },
      { id: 12, path: 'edge', name: 'Edge', parent: 'acme/platform', description: 'At the edge' },
    ],
    projects: [
      {
        id: 1,
        path: 'api',
        namespace: 'acme',
        name: 'API',
        description: 'The public API',
        members: [
          { user: 'alice', access_level: 'maintainer' },
          { user: 'olaf', access_level: 'reporter' },
        ],
        pipelines: [
          {
            ref: 'main',
            user: 'mia',
            commit: {
              title: 'Retry on 429',
              message: 'Retry on 429\n',
              author_name: 'Mia',
              author_email: 'mia@acme.test',
            },
            jobs: [
              { name: 'build', stage: 'build', status: 'success' },
              { name: 'test', stage: 'test', status: 'failed', failure_reason: 'script_failure', user: 'alice' },
            ],
          },
        ],
        protected_branches: [
          {
            name: 'main',
            push_access_level: 'maintainer',
            merge_access_level: 'developer',
            allowed_to_push: [{ user: 'mia' }],
          },
        ],
        issues: [
          {
            iid: 1,
            title: 'Rate limits',
            label_events: [{ user: 'mia', action: 'add', label: { name: 'bug', color: '#ff0000' } }],
            weight_events: [{ user: 'alice', weight: 3 }],
          },
        ],
        merge_requests: [
          { iid: 1, title: 'Retry on 429', label_events: [{ user: 'alice', action: 'add', label: 'review' }] },
        ],
      },
      {
        id: 2,
        path: 'web',
        namespace: 'acme',
        name: 'Web',
        description: 'The web front end',
        default_branch: 'develop',
        request_access_enabled: false,
      },
      {
        id: 3,
        path: 'console',
        namespace: 'acme/platform',
        name: 'Console',
        description: 'The old console',
        archived: true,
      },
      {
        id: 4,
        path: 'billing',
        namespace: 'acme/platform',
        name: 'Billing',
        // An owner of a project comes back a maintainer: the forge's import never grants Owner.
        members: [{ user: 'mia', access_level: 'owner' }],
        pipelines: [
          { ref: 'main', jobs: [{ name: 'lint', status: 'success' }] },
          { ref: 'v1.2.0', tag: true, jobs: [{ name: 'release', stage: 'deploy', status: 'manual' }] },
        ],
      },
      {
        id: 5,
        path: 'gateway',
        namespace: 'acme/platform/edge',
        name: 'Gateway',
        description: 'Edge gateway',
        protected_branches: [
          {
            name: 'release/*',
            push_access_level: 'no_access',
            merge_access_level: 'maintainer',
            allow_force_push: false,
          },
        ],
        issues: [{ iid: 4, title: 'TLS 1.3 only' }],
      },
    ],
  });
}

export interface BackupSetFixture {
  /** `destination/acme/STAMP`. */
  readonly folder: string;
  readonly content: SetFileContent;
}

/**
 * Takes a set of `group` from the sandbox into `destination`: exports requested and downloaded through the client
 * (on export limits of a second, `speedUpExports`), archives checksummed, `set.json` written. Projects whose export
 * fails are the set's `missing`.
 */
export async function makeBackupSet(
  sandbox: RunningSandbox,
  destination: string,
  group = 'acme',
): Promise<BackupSetFixture> {
  await speedUpExports(sandbox.url);
  const client = new GitlabClient({
    url: sandbox.url,
    token: ADMIN_TOKEN,
    maxRequestsPerMinute: 0,
    minWriteIntervalMs: 0,
    retry: { maxAttempts: 1 },
  });
  try {
    const source = await client.groups.show(group, { with_projects: false });
    const takenAt = new Date().toISOString();
    const projects = (
      await collect(client.projects.allForGroup(source.full_path, { include_subgroups: true, with_shared: false }))
    )
      .map((project) => ({ project, path: relativeProjectPath(source.full_path, project.path_with_namespace) }))
      .sort((a, b) => (a.path < b.path ? -1 : 1));
    await client.groupTransfer.scheduleExport(source.id);
    for (const { project } of projects) await client.projectTransfer.scheduleExport(project.id);
    await sandbox.state.whenIdle();

    const folder = join(destination, source.full_path, SET_STAMP);
    await mkdir(folder, { recursive: true });
    await client.groupTransfer.downloadExport(source.id, join(folder, GROUP_ARCHIVE));
    const archives: ProjectArchive[] = [];
    const missing: MissingProject[] = [];
    for (const { project, path } of projects) {
      const status = await client.projectTransfer.exportStatus(project.id);
      if (status.export_status !== 'finished') {
        missing.push({
          id: project.id,
          path,
          reason: `its export did not finish (export_status ${status.export_status})`,
        });
        continue;
      }
      const file = projectArchiveFile(path);
      await mkdir(dirname(join(folder, file)), { recursive: true });
      await client.projectTransfer.downloadExport(project.id, join(folder, file));
      archives.push({
        id: project.id,
        path,
        name: project.name,
        file,
        ...(await sha256File(files, join(folder, file))),
      });
    }
    const content: SetFileContent = {
      version: 1,
      kind: 'forgewarden-backup-set',
      group: { id: source.id, full_path: source.full_path },
      set: SET_STAMP,
      state: missing.length > 0 ? 'partial' : 'complete',
      taken_at: takenAt,
      finished_at: new Date().toISOString(),
      group_archive: { file: GROUP_ARCHIVE, ...(await sha256File(files, join(folder, GROUP_ARCHIVE))) },
      projects: archives,
      missing,
    };
    await writeSetFile(files, folder, content);
    return { folder, content };
  } finally {
    await client.close();
  }
}

/** What the project archive carries of a project, without what an import makes anew (ids, creation time). */
export function projectContents(state: SandboxState, record: ProjectRecord) {
  const { created_at: _created, ...attributes } = archivedAttributes(state, record);
  const relations = archivedRelations(state, record);
  return {
    ...relations,
    attributes,
    project_members: relations.project_members.map(({ username, access_level }) => ({ username, access_level })),
    ci_pipelines: relations.ci_pipelines.map(({ id: _id, parent_pipeline_id: _parent, jobs, ...pipeline }) => ({
      ...pipeline,
      jobs: jobs.map(({ id: _jobId, downstream_pipeline_id: _downstream, ...job }) => job),
    })),
  };
}

/** The original's contents as the forge's import gives them back: the importer is no member, owners are maintainers. */
export function asImportedContents(state: SandboxState, record: ProjectRecord) {
  const original = projectContents(state, record);
  return {
    ...original,
    project_members: original.project_members
      .filter((member) => member.username !== 'root')
      .map((member) => ({ ...member, access_level: Math.min(member.access_level, 40) })),
  };
}
