import type { PolicyContext } from '../../engine/policy';
import { NotFoundError } from '../../gitlab/transport/errors';
import { isAdminView } from '../../gitlab/types/users';
import type { DeployKey } from '../../gitlab/types/keys';
import type { ProjectRef } from '../../config/validators';
import { selectProjects } from '../../engine/discovery';
import { mapTargets } from '../../engine/map-limited';
import type { KeyRotationSnapshot, ObservedDeployKey, ObservedSshKey, SshOwnerSnapshot } from './key-rotation.decide';
import { deployRotationId, loadRecord, openRotations, type RotationRecord, sshRotationId } from './key-rotation.record';
import type { KeyRotationConfig, UserRef } from './key-rotation.schema';
import { fingerprintOfPublicKey } from './openssh';
import { unusableDirectory } from './secret-file';

/** What a pass observed: what decide needs, and the projects whose deploy keys it read (for `plan`). */
export interface KeyRotationObservation extends KeyRotationSnapshot {
  /** Every project whose deploy keys were read, each once, in the order selected; a project gone meanwhile is left out. */
  readonly deployProjects: readonly ProjectRef[];
}

/**
 * Reading what key_rotation decides on: the token's user (and whether it is an administrator), the keys of each
 * configured user, the deploy keys of each project the `deploy_keys` entries select, and the records of rotations
 * under way. It refuses first when secrets_dir cannot hold keys: a pass that fails names the directory, and nothing
 * is generated or uploaded (the engine goes on with the other policies).
 */
export async function observeKeyRotation(config: KeyRotationConfig, context: PolicyContext): Promise<KeyRotationObservation> {
  const problem = await unusableDirectory(config.secrets_dir);
  if (problem) throw new Error(`${problem}; policy ${config.name} refuses to rotate keys until it is fixed`);
  const { client } = context;
  const me = await client.users.current();
  const admin = isAdminView(me) && me.is_admin;
  const ids = new Set(await openRotations(context.state));

  const ssh: SshOwnerSnapshot[] = [];
  for (const rule of config.ssh_keys) {
    const owner = await resolveUser(context, rule.user, me);
    if (!owner) {
      ssh.push({ access: 'unknown_user', label: String(rule.user) });
      continue;
    }
    if (!owner.self && !admin) {
      ssh.push({ access: 'needs_admin', label: owner.username });
      continue;
    }
    const keys: ObservedSshKey[] = [];
    for await (const key of owner.self ? client.sshKeys.all() : client.sshKeys.allForUser(owner.user_id)) {
      keys.push({ id: key.id, title: key.title, created_at: key.created_at, expires_at: key.expires_at ?? null, fingerprint: fingerprintOfPublicKey(key.key) });
      ids.add(sshRotationId(owner.user_id, key.id));
    }
    ssh.push({ access: 'ok', owner, keys });
  }

  const deploy: ObservedDeployKey[][] = [];
  const deployKeys = await readDeployKeys(config, context);
  for (const keys of deployKeys.byEntry) {
    const byId = new Map<number, ObservedDeployKey>();
    for (const key of keys) {
      const known = byId.get(key.id);
      const link = { project: key.project, can_push: key.can_push };
      byId.set(key.id, known ? { ...known, projects: [...known.projects, link] } : { id: key.id, title: key.title, created_at: key.created_at, fingerprint: fingerprintOfPublicKey(key.key), projects: [link] });
      ids.add(deployRotationId(key.id));
    }
    deploy.push([...byId.values()]);
  }

  const rotations: Record<string, RotationRecord> = {};
  for (const id of [...ids].sort()) {
    const record = await loadRecord(context.state, id);
    if (record) rotations[id] = record;
  }
  return { ssh, deploy, rotations, deployProjects: deployKeys.projects };
}

type ListedDeployKey = DeployKey & { readonly project: ProjectRef };

/**
 * The deploy keys of each `deploy_keys` entry's projects, one list per entry, project by project in the order
 * selected (explicit ones first, then what the globs found, by path), so keys merge by id in that order. A project
 * several entries select is read once. Projects are read several at once and, in a scheduled pass, spread over the
 * interval (see TargetPace).
 */
async function readDeployKeys(
  config: KeyRotationConfig,
  context: PolicyContext,
): Promise<{ byEntry: ListedDeployKey[][]; projects: ProjectRef[] }> {
  const selected = await Promise.all(config.deploy_keys.map((rule) => selectProjects(context, rule.projects, rule.include_archived)));
  const listed = new Set(config.deploy_keys.flatMap((rule) => rule.projects.explicit.map((item) => refKey(item.kind === 'id' ? item.id : item.path))));
  const distinct = new Map<string, ProjectRef>();
  for (const project of selected.flat()) if (!distinct.has(refKey(project))) distinct.set(refKey(project), project);
  const read = await mapTargets(context, [...distinct.values()], async (project) => {
    const keys: DeployKey[] = [];
    try {
      for await (const key of context.client.deployKeys.all(project)) keys.push(key);
    } catch (error) {
      // A project a glob found may be deleted or moved before discovery runs again: it drops out with one line, and a
      // moved one is found again under its new path. A project the file names itself fails the pass, to be seen.
      if (!(error instanceof NotFoundError) || listed.has(refKey(project))) throw error;
      context.logger.warn(`project ${project} is gone (deleted or moved since discovery); left out of this pass`);
      return undefined;
    }
    return keys;
  });
  const byProject = new Map([...distinct.keys()].map((key, index) => [key, read[index]]));
  return {
    // Each entry's projects as it selected them (two entries may write the same project differently).
    byEntry: selected.map((projects) => projects.flatMap((project) => (byProject.get(refKey(project)) ?? []).map((key) => ({ ...key, project })))),
    projects: [...distinct.values()].filter((project) => byProject.get(refKey(project)) !== undefined),
  };
}

/** Projects by id or path as one key: the forge routes paths regardless of case. */
function refKey(project: ProjectRef): string {
  return String(project).toLowerCase();
}

type Me = Awaited<ReturnType<PolicyContext['client']['users']['current']>>;

/** `self`, an id or a username, as the forge knows it; the token's own user by any name is `self`. */
async function resolveUser(context: PolicyContext, ref: UserRef, me: Me): Promise<{ user_id: number; username: string; self: boolean } | undefined> {
  if (ref === 'self' || ref === me.id || (typeof ref === 'string' && ref.toLowerCase() === me.username.toLowerCase())) {
    return { user_id: me.id, username: me.username, self: true };
  }
  if (typeof ref === 'number') {
    try {
      const user = await context.client.users.show(ref);
      return { user_id: user.id, username: user.username, self: false };
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }
  // The forge matches `username` exactly and case-insensitively; one page is all there can be.
  for await (const user of context.client.users.all({ username: ref }, { maxPages: 1, onPageLimit: 'stop' })) {
    if (user.username.toLowerCase() === ref.toLowerCase()) return { user_id: user.id, username: user.username, self: false };
  }
  return undefined;
}
