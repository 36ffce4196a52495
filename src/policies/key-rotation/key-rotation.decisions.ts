import { type ActionParams, type Decision, type JsonValue, SKIP } from '../../engine/policy';
import { type DeployProject, refKey, type RotationRecord, type SshOwner } from './key-rotation.record';
import { durationText } from './key-rotation.timing';

/** The decisions of a rotation's steps, whatever the kind: what each says, its key, and the params its action reads. */

export const WRITE_KEY = 'write_key';
export const UPLOAD_KEY = 'upload_key';
export const ENABLE_KEY = 'enable_key';
export const VERIFY_KEY = 'verify_key';
export const RUN_ON_ROTATE = 'run_on_rotate';
export const REMOVE_OLD_KEY = 'remove_old_key';
export const CLOSE_ROTATION = 'close_rotation';

/**
 * What a rotation's steps are decided from: the rotation as recorded (its id, generation, attempt) and its premise as
 * the decision states it, so each action's precondition can read the same facts again from the forge.
 */
export interface Rotation {
  readonly id: string;
  readonly generation: number;
  readonly attempt: number;
  readonly target: string;
  readonly oldKeyId: number;
  readonly oldFingerprint: string | null;
  /** A credential on one holder: the user, or the holder as its kind names it; read again before each step. */
  readonly owner: SshOwner | null;
  readonly holder?: string | number;
}

/**
 * Rotation, generation, step and attempt: one attempt of one step runs once; a failed step is tried again as the next
 * attempt; a later generation (after a rotation was closed) has keys of its own. The first generation's keys are those
 * of the versions before generations, so their ledger entries still count.
 */
export function stepKey(rotation: Pick<Rotation, 'id' | 'generation' | 'attempt'>, step: string): string {
  return `${rotation.id}${rotation.generation > 1 ? `#${rotation.generation}` : ''}:${step}:${rotation.attempt}`;
}

/** What write_key records when a rotation starts, with the new key's path, which its plan details name. */
export type StartParams = ActionParams & { readonly path: string };

/**
 * write_key's params: the old key, who holds it, and the new key's settings. A rotation resumed from its record
 * always states its lifetime (null where keys do not expire); a new one only where they do.
 */
export function startParams(
  rotation: Pick<Rotation, 'id' | 'generation' | 'oldKeyId' | 'oldFingerprint' | 'owner' | 'holder'>,
  start: {
    kind: string;
    title: string;
    projects: readonly DeployProject[];
    path: string;
    secretsDir: string;
    keyType: string;
    grace: number;
    lifetime: number | null | undefined;
  },
): StartParams {
  return {
    rotation: rotation.id,
    generation: rotation.generation,
    kind: start.kind,
    title: start.title,
    old_key_id: rotation.oldKeyId,
    old_fingerprint: rotation.oldFingerprint,
    ...whoseParams(rotation),
    projects: projectsParam(start.projects),
    path: start.path,
    secrets_dir: start.secretsDir,
    key_type: start.keyType,
    grace_ms: start.grace,
    ...(start.lifetime !== undefined ? { lifetime_ms: start.lifetime } : {}),
  };
}

/**
 * What every step that writes to the forge rests on: the rotation, the old key as the decision saw it (and whose), which
 * its precondition reads again, and the attempt its key names (a step the forge refuses for good is decided again with
 * that same key, which the engine keeps parked).
 */
export function premiseParams(rotation: Rotation): ActionParams {
  return {
    rotation: rotation.id,
    generation: rotation.generation,
    attempt: rotation.attempt,
    old_key_id: rotation.oldKeyId,
    old_fingerprint: rotation.oldFingerprint,
    ...whoseParams(rotation),
  };
}

/** Who holds the credential, when one holder does: a user, or what its kind names. */
function whoseParams({ owner, holder }: Pick<Rotation, 'owner' | 'holder'>): ActionParams {
  return {
    ...(owner ? { user_id: owner.user_id, username: owner.username, self: owner.self } : {}),
    ...(holder !== undefined ? { holder } : {}),
  };
}

/** Projects as the action reads them back: a plain JSON list of {project, can_push}. */
export function projectsParam(projects: readonly DeployProject[]): JsonValue {
  return projects.map(({ project, can_push }) => ({ project, can_push }));
}

/**
 * Putting the new key in place: uploaded to its holder, or created on the first project that holds the old one and
 * enabled on each other one; then verified.
 */
export function placeNewKey(
  rotation: Rotation,
  fingerprint: string | null | undefined,
  lifetime: number | undefined,
  projects: readonly DeployProject[],
): Decision[] {
  const [first, ...others] = projects;
  return [
    upload(rotation, fingerprint, lifetime, first),
    ...enables(rotation, others, new Map()),
    verify(rotation, fingerprint, projects),
  ];
}

