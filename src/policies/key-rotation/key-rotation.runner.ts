import { defineAction } from '../../engine/action-params';
import type { GitlabClient } from '../../gitlab';
import type { PolicyRunner, TargetProbe } from '../../engine/policy';
import { onePage, readFirstPage, selectionProbes } from '../../engine/probe';
import { count } from '../../engine/words';
import {
  closeRotation,
  enableKey,
  enablePrecondition,
  hookPrecondition,
  removeOldKey,
  removePrecondition,
  runOnRotate,
  uploadKey,
  uploadPrecondition,
  verifyKey,
  writeKey,
} from './key-rotation.actions';
import {
  CLOSE_ROTATION,
  decideKeyRotation,
  ENABLE_KEY,
  nextKeyRotationPass,
  REMOVE_OLD_KEY,
  RUN_ON_ROTATE,
  UPLOAD_KEY,
  VERIFY_KEY,
  WRITE_KEY,
} from './key-rotation.decide';
import { type KeyRotationObservation, observeKeyRotation } from './key-rotation.observer';
import { unusableDirectory } from './secret-file';
import { type KeyRotationConfig, keyRotationPolicy } from './key-rotation.schema';

/**
 * The key_rotation policy as the engine runs it: every `interval`, plus a pass when an old key's grace period ends.
 * Each step of a rotation is its own action; the executor runs each attempt of a step once (see key-rotation.record.ts).
 * Every step that gives or takes access re-reads the forge just before it acts (its precondition): the new key goes
 * only where the old key still is, and the old key goes only while the new key is where it must be.
 */
export const keyRotationRunner: PolicyRunner<KeyRotationConfig, KeyRotationObservation> = {
  definition: keyRotationPolicy,
  trigger: (config) => ({ every: config.interval }),
  observe: observeKeyRotation,
  decide: decideKeyRotation,
  nextPass: nextKeyRotationPass,
  actions: {
    [WRITE_KEY]: defineAction({ read: (params) => params, unchecked: 'it writes a new private key into secrets_dir; nothing on the forge changes', run: writeKey }),
    // The user (the project) still holds the old key: a person who removed it may have meant to take the access away.
    [UPLOAD_KEY]: defineAction({ read: (params) => params, precondition: uploadPrecondition, run: uploadKey }),
    [ENABLE_KEY]: defineAction({ read: (params) => params, precondition: enablePrecondition, run: enableKey }),
    [VERIFY_KEY]: defineAction({ read: (params) => params, unchecked: 'it reads the forge and records what it lists; nothing on the forge changes', run: verifyKey }),
    // The new key is still listed as recorded: consumers are not handed a key a person deleted from the forge.
    [RUN_ON_ROTATE]: defineAction({ read: (params) => params, precondition: hookPrecondition, run: runOnRotate }),
    // The new key is listed (id, fingerprint, can_push) wherever the old key is removed from, and the old id is still the old key.
    [REMOVE_OLD_KEY]: defineAction({ read: (params) => params, precondition: removePrecondition, run: removeOldKey }),
    [CLOSE_ROTATION]: defineAction({
      read: (params) => params,
      unchecked: "it changes only the policy's own state: the rotation's record in Redis, and its key file in secrets_dir, moved aside; nothing on the forge changes",
      run: closeRotation,
    }),
  },
  summarize: (config, snapshot) => {
    const ssh = snapshot.ssh.reduce((sum, owner) => sum + (owner.access === 'ok' ? owner.keys.length : 0), 0);
    const deploy = snapshot.deploy.reduce((sum, keys) => sum + keys.length, 0);
    return `${count(ssh, 'SSH key')} of ${count(snapshot.ssh.length, 'user')}, ${count(deploy, 'deploy key')}`;
  },
  // Only where globs or excludes decide which projects these are: a list written out needs no echo.
  covered: (config, snapshot) =>
    config.deploy_keys.some((entry) => entry.projects.globs.length + entry.projects.excludes.length > 0)
      ? { projects: snapshot.deployProjects.map((project) => String(project)) }
      : {},
  needsAdministrator: (config) => {
    const others = config.ssh_keys.filter((entry) => entry.user !== 'self').map((entry) => String(entry.user));
    return others.length === 0 ? undefined : `it rotates the SSH keys of ${others.join(', ')}, which only an administrator's token may`;
  },
  probes: (config) => [
    {
      target: `secrets_dir ${config.secrets_dir}`,
      needs: "a folder the daemon's user may write",
      read: async () => {
        const problem = await unusableDirectory(config.secrets_dir);
        // The target names the folder already: `secrets_dir /x: does not exist`.
        const named = `secrets_dir ${config.secrets_dir} `;
        if (problem) throw new Error(problem.startsWith(named) ? problem.slice(named.length) : problem);
      },
    },
    ...config.ssh_keys.map((entry) => ({
      target: entry.user === 'self' ? "the token's user's SSH keys" : `SSH keys of user ${entry.user}`,
      needs: entry.user === 'self' ? 'the api scope' : "an administrator's token",
      read: (client: GitlabClient) =>
        readFirstPage(entry.user === 'self' ? client.sshKeys.all(onePage()) : client.sshKeys.allForUser(entry.user, onePage())),
    })),
    ...uniqueTargets(
      config.deploy_keys.flatMap((entry) =>
        selectionProbes(entry.projects, {
          what: 'deploy keys',
          needs: 'Maintainer role or higher',
          read: (client, project) => readFirstPage(client.deployKeys.all(project, onePage())),
        }),
      ),
    ),
  ],
  limits: (config) => ({ actionsPerPass: config.max_actions_per_run }),
  withFolders: (config, folder) => ({ ...config, secrets_dir: folder('secrets_dir') }),
};

/** Each probe once: a project (or a glob's group) several `deploy_keys` entries name is probed once, where first named. */
function uniqueTargets(probes: readonly TargetProbe[]): TargetProbe[] {
  const seen = new Set<string>();
  return probes.filter((probe) => {
    if (seen.has(probe.target)) return false;
    seen.add(probe.target);
    return true;
  });
}
