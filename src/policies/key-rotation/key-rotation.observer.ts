import type { PolicyContext } from '../../engine/policy';
import { NotFoundError } from '../../gitlab/transport/errors';
import { isAdminView } from '../../gitlab/types/users';
import type { DeployKey, SshKey } from '../../gitlab/types/keys';
import type { ProjectRef } from '../../config/validators';
import { selectProjects } from '../../engine/discovery';
import { observeTargets } from '../../engine/observe-targets';
import type { KeyRotationSnapshot, ObservedDeployKey, ObservedSshKey, OwnerKeys, SshOwnerSnapshot, UnreadProject } from './key-rotation.decide';
import { deployRotationId, isFinished, loadRecord, openRotations, refKey, type RotationRecord, type SshOwner, sshRotationId } from './key-rotation.record';
import type { KeyRotationConfig, SshKeysRule, UserRef } from './key-rotation.schema';
import { fingerprintOfPublicKey } from './openssh';
import { unusableDirectory } from './secret-file';

/** What a pass observed: what decide needs, and the projects whose deploy keys it read (for `plan`). */
export interface KeyRotationObservation extends KeyRotationSnapshot {
  /** Every project whose deploy keys were read, each once, in the order selected; a project gone meanwhile is left out. */
  readonly deployProjects: readonly ProjectRef[];
}

/**
 * Reading what key_rotation decides on: the token's user (and whether it is an administrator), the keys of each
 * configured user, the deploy keys of each project the `deploy_keys` entries select, the records of rotations under
 * way, and the keys of any user such a rotation concerns that no entry listed. It refuses first when secrets_dir cannot
 * hold keys: a pass that fails names the directory, and nothing is generated or uploaded (the engine goes on with the
 * other policies). Each user and each project is read on its own: one the forge refuses or fails to answer is recorded
 * as unobserved (the pass ends partial) and the others' rotations go on.
 */
export async function observeKeyRotation(config: KeyRotationConfig, context: PolicyContext): Promise<KeyRotationObservation> {
  const problem = await unusableDirectory(config.secrets_dir);
  if (problem) throw new Error(`${problem}; policy ${config.name} refuses to rotate keys until it is fixed`);
  const { client } = context;
  const me = await client.users.current();
  const admin = isAdminView(me) && me.is_admin;
  const ids = new Set(await openRotations(context.state));

  const read = await observeTargets(
    context,
    config.ssh_keys,
    (rule) => ({ target: sshTarget(rule.user === 'self' ? me.username : String(rule.user)), listed: true }),
    (rule) => readSshEntry(context, rule, me, admin),
  );
  const ssh: SshOwnerSnapshot[] = read.map((entry, index) => entry ?? { access: 'unreadable', label: labelOf(config.ssh_keys[index].user, me) });
  for (const entry of ssh) if (entry.access === 'ok') for (const key of entry.keys) ids.add(sshRotationId(entry.owner.user_id, key.id));

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
  const owners = await readOtherOwners(context, config, Object.values(rotations), ssh, me, admin);
  return { ssh, deploy, deployUnread: deployKeys.unread, owners, rotations, deployProjects: deployKeys.projects };
}

const sshTarget = (who: string): string => `SSH keys of ${who}`;

function labelOf(ref: UserRef, me: Me): string {
  return ref === 'self' ? me.username : String(ref);
}

/** One `ssh_keys` entry: its user as the forge knows it, and their keys. Anything but a 404 reaches observeTargets. */
async function readSshEntry(context: PolicyContext, rule: SshKeysRule, me: Me, admin: boolean): Promise<SshOwnerSnapshot> {
  const owner = await resolveUser(context, rule.user, me);
  if (!owner) return { access: 'unknown_user', label: String(rule.user) };
  if (!owner.self && !admin) return { access: 'needs_admin', label: owner.username };
  try {
    return { access: 'ok', owner, keys: await sshKeysOf(context, owner) };
  } catch (error) {
    // Deleted between the two reads.
    if (error instanceof NotFoundError) return { access: 'unknown_user', label: String(rule.user) };
    throw error;
  }
}

async function sshKeysOf(context: PolicyContext, owner: SshOwner): Promise<ObservedSshKey[]> {
  const keys: ObservedSshKey[] = [];
  const listing: AsyncIterable<SshKey> = owner.self ? context.client.sshKeys.all() : context.client.sshKeys.allForUser(owner.user_id);
  for await (const key of listing) {
    keys.push({ id: key.id, title: key.title, created_at: key.created_at, expires_at: key.expires_at ?? null, fingerprint: fingerprintOfPublicKey(key.key) });
  }
  return keys;
}

/**
 * The keys of each user an open SSH rotation concerns whom no entry listed this pass: a user deleted since (the forge
 * answers 404: the rotation is closed), one the file no longer names (the rotation finishes), or one whose entry could
 * not be read (not read twice). Each on its own, as the entries are.
 */