function upload(
  rotation: Rotation,
  fingerprint: string | null | undefined,
  lifetime: number | undefined,
  first: DeployProject | undefined,
): Decision {
  const what = fingerprint ? `the new public key ${fingerprint}` : 'the new public key';
  const where = first
    ? `: create it on ${first.project}, which holds old key ${rotation.oldKeyId}`
    : lifetime !== undefined
      ? `, expiring in ${durationText(lifetime)}`
      : '';
  return {
    action: UPLOAD_KEY,
    target: rotation.target,
    key: stepKey(rotation, UPLOAD_KEY),
    reason: `upload ${what}${where}`,
    params: {
      ...premiseParams(rotation),
      ...(lifetime !== undefined ? { lifetime_ms: lifetime } : {}),
      ...(first ? { project: first.project, can_push: first.can_push } : {}),
    },
  };
}

/**
 * Enabling the new key on each project that holds the old key and lacks the new one (or has it with another can_push
 * than the old key there): one action per project, each checking just before it acts that the project still holds the
 * old key, so a project a person took the old key from meanwhile is not given the new one.
 */
export function enables(
  rotation: Rotation,
  projects: readonly DeployProject[],
  newOn: ReadonlyMap<string, boolean>,
): Decision[] {
  return projects
    .filter((p) => newOn.get(refKey(p.project)) !== p.can_push)
    .map((p) => ({
      action: ENABLE_KEY,
      target: rotation.target,
      key: stepKey(rotation, `${ENABLE_KEY}:${refKey(p.project)}`),
      reason: newOn.has(refKey(p.project))
        ? `set can_push ${p.can_push} of the new key on ${p.project}, as old key ${rotation.oldKeyId} has there`
        : `enable the new key on ${p.project} (can_push ${p.can_push}), which holds old key ${rotation.oldKeyId}`,
      params: { ...premiseParams(rotation), project: p.project, can_push: p.can_push },
    }));
}

/** Removing the old key from projects that gained it after the rotation was done, where its new key is now. */
export function removeAgain(
  rotation: Rotation,
  record: RotationRecord,
  projects: readonly DeployProject[],
  complete: boolean,
): Decision {
  return {
    action: REMOVE_OLD_KEY,
    target: rotation.target,
    key: stepKey(rotation, REMOVE_OLD_KEY),
    reason: `remove old key ${rotation.oldKeyId} from ${projects.map((p) => p.project).join(', ')} again: it came back after rotation ${record.id} was done, and new key ${record.new_key_id ?? '?'} is there now`,
    params: {
      ...premiseParams(rotation),
      new_key_id: record.new_key_id,
      fingerprint: record.fingerprint,
      again: true,
      projects: projectsParam(projects),
      complete,
    },
  };
}

export function verify(
  rotation: Rotation,
  fingerprint: string | null | undefined,
  projects: readonly DeployProject[],
): Decision {
  return {
    action: VERIFY_KEY,
    target: rotation.target,
    key: stepKey(rotation, VERIFY_KEY),
    reason: `verify the forge lists ${fingerprint ?? 'the new key'}${projects.length > 0 ? ` on ${projects.map((p) => p.project).join(', ')}` : ''}`,
    params: {
      rotation: rotation.id,
      generation: rotation.generation,
      ...(projects.length > 0 ? { projects: projectsParam(projects) } : {}),
    },
  };
}

/**
 * Running on_rotate once every holder has the new key: for a key on several holders, the projects that hold the old key
 * and those that could not be read (they may hold it), which its precondition reads again; one not covered then (not
 * readable, or without the new key) holds the hook back, named in the audit trail.
 */
export function hook(
  command: string,
  env: readonly string[],
  rotation: Rotation,
  newKeyId: number | null,
  holders?: Holders,
): Decision {
  const unread = holders?.unreadable ?? [];
  const waits = unread.length > 0 ? ` once every holder has it; not readable now: ${unread.join(', ')}` : '';
  return {
    action: RUN_ON_ROTATE,
    target: rotation.target,
    key: stepKey(rotation, RUN_ON_ROTATE),
    reason: `run on_rotate for new key ${newKeyId ?? '(once uploaded)'}${waits}`,
    params: {
      rotation: rotation.id,
      generation: rotation.generation,
      command,
      env: env.join(','),
      ...(holders
        ? {
            holders: [
              ...holders.holding,
              ...unread.filter((project) => !holders.holding.some((p) => refKey(p) === refKey(project))),
            ],
          }
        : {}),
    },
  };
}

/** The holders on_rotate waits for, of a key on several: those that hold the old key, and those that could not be read. */
export interface Holders {
  readonly holding: readonly (string | number)[];
  readonly unreadable: readonly (string | number)[];
}

/** Closing a rotation whose premise the forge contradicts: only the policy's record changes; the next pass decides. */
export function close(rotation: Rotation, why: string): Decision {
  return {
    action: CLOSE_ROTATION,
    target: rotation.target,
    key: stepKey(rotation, CLOSE_ROTATION),
    reason: `close: ${why}; nothing on the forge is changed, and the next pass decides afresh`,
    params: { rotation: rotation.id, generation: rotation.generation, reason: why },
  };
}

export function skip(target: string, id: string, reason: string): Decision {
  return { action: SKIP, target, key: id, reason, params: { rotation: id } };
}

/** The rotation a decision is about; the skip of a user whose keys cannot be read is about none. */
export function rotationOf(decision: Decision): string | undefined {
  return typeof decision.params.rotation === 'string' ? decision.params.rotation : undefined;
}
