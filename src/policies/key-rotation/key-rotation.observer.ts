import type { PolicyContext } from '../../engine/policy';
import { NotFoundError } from '../../gitlab/transport/errors';
import { isAdminView } from '../../gitlab/types/users';
import type { DeployKey } from '../../gitlab/types/keys';
import { mapLimited } from '../../engine/map-limited';
import type { KeyRotationSnapshot, ObservedDeployKey, ObservedSshKey, SshOwnerSnapshot } from './key-rotation.decide';
import { deployRotationId, loadRecord, openRotations, type RotationRecord, sshRotationId } from './key-rotation.record';
import type { KeyRotationConfig, UserRef } from './key-rotation.schema';
import { fingerprintOfPublicKey } from './openssh';
import { unusableDirectory } from './secret-file';

/**
 * Reading what key_rotation decides on: the token's user (and whether it is an administrator), the keys of each
 * configured user, the deploy keys of each configured project, and the records of rotations under way. It refuses
 * first when secrets_dir cannot hold keys: a pass that fails names the directory, and nothing is generated or
 * uploaded (the engine goes on with the other policies).
 */
export async function observeKeyRotation(config: KeyRotationConfig, context: PolicyContext): Promise<KeyRotationSnapshot> {
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
  for (const rule of config.deploy_keys) {
    // The projects' listings are read several at once and then merged in the configured order.
    const listings = await mapLimited(rule.projects, context.concurrency ?? 1, async (project) => {
      const keys: Array<DeployKey & { readonly project: typeof project }> = [];
      for await (const key of client.deployKeys.all(project)) keys.push({ ...key, project });
      return keys;
    });
    const byId = new Map<number, ObservedDeployKey>();
    for (const key of listings.flat()) {
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
  return { ssh, deploy, rotations };
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