async function readOtherOwners(
  context: PolicyContext,
  config: KeyRotationConfig,
  records: readonly RotationRecord[],
  ssh: readonly SshOwnerSnapshot[],
  me: Me,
  admin: boolean,
): Promise<Record<string, OwnerKeys>> {
  const listed = new Set(ssh.flatMap((entry) => (entry.access === 'ok' ? [entry.owner.user_id] : [])));
  const unreadable = new Set(ssh.flatMap((entry) => (entry.access === 'unreadable' ? [entry.label.toLowerCase()] : [])));
  const wanted = new Map<number, SshOwner>();
  for (const record of records) {
    if (record.kind === 'ssh' && record.owner && !isFinished(record) && !listed.has(record.owner.user_id)) wanted.set(record.owner.user_id, record.owner);
  }
  const owners: Record<string, OwnerKeys> = {};
  const toRead: SshOwner[] = [];
  for (const owner of wanted.values()) {
    if (unreadable.has(owner.username.toLowerCase()) || unreadable.has(String(owner.user_id))) owners[String(owner.user_id)] = { state: 'unread', reason: 'its entry could not be read' };
    else if (owner.user_id !== me.id && !admin) owners[String(owner.user_id)] = { state: 'unread', reason: "another user's keys need an administrator's token" };
    else toRead.push(owner);
  }
  const read = await observeTargets(
    context,
    toRead,
    (owner) => ({ target: sshTarget(owner.username), listed: true }),
    async (owner): Promise<OwnerKeys> => {
      try {
        return { state: 'listed', keys: await sshKeysOf(context, { ...owner, self: owner.user_id === me.id }) };
      } catch (error) {
        if (error instanceof NotFoundError) return { state: 'gone' };
        throw error;
      }
    },
  );
  toRead.forEach((owner, index) => {
    owners[String(owner.user_id)] = read[index] ?? { state: 'unread', reason: 'the forge did not answer as expected (see the unobserved targets)' };
  });
  return owners;
}

type ListedDeployKey = DeployKey & { readonly project: ProjectRef };

/**
 * The deploy keys of each `deploy_keys` entry's projects, one list per entry, project by project in the order
 * selected (explicit ones first, then what the globs found, by path), so keys merge by id in that order. A project
 * several entries select is read once. Projects are read several at once and, in a scheduled pass, spread over the
 * interval (see TargetPace). Each on its own: a project the forge refuses (403) or answers oddly is recorded as
 * unobserved and listed among the entry's unread projects, so nothing is written there and its keys count neither as
 * there nor as gone; one that answers 404 (deleted, moved, or hidden from the token, which the forge answers alike) is
 * gone for the rotations, and, when the file names it, also recorded as unobserved, so a person sees it.
 */
async function readDeployKeys(
  config: KeyRotationConfig,
  context: PolicyContext,
): Promise<{ byEntry: ListedDeployKey[][]; unread: UnreadProject[][]; projects: ProjectRef[] }> {
  const selected = await Promise.all(config.deploy_keys.map((rule) => selectProjects(context, rule.projects, rule.include_archived)));
  const named = (project: ProjectRef): boolean => config.deploy_keys.some((rule) => rule.projects.names(project));
  const distinct = new Map<string, ProjectRef>();
  for (const project of selected.flat()) if (!distinct.has(refKey(project))) distinct.set(refKey(project), project);
  const read = await observeTargets(
    context,
    [...distinct.values()],
    (project) => ({ target: `project ${project}`, listed: named(project) }),
    async (project): Promise<DeployKey[] | 'gone'> => {
      const keys: DeployKey[] = [];
      try {
        for await (const key of context.client.deployKeys.all(project)) keys.push(key);
      } catch (error) {
        if (!(error instanceof NotFoundError)) throw error;
        if (named(project)) {
          // Named in the file: its absence is reported against it.
          context.unobserved.record(`project ${project}`, error);
        } else {
          // A project a glob found may be deleted or moved before discovery runs again; a moved one is found again.
          context.logger.warn(`project ${project} is gone (deleted or moved since discovery); left out of this pass`);
        }
        return 'gone';
      }
      return keys;
    },
  );
  const byProject = new Map([...distinct.keys()].map((key, index) => [key, read[index]]));
  const keysOf = (project: ProjectRef): DeployKey[] | undefined => {
    const found = byProject.get(refKey(project));
    return Array.isArray(found) ? found : undefined;
  };
  return {
    // Each entry's projects as it selected them (two entries may write the same project differently).
    byEntry: selected.map((projects) => projects.flatMap((project) => (keysOf(project) ?? []).map((key) => ({ ...key, project })))),
    unread: selected.map((projects) => projects.flatMap((project) => (keysOf(project) ? [] : [{ project, gone: byProject.get(refKey(project)) === 'gone' }]))),
    projects: [...distinct.values()].filter((project) => keysOf(project) !== undefined),
  };
}

type Me = Awaited<ReturnType<PolicyContext['client']['users']['current']>>;

/** `self`, an id or a username, as the forge knows it; the token's own user by any name is `self`. */
async function resolveUser(context: PolicyContext, ref: UserRef, me: Me): Promise<SshOwner | undefined> {
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
