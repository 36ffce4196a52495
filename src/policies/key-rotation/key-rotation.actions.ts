import { execFile } from 'node:child_process';
import { readFile, rename, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { param, readParams } from '../../engine/action-params';
import { readJsonObject } from '../../engine/json';
import type { ActionParams, ActionResult, PolicyContext } from '../../engine/policy';
import { ApiError, ForbiddenError, NotFoundError, ValidationError } from '../../gitlab/transport/errors';
import {
  differs,
  generationOf,
  isFinished,
  loadRecord,
  markOpen,
  placedOn,
  refKey,
  type RotationRecord,
  saveRecord,
  type Step,
  STEPS,
} from './key-rotation.record';
import { fingerprintOfPublicKey, generateOpenSshKeyPair, KEY_TYPES, readOpenSshPrivateKey } from './openssh';
import { ensurePrivateDirectory, isCode, unusableDirectory, writeFileAtomic } from './secret-file';
import { redactor } from '../../logging/redact';

const POLICY = 'key_rotation';

/**
 * The effects of each rotation step, and the preconditions of the steps that change what the forge grants. Every step
 * re-reads its record, checks that the rotation is at the step (and generation) it continues, counts the attempt
 * (before touching anything, so an interrupted attempt is followed by a new one) and records its result before
 * returning. Errors name paths, ids and fingerprints, never key material; the forge's refusals reach the executor
 * as they are (a 403 is parked there), with the record's last_error naming the request.
 */

/** How long on_rotate may run before it counts as failed. */
export const ON_ROTATE_TIMEOUT_MS = 5 * 60_000;

/** A step decided in the same pass after one that did not complete: it does nothing, and the next pass retries both. */
export class StepNotReadyError extends Error {}

/** A failure the step has already written into the record (it went back a step): the record is not saved again. */
class RecordedError extends Error {}

/**
 * planned → key_written: the private key is on disk (0600) and its fingerprint recorded before anything is uploaded.
 * A key file already at the rotation's path is never replaced: it was written by an earlier attempt whose record was
 * lost (Redis lost its data, or the process died before recording it), and its public half may be on the forge
 * already. It is adopted instead, and the upload then finds that key on the forge rather than uploading another. (The
 * file of a closed rotation is not there any more: closing moves it aside.)
 */
export async function writeKey(params: ActionParams, context: PolicyContext): Promise<ActionResult> {
  const { rotation: id, secrets_dir: secretsDir, generation = 1 } = readParams(POLICY, writeSchema, params);
  const existing = await loadRecord(context.state, id);
  const current = existing ? generationOf(existing) : undefined;
  if (existing && current !== undefined && current > generation) return { outcome: 'stale', detail: `rotation ${id} is at generation ${current} now` };
  if (existing && current !== undefined && current < generation && !isFinished(existing)) {
    return { outcome: 'stale', detail: `generation ${current} of rotation ${id} is still open (at ${existing.step})` };
  }
  const resuming = existing !== undefined && current === generation;
  // A key whose fingerprint is recorded may already be on the forge: its file is never replaced.
  if (resuming && existing.step !== 'planned') return { detail: `already written: ${existing.fingerprint ?? '?'}` };
  const problem = await unusableDirectory(secretsDir);
  if (problem) throw new Error(`${problem}; not rotating`);
  // A first attempt records what its parameters say; a later one has it all in its record already.
  const planned: RotationRecord = resuming ? { ...existing, attempt: existing.attempt + 1 } : newRecord(id, readParams(POLICY, startSchema, params), context.now, generation);
  const { path } = planned;
  await saveRecord(context.state, planned);
  await markOpen(context.state, id, true);
  try {
    await ensurePrivateDirectory(dirname(path));
    // Written before the records were dropped for another or a reset forge: that forge's key, kept aside, not adopted.
    const modifiedMs = context.forgeChangedAt ? (await stat(path).catch(() => undefined))?.mtimeMs : undefined;
    if (modifiedMs !== undefined && modifiedMs < (context.forgeChangedAt?.getTime() ?? 0)) await moveAside(path, context.now);
    const onDisk = await keyFileAt(path);
    if (onDisk) {
      await saveRecord(context.state, { ...planned, step: 'key_written', fingerprint: onDisk.fingerprint, last_error: null });
      return { detail: `adopted the ${onDisk.type} key ${onDisk.fingerprint} already at ${path}` };
    }
    const pair = generateOpenSshKeyPair(planned.key_type, `forgewarden:${id}`);
    // Private half first: a public key must never exist without it. The public key file is a convenience.
    await writeFileAtomic(path, pair.privateKey, 0o600);
    await writeFileAtomic(`${path}.pub`, `${pair.publicKey}\n`, 0o644);
    await saveRecord(context.state, { ...planned, step: 'key_written', fingerprint: pair.fingerprint, last_error: null });
    return { detail: `${planned.key_type} key ${pair.fingerprint} written to ${path}` };
  } catch (error) {
    await saveRecord(context.state, { ...planned, last_error: message(error) });
    throw error;
  }
}

/**
 * key_written → uploaded. The key uploaded is the one read back from the file on disk; a key the forge already
 * lists with the recorded fingerprint (an upload whose answer was lost) is adopted, never uploaded twice. A deploy key
 * is created on one project (the first that holds the old key); enable_key puts it on the others.
 */
export async function uploadKey(params: ActionParams, context: PolicyContext): Promise<ActionResult> {
  const read = readParams(POLICY, uploadSchema, params);
  const started = await begin(context, read, ['key_written']);
  if ('already' in started) return started.already;
  const record = started.record;
  return recording(context, record, async () => {
    const publicKey = await publicKeyOnDisk(context, record);
    if (record.kind === 'ssh') {
      const lifetime = read.lifetime_ms ?? record.lifetime_ms;
      if (lifetime === null) throw new TypeError(`key_rotation: no lifetime for the new key of rotation ${record.id}`);
      const { id, adopted, expiresAt } = await uploadSshKey(context, record, publicKey, lifetime);
      await saveRecord(context.state, { ...record, step: 'uploaded', new_key_id: id, expires_at: expiresAt, last_error: null });
      return { detail: `${adopted ? 'adopted key already on the forge' : 'uploaded'}: key ${id} ${record.fingerprint ?? ''}, expires ${expiresAt ?? 'never'}` };
    }
    const where = deployTarget(read, record);
    const { id, adopted } = await uploadDeployKey(context, record, publicKey, where);
    const placed = [...placedOn(record), refKey(where.project)];
    await saveRecord(context.state, { ...record, step: 'uploaded', new_key_id: id, new_key_on: [...new Set(placed)], last_error: null });
    return { detail: `${adopted ? 'adopted deploy key already on the forge' : 'created deploy key'} ${id} ${record.fingerprint ?? ''} on ${where.project}` };
  }, read.attempt);
}

/**
 * Puts the new deploy key on one more project that holds the old key (enabled by id, with the old key's can_push
 * there), during the rotation or after it was verified: a project that gained the old key meanwhile gets the new one.
 */
export async function enableKey(params: ActionParams, context: PolicyContext): Promise<ActionResult> {
  const read = readParams(POLICY, enableSchema, params);
  const started = await begin(context, read, ['uploaded', 'verified', 'hooked']);
  if ('already' in started) return started.already;
  const record = started.record;
  const newKeyId = record.new_key_id;
  if (newKeyId === null) throw new StepNotReadyError(`not run: rotation ${record.id} has no new key id yet`);
  return recording(context, record, async () => {
    const { deployKeys } = context.client;
    let listed = await findDeployKey(context, read.project, record);
    const enabled = !listed;
    if (!listed) {
      await deployKeys.enable(read.project, newKeyId);
      listed = await findDeployKey(context, read.project, record);
    }
    if (listed && listed.can_push !== read.can_push) await deployKeys.edit(read.project, newKeyId, { can_push: read.can_push });
    const placed = new Set([...placedOn(record), refKey(read.project)]);
    await saveRecord(context.state, { ...record, new_key_on: [...placed], last_error: null });
    return { detail: `${enabled ? 'enabled' : 'already enabled:'} new key ${newKeyId} on ${read.project} (can_push ${read.can_push})` };
  }, read.attempt);
}

/**
 * uploaded → verified: the forge lists the new key (the recorded id and fingerprint), for a deploy key on every project
 * of the decision that still holds the old key, with the old key's can_push there; the grace period starts. Where it is
 * missing the rotation stays where it is: the next pass enables it where it never was, and closes the rotation where
 * a person removed it.
 */
export async function verifyKey(params: ActionParams, context: PolicyContext): Promise<ActionResult> {
  const read = readParams(POLICY, verifySchema, params);
  const started = await begin(context, read, ['uploaded']);
  if ('already' in started) return started.already;
  const record = started.record;
  return recording(context, record, async () => {
    const found = record.kind === 'ssh' ? await sshNewKeyMissing(context, record) : await deployNewKeyMissing(context, record, read.projects ?? record.projects);
    if (found.missing.length > 0) {
      await saveRecord(context.state, { ...record, last_error: `not listed: ${found.missing.join(', ')}` });
      throw new RecordedError(`the forge does not list new key ${record.new_key_id ?? '?'} ${record.fingerprint ?? ''} (${found.missing.join(', ')}); the next pass looks again`);
    }
    await saveRecord(context.state, {
      ...record,
      step: 'verified',
      verified_at: context.now.toISOString(),
      ...(record.kind === 'deploy' ? { new_key_on: [...new Set([...placedOn(record), ...found.on])] } : {}),
      last_error: null,
    });
    return { detail: `the forge lists key ${record.new_key_id ?? '?'} ${record.fingerprint ?? ''}; old key ${record.old_key_id} stays until ${new Date(context.now.getTime() + record.grace_ms).toISOString()}` };
  });
}

/**
 * verified → hooked: on_rotate ran with the new key's path, title and id; a failure is retried next pass. That it ran
 * is also written beside the key file (`<path>.on_rotate`, with the key's fingerprint), where it outlives Redis: the
 * forge cannot show that a hook ran, and a rotation taken up again after Redis lost its records would otherwise run
 * it a second time for the same key.
 */
export async function runOnRotate(params: ActionParams, context: PolicyContext): Promise<ActionResult> {
  const read = readParams(POLICY, runOnRotateSchema, params);
  const started = await begin(context, read, ['verified']);
  if ('already' in started) return started.already;
  const record = started.record;
  const ran = await hookRanFor(record);
  if (ran) {
    await saveRecord(context.state, { ...record, step: 'hooked', last_error: null });
    return { detail: `on_rotate already ran for key ${record.fingerprint ?? '?'} at ${ran} (recorded in ${hookMarkerPath(record.path)}); not run again` };
  }
  const passed = read.env ? read.env.split(',') : [];
  const failure = await runCommand(read.command, passed, {
    FORGEWARDEN_KEY_PATH: record.path,
    FORGEWARDEN_PUBLIC_KEY_PATH: `${record.path}.pub`,
    FORGEWARDEN_KEY_TITLE: record.title,
    FORGEWARDEN_KEY_ID: String(record.new_key_id ?? ''),
    FORGEWARDEN_KEY_FINGERPRINT: record.fingerprint ?? '',
    FORGEWARDEN_OLD_KEY_ID: String(record.old_key_id),
  });
  if (failure) {
    await saveRecord(context.state, { ...record, last_error: `on_rotate ${failure}` });
    throw new Error(`on_rotate ${failure}; retried next pass; the new key stays at ${record.path} and the old key is kept`);
  }
  // The file first: a crash between the two leaves the record at verified, and the next pass finds the file.
  await writeFileAtomic(hookMarkerPath(record.path), `${JSON.stringify({ fingerprint: record.fingerprint, new_key_id: record.new_key_id, ran_at: context.now.toISOString() })}\n`, 0o600);
  await saveRecord(context.state, { ...record, step: 'hooked', last_error: null });
  return { detail: `on_rotate ran for key ${record.new_key_id ?? '?'}` };
}

/** Where the fact that on_rotate ran for a rotation's key is kept: beside its key file. */
function hookMarkerPath(keyPath: string): string {
  return `${keyPath}.on_rotate`;
}

/** When on_rotate ran for this very key (the marker's fingerprint is the record's), or undefined. */
async function hookRanFor(record: RotationRecord): Promise<string | undefined> {
  if (!record.fingerprint) return undefined;
  let text: string;
  try {
    text = await readFile(hookMarkerPath(record.path), 'utf8');
  } catch (error) {
    if (isCode(error, 'ENOENT')) return undefined;
    throw error;
  }
  const marker = readJsonObject(text);
  // Another key's marker (a closed rotation's, at the same path) or an unreadable one: the hook has not run for this key.
  return marker?.fingerprint === record.fingerprint && typeof marker.ran_at === 'string' ? marker.ran_at : undefined;
}

/**
 * verified (or hooked) → done: the old key goes, from the user or from the projects the decision found it on. When
 * some selected project could not be read (`complete` false), it may still hold the old key: the rotation stays open,
 * and a later pass that reads it gives it the new key and takes the old one.
 */
export async function removeOldKey(params: ActionParams, context: PolicyContext): Promise<ActionResult> {
  const read = readParams(POLICY, removeSchema, params);
  // After on_rotate ran, when the policy has one; a rotation verified before on_rotate was configured may go as it is.
  const started = await begin(context, read, read.after_hook === true ? ['hooked'] : ['verified', 'hooked']);
  if ('already' in started) return started.already;
  const record = started.record;
  // Defence in depth: decide checked both, from a snapshot that may be old.
  const verifiedAt = Date.parse(record.verified_at ?? '');
  if (Number.isNaN(verifiedAt) || context.now.getTime() < verifiedAt + record.grace_ms) {
    throw new StepNotReadyError(`not run: the grace period of rotation ${record.id} has not passed`);
  }
  const gone: string[] = [];
  const projects = read.projects ?? record.projects;
  await recording(context, record, async () => {
    if (record.kind === 'ssh') {
      const owner = ownerOf(record);
      await ignoreNotFound(() => (owner.self ? context.client.sshKeys.remove(record.old_key_id) : context.client.sshKeys.removeForUser(owner.user_id, record.old_key_id)), () => gone.push('user'));
    } else {
      for (const { project } of projects) {
        await ignoreNotFound(() => context.client.deployKeys.remove(project, record.old_key_id), () => gone.push(String(project)));
      }
    }
  }, read.attempt);
  const already = gone.length > 0 ? ` (already gone: ${gone.join(', ')})` : '';
  if (record.kind === 'deploy' && read.complete === false) {
    await saveRecord(context.state, { ...record, last_error: null });
    const from = projects.map((p) => p.project).join(', ');
    return { detail: `old key ${record.old_key_id} removed from ${from || 'no project'}${already}; the rotation stays open until every selected project can be read` };
  }
  await saveRecord(context.state, { ...record, step: 'done', removed_at: context.now.toISOString(), last_error: null });
  await markOpen(context.state, record.id, false);
  return { detail: `old key ${record.old_key_id} removed${record.kind === 'deploy' && projects.length > 0 ? ` from ${projects.map((p) => p.project).join(', ')}` : ''}${already}` };
}

/**
 * Any open step → closed: the forge contradicts what the rotation rests on (see decide), so it does nothing more and
 * the key is decided afresh. Only the policy's own state changes: the record, and the private key file, which is moved
 * aside (renamed with a suffix, keeping its 0600) before the record says closed, so that no later rotation at the same
 * path adopts a key whose public half a person deleted, even after Redis lost the record.
 */
export async function closeRotation(params: ActionParams, context: PolicyContext): Promise<ActionResult> {
  const read = readParams(POLICY, closeSchema, params);
  const record = await loadRecord(context.state, read.rotation);
  if (!record) return { detail: `rotation ${read.rotation} has no record; nothing to close` };
  const generation = read.generation ?? 1;
  if (generationOf(record) !== generation || isFinished(record)) {
    return { outcome: 'stale', detail: `rotation ${record.id} is at generation ${generationOf(record)}, ${record.step}; nothing to close` };
  }
  const aside = await moveAside(record.path, context.now);
  await saveRecord(context.state, { ...record, step: 'closed', attempt: record.attempt + 1, closed_at: context.now.toISOString(), closed_reason: read.reason });
  await markOpen(context.state, record.id, false);
  return { detail: `rotation ${record.id} closed: ${read.reason}${aside ? `; its key file moved to ${aside}` : ''}` };
}

/**
 * The precondition of upload_key: the user (the project) still holds the old key the decision rests on, read now. A
 * person who removed it meanwhile may have meant to take that access away: no new key is given in its place.
 */
export async function uploadPrecondition(params: ActionParams, context: PolicyContext): Promise<string | undefined> {
  const read = readParams(POLICY, uploadSchema, params);
  const record = await openRecord(context, read);
  if (!record) return undefined;
  if (record.kind === 'ssh') return sshOldKeyHeld(context, record, 'no new key is uploaded');
  return deployOldKeyHeld(context, record, deployTarget(read, record).project, 'the new key is not created there');
}

/** The precondition of enable_key: the project still holds the old key, read now. */
export async function enablePrecondition(params: ActionParams, context: PolicyContext): Promise<string | undefined> {
  const read = readParams(POLICY, enableSchema, params);
  const record = await openRecord(context, read);
  if (!record) return undefined;
  return deployOldKeyHeld(context, record, read.project, 'the new key is not enabled there');
}

/**
 * The precondition of run_on_rotate: the new key is still listed as recorded (for a deploy key, on each project the bot
 * put it on that still holds the old key). Handing consumers a key a person deleted from the forge would switch them
 * to a key that opens nothing.
 */
export async function hookPrecondition(params: ActionParams, context: PolicyContext): Promise<string | undefined> {
  const read = readParams(POLICY, runOnRotateSchema, params);
  const record = await openRecord(context, read);
  if (!record || record.new_key_id === null) return undefined;
  const found = record.kind === 'ssh' ? await sshNewKeyMissing(context, record) : await deployNewKeyMissing(context, record, []);
  return found.missing.length > 0 ? `new key ${record.new_key_id} is not listed on ${found.missing.join(', ')}: on_rotate is not run with it` : undefined;
}

/**
 * The precondition of remove_old_key: the new key is listed with the recorded id and fingerprint (for a deploy key, on
 * every project of the decision that holds the old key, with the old key's can_push there), and the key with the old id
 * is still the old key; all read now. Otherwise removing it could leave the user or a project without a working key.
 */
export async function removePrecondition(params: ActionParams, context: PolicyContext): Promise<string | undefined> {
  const read = readParams(POLICY, removeSchema, params);
  const record = await openRecord(context, read);
  if (!record || record.new_key_id === null) return undefined;
  if (record.kind === 'ssh') {
    const keys = await userKeys(context, record);
    const old = keys.find((key) => key.id === record.old_key_id);
    if (old && differs(old.fingerprint, record.old_fingerprint)) return `key ${record.old_key_id} of ${ownerOf(record).username} is another key now (${old.fingerprint ?? '?'}): not removed`;
    const found = newKeyIn(keys, record);
    return found ? `${found} for ${ownerOf(record).username}: old key ${record.old_key_id} is kept` : undefined;
  }
  for (const { project } of read.projects ?? record.projects) {
    const keys = await projectKeys(context, project);
    if (!keys) continue;
    const old = keys.find((key) => key.id === record.old_key_id);
    if (!old) continue;
    if (differs(old.fingerprint, record.old_fingerprint)) return `deploy key ${record.old_key_id} on ${project} is another key now (${old.fingerprint ?? '?'}): not removed`;
    const problem = newKeyIn(keys, record);
    if (problem) return `${problem} on ${project}, which holds old key ${record.old_key_id}: the old key is kept`;
    const fresh = keys.find((key) => key.id === record.new_key_id);
    if (fresh && fresh.can_push !== old.can_push) return `new key ${record.new_key_id} on ${project} has can_push ${fresh.can_push}, old key ${record.old_key_id} ${old.can_push}: the old key is kept`;
  }
  return undefined;
}

/**
 * The record an action's precondition checks against: undefined when there is none yet, or it is at another generation
 * or finished; the step itself then says why it does nothing (begin), so the precondition does not guess.
 */
async function openRecord(context: PolicyContext, read: { rotation: string; generation?: number }): Promise<RotationRecord | undefined> {
  const record = await loadRecord(context.state, read.rotation);
  if (!record || generationOf(record) !== (read.generation ?? 1) || isFinished(record)) return undefined;
  return record;
}

/** A user's SSH keys as the forge lists them now, with fingerprints. A 404 (user deleted) reaches the caller. */
async function userKeys(context: PolicyContext, record: RotationRecord): Promise<Array<{ id: number; fingerprint: string | undefined }>> {
  const owner = ownerOf(record);
  const keys: Array<{ id: number; fingerprint: string | undefined }> = [];
  for await (const key of owner.self ? context.client.sshKeys.all() : context.client.sshKeys.allForUser(owner.user_id)) {
    keys.push({ id: key.id, fingerprint: fingerprintOfPublicKey(key.key) });
  }
  return keys;
}

/** A project's deploy keys as the forge lists them now; undefined when the project is gone (404). */
async function projectKeys(context: PolicyContext, project: string | number): Promise<Array<{ id: number; fingerprint: string | undefined; can_push: boolean }> | undefined> {
  const keys: Array<{ id: number; fingerprint: string | undefined; can_push: boolean }> = [];
  try {
    for await (const key of context.client.deployKeys.all(project)) keys.push({ id: key.id, fingerprint: fingerprintOfPublicKey(key.key), can_push: key.can_push });
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
  return keys;
}

async function sshOldKeyHeld(context: PolicyContext, record: RotationRecord, consequence: string): Promise<string | undefined> {
  const keys = await userKeys(context, record);
  const old = keys.find((key) => key.id === record.old_key_id);
  const whose = ownerOf(record).username;
  if (!old) return `old key ${record.old_key_id} is gone from the keys of ${whose}: ${consequence}`;
  if (differs(old.fingerprint, record.old_fingerprint)) return `key ${record.old_key_id} of ${whose} is another key now (${old.fingerprint ?? '?'}): ${consequence}`;
  return undefined;
}

/** Whether `project` holds the old key now; a 404 (project gone) reaches the executor as the target gone. */
async function deployOldKeyHeld(context: PolicyContext, record: RotationRecord, project: string | number, consequence: string): Promise<string | undefined> {
  const keys: Array<{ id: number; fingerprint: string | undefined }> = [];
  for await (const key of context.client.deployKeys.all(project)) keys.push({ id: key.id, fingerprint: fingerprintOfPublicKey(key.key) });
  const old = keys.find((key) => key.id === record.old_key_id);
  if (!old) return `${project} no longer holds old key ${record.old_key_id}: ${consequence}`;
  if (differs(old.fingerprint, record.old_fingerprint)) return `deploy key ${record.old_key_id} on ${project} is another key now (${old.fingerprint ?? '?'}): ${consequence}`;
  return undefined;
}

/** What is wrong with the new key among `keys`: `new key 51 is not listed`, another key under its id; or undefined. */
function newKeyIn(keys: ReadonlyArray<{ id: number; fingerprint: string | undefined }>, record: RotationRecord): string | undefined {
  const fresh = keys.find((key) => key.id === record.new_key_id);
  if (!fresh) return `new key ${record.new_key_id ?? '?'} is not listed`;
  if (differs(fresh.fingerprint, record.fingerprint)) return `key ${record.new_key_id ?? '?'} is not the new key ${record.fingerprint ?? '?'} (it is ${fresh.fingerprint ?? '?'})`;
  return undefined;
}

/** Where an SSH rotation's new key is not listed as recorded: `user`, or nothing. */
async function sshNewKeyMissing(context: PolicyContext, record: RotationRecord): Promise<{ missing: string[]; on: string[] }> {
  return newKeyIn(await userKeys(context, record), record) ? { missing: ['user'], on: [] } : { missing: [], on: [] };
}

/**
 * Where a deploy rotation's new key is not listed as recorded: each of `projects`, and each project the bot put it on,
 * that holds the old key now and lacks the new key (or has it with another can_push than the old key there); or
 * everywhere, when no project lists it. `on`: the projects that list it. A project gone (404) counts for neither.
 */
async function deployNewKeyMissing(context: PolicyContext, record: RotationRecord, projects: ReadonlyArray<{ project: string | number }>): Promise<{ missing: string[]; on: string[] }> {
  const wanted = new Map<string, string | number>();
  for (const { project } of projects) wanted.set(refKey(project), project);
  for (const ref of placedOn(record)) if (!wanted.has(ref)) wanted.set(ref, ref);
  const missing: string[] = [];
  const on: string[] = [];
  for (const [ref, project] of wanted) {
    const keys = await projectKeys(context, project);
    if (!keys) continue;
    const fresh = keys.find((key) => key.id === record.new_key_id && !differs(key.fingerprint, record.fingerprint));
    if (fresh) on.push(ref);
    const old = keys.find((key) => key.id === record.old_key_id);
    if (old && (!fresh || fresh.can_push !== old.can_push)) missing.push(String(project));
  }
  if (on.length === 0 && missing.length === 0) missing.push('every project');
  return { missing, on };
}

/** The project an upload creates a deploy key on, as decided; earlier versions' params name none: the first recorded. */
function deployTarget(read: { project?: string | number; can_push?: boolean }, record: RotationRecord): { project: string | number; can_push: boolean } {
  if (read.project !== undefined) return { project: read.project, can_push: read.can_push ?? false };
  const [first] = record.projects;
  if (!first) throw new Error(`rotation ${record.id} lists no project`);
  return first;
}

/**
 * Runs a step's forge calls, recording a failure in the record before it reaches the executor. A final refusal (403,
 * 400/422, 405) did nothing, and the same answer would come next pass: the record goes back to the attempt the refused
 * decision's key names (`decided`), so the next pass decides that same key and the executor keeps it parked (with
 * backoff) instead of sending it again.
 */
async function recording(context: PolicyContext, record: RotationRecord, work: () => Promise<ActionResult | void>, decided?: number): Promise<ActionResult> {
  try {
    return (await work()) ?? {};
  } catch (error) {
    if (error instanceof StepNotReadyError || error instanceof RecordedError) throw error;
    const refused = error instanceof ForbiddenError || error instanceof ValidationError || (error instanceof ApiError && error.status === 405);
    await saveRecord(context.state, { ...record, attempt: refused && decided !== undefined ? decided : record.attempt, last_error: message(error) });
    throw error;
  }
}

/**
 * Reads the record and starts an attempt of a step that continues from one of the steps `from`, of the generation the
 * step was decided for: a rotation already past them, closed, or at a later generation answers `already` (a stale
 * decision); one not yet there raises StepNotReadyError (an earlier step of this pass did not complete).
 */
async function begin(context: PolicyContext, read: { rotation: string; generation?: number }, from: readonly Step[]): Promise<{ record: RotationRecord } | { already: ActionResult }> {
  const id = read.rotation;
  const generation = read.generation ?? 1;
  const record = await loadRecord(context.state, id);
  if (!record) throw new StepNotReadyError(`not run: rotation ${id} has no record yet (its first step did not complete)`);
  const current = generationOf(record);
  if (current > generation) return { already: { outcome: 'stale', detail: `rotation ${id} is at generation ${current} now` } };
  if (current < generation) throw new StepNotReadyError(`not run: generation ${generation} of rotation ${id} has not started (its first step did not complete)`);
  if (record.step === 'closed') return { already: { outcome: 'stale', detail: `rotation ${id} was closed: ${record.closed_reason ?? ''}` } };
  const at = STEPS.indexOf(record.step);
  if (at > Math.max(...from.map((step) => STEPS.indexOf(step)))) return { already: { detail: `already done: rotation ${id} is at ${record.step}` } };
  if (!from.includes(record.step)) throw new StepNotReadyError(`not run: rotation ${id} is at ${record.step}; retried next pass`);
  const counted = { ...record, attempt: record.attempt + 1 };
  await saveRecord(context.state, counted);
  return { record: counted };
}

/**
 * Moves a closed rotation's key files aside: `<path>.closed-<time>` (and its `.pub` and `.on_rotate`), so the private key is kept (a
 * person may want it) but never adopted by a later rotation. Answers the new path, or undefined when there was no file.
 */
async function moveAside(path: string, now: Date): Promise<string | undefined> {
  const aside = `${path}.closed-${now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}`;
  try {
    await rename(path, aside);
  } catch (error) {
    if (isCode(error, 'ENOENT')) return undefined;
    throw error;
  }
  for (const suffix of ['.pub', '.on_rotate']) {
    await rename(`${path}${suffix}`, `${aside}${suffix}`).catch((error: unknown) => {
      if (!isCode(error, 'ENOENT')) throw error;
    });
  }
  return aside;
}

/**
 * The private key already at `path`, or undefined when there is no file. A file that is there but holds no readable
 * OpenSSH private key stops the rotation: it is someone's file, and a person must move it away.
 */
async function keyFileAt(path: string): Promise<{ type: string; fingerprint: string } | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (isCode(error, 'ENOENT')) return undefined;
    throw error;
  }
  try {
    const info = readOpenSshPrivateKey(text);
    return { type: info.type, fingerprint: info.fingerprint };
  } catch (error) {
    throw new Error(`${path} exists but holds no readable OpenSSH private key (${message(error)}); it is never overwritten: move it away to let the rotation write a new key`);
  }
}

/**
 * The public half of the private key on disk, checked against the recorded fingerprint. When the file is gone or
 * holds another key, nothing is uploaded: if the forge does not list the recorded key either, the rotation goes
 * back to `planned` and a new key is written; if it does, a person must look (its private half is lost).
 */
async function publicKeyOnDisk(context: PolicyContext, record: RotationRecord): Promise<string> {
  let problem: string;
  try {
    const info = readOpenSshPrivateKey(await readFile(record.path, 'utf8'));
    if (info.fingerprint === record.fingerprint) return `${info.publicKey} ${info.comment}`.trim();
    problem = `holds ${info.fingerprint}, not the recorded ${record.fingerprint ?? '?'}`;
  } catch (error) {
    problem = isCode(error, 'ENOENT') ? 'is missing' : `cannot be read (${message(error)})`;
  }
  if (await listedAnywhere(context, record)) {
    throw new Error(`private key ${record.path} ${problem}, yet the forge lists ${record.fingerprint ?? '?'}: not uploading; a person must replace that key`);
  }
  await saveRecord(context.state, { ...record, step: 'planned', fingerprint: null, last_error: `private key ${problem}` });
  throw new RecordedError(`private key ${record.path} ${problem}; nothing uploaded, a new key is written next pass`);
}

/** Whether the forge lists a key with the recorded fingerprint: for the user, or on any of the rotation's projects. */
async function listedAnywhere(context: PolicyContext, record: RotationRecord): Promise<boolean> {
  if (record.kind === 'ssh') return (await findSshKey(context, record)) !== undefined;
  for (const { project } of record.projects) {
    const keys = await projectKeys(context, project);
    if (keys?.some((key) => key.fingerprint === record.fingerprint)) return true;
  }
  return false;
}

async function uploadSshKey(
  context: PolicyContext,
  record: RotationRecord,
  publicKey: string,
  lifetimeMs: number,
): Promise<{ id: number; adopted: boolean; expiresAt: string | null }> {
  const owner = ownerOf(record);
  const listed = await findSshKey(context, record);
  if (listed) return { id: listed.id, adopted: true, expiresAt: listed.expires_at };
  const expiresAt = new Date(context.now.getTime() + lifetimeMs).toISOString();
  const params = { title: record.title, key: publicKey, expires_at: expiresAt };
  try {
    const created = owner.self ? await context.client.sshKeys.create(params) : await context.client.sshKeys.createForUser(owner.user_id, params);
    return { id: created.id, adopted: false, expiresAt: created.expires_at ?? expiresAt };
  } catch (error) {
    // "fingerprint has already been taken": a concurrent or lost upload of this very key; adopt it.
    if (error instanceof ValidationError) {
      const again = await findSshKey(context, record);
      if (again) return { id: again.id, adopted: true, expiresAt: again.expires_at };
    }
    throw error;
  }
}

async function findSshKey(context: PolicyContext, record: RotationRecord): Promise<{ id: number; expires_at: string | null } | undefined> {
  const owner = ownerOf(record);
  const keys = owner.self ? context.client.sshKeys.all() : context.client.sshKeys.allForUser(owner.user_id);
  for await (const key of keys) {
    if (fingerprintOfPublicKey(key.key) === record.fingerprint) return { id: key.id, expires_at: key.expires_at ?? null };
  }
  return undefined;
}

/**
 * Created on one project (or adopted there: the recorded id, or a key with the recorded fingerprint), with the old
 * key's can_push there.
 */
async function uploadDeployKey(context: PolicyContext, record: RotationRecord, publicKey: string, where: { project: string | number; can_push: boolean }): Promise<{ id: number; adopted: boolean }> {
  const { deployKeys } = context.client;
  let listed = await findDeployKey(context, where.project, record);
  let id = record.new_key_id ?? listed?.id;
  const adopted = id !== undefined;
  if (id === undefined) {
    try {
      id = (await deployKeys.create(where.project, { title: record.title, key: publicKey, can_push: where.can_push })).id;
    } catch (error) {
      const again = error instanceof ValidationError ? await findDeployKey(context, where.project, record) : undefined;
      if (!again) throw error;
      id = again.id;
    }
    listed = await findDeployKey(context, where.project, record);
  } else if (!listed) {
    await deployKeys.enable(where.project, id);
    listed = await findDeployKey(context, where.project, record);
  }
  if (listed && listed.can_push !== where.can_push) await deployKeys.edit(where.project, id, { can_push: where.can_push });
  return { id, adopted };
}

async function findDeployKey(context: PolicyContext, project: string | number, record: RotationRecord): Promise<{ id: number; can_push: boolean } | undefined> {
  for await (const key of context.client.deployKeys.all(project)) {
    if (fingerprintOfPublicKey(key.key) === record.fingerprint) return { id: key.id, can_push: key.can_push };
  }
  return undefined;
}

async function ignoreNotFound(call: () => Promise<void>, onGone: () => void): Promise<void> {
  try {
    await call();
  } catch (error) {
    if (error instanceof NotFoundError) onGone();
    else throw error;
  }
}

/** Variables the daemon reads its own credentials from; a hook gets none of them. */
const DAEMON_SECRETS = new Set(['GITLAB_TOKEN', 'REDIS_URL']);

/** What every hook gets from the daemon's environment, so a shell script finds its tools and speaks its language. */
const HOOK_BASE_ENV = ['PATH', 'HOME', 'LANG'];

/**
 * The environment of on_rotate: a minimal one (PATH, HOME, LANG and the variables the policy names in
 * `on_rotate_env`), never the daemon's whole environment, and never its credentials (the forge token, a Redis URL
 * that may hold a password, or any variable holding a configured secret), plus the new key's facts. A hook that
 * needs the forge brings its own credentials.
 */
export function hookEnvironment(daemon: NodeJS.ProcessEnv, passed: readonly string[], key: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of [...HOOK_BASE_ENV, ...passed]) {
    const value = daemon[name];
    if (value === undefined || DAEMON_SECRETS.has(name) || redactor.holdsSecret(value)) continue;
    env[name] = value;
  }
  return { ...env, ...key };
}

/**
 * Runs `command` with /bin/sh and the key's facts in the environment. Its output is neither logged nor returned: a
 * script handed the key's path could print the key. Resolves to why it failed, or undefined.
 */
function runCommand(command: string, passed: readonly string[], env: Record<string, string>): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile('/bin/sh', ['-c', command], { env: hookEnvironment(process.env, passed, env), timeout: ON_ROTATE_TIMEOUT_MS, maxBuffer: 1024 * 1024 }, (error) => {
      if (!error) return resolve(undefined);
      // Exit status in `code` (a number), or why it could not start (a string such as ENOENT); `killed` on timeout.
      const { code, signal, killed } = error as { code?: unknown; signal?: unknown; killed?: unknown };
      if (killed === true) return resolve(`timed out after ${ON_ROTATE_TIMEOUT_MS / 1000}s`);
      if (typeof code === 'number') return resolve(`exited with code ${code}`);
      resolve(typeof signal === 'string' ? `killed by ${signal}` : `could not run: ${typeof code === 'string' ? code : 'unknown error'}`);
    });
  });
}

function ownerOf(record: RotationRecord): NonNullable<RotationRecord['owner']> {
  if (!record.owner) throw new TypeError(`key_rotation: SSH rotation ${record.id} has no owner`);
  return record.owner;
}

/** The rotation a step is about, and its generation (absent in actions decided before generations: 1). */
const rotationSchema = z.object({ rotation: param.text(), generation: param.integer().optional() });
const writeSchema = rotationSchema.extend({ secrets_dir: param.text() });

const DEPLOY_PROJECTS = 'a list of {project, can_push}';

/**
 * The projects of a deploy key, the first one first. Earlier versions could pass only flat values and sent the list
 * as a JSON string; actions they queued may still be waiting, so a string holding the list reads the same.
 */
const deployProjectsSchema = z.preprocess(
  // A string that is not JSON is left as it is, for the list check to reject with what was expected.
  (value) => (typeof value === 'string' ? parsedOrAsIs(value) : value),
  z.array(z.object({ project: param.idOrPath(), can_push: param.flag() }), { error: DEPLOY_PROJECTS }),
);

function parsedOrAsIs(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** What the first attempt of a rotation records: the old key, whose it is, and the new key's settings. */
const startSchema = z.discriminatedUnion(
  'kind',
  [
    z.object({ kind: z.literal('ssh'), user_id: param.integer(), username: param.text(), self: param.flag().optional() }),
    z.object({ kind: z.literal('deploy'), projects: deployProjectsSchema }),
  ],
  { error: '"ssh" or "deploy"' },
).and(
  z.object({
    path: param.text(),
    title: param.text(),
    old_key_id: param.integer(),
    old_fingerprint: z.string({ error: 'a string or null' }).nullable().optional(),
    key_type: z.enum(KEY_TYPES, { error: KEY_TYPES.join(' | ') }),
    grace_ms: param.integer(),
    lifetime_ms: z.number({ error: 'a number or null' }).nullable().optional(),
  }),
);

/**
 * The old key as the decision saw it, and whose: shown by `plan --json` as what the step rests on. The preconditions
 * read the record for it (the same facts, and present in actions decided before these were added).
 */
const premiseSchema = rotationSchema.extend({
  /** The attempt the decision's key names. */
  attempt: param.integer().optional(),
  old_key_id: param.integer().optional(),
  old_fingerprint: z.string({ error: 'a string or null' }).nullable().optional(),
  user_id: param.integer().optional(),
  username: param.text().optional(),
  self: param.flag().optional(),
});
/** A deploy key's upload names its project (earlier versions uploaded to all the recorded projects in one step). */
const uploadSchema = premiseSchema.extend({
  lifetime_ms: z.number({ error: 'a number or null' }).nullable().optional(),
  project: param.idOrPath().optional(),
  can_push: param.flag().optional(),
});
const enableSchema = premiseSchema.extend({ project: param.idOrPath(), can_push: param.flag() });
const verifySchema = rotationSchema.extend({ projects: deployProjectsSchema.optional() });
const runOnRotateSchema = rotationSchema.extend({ command: param.text(), env: z.string({ error: 'a string' }).optional() });
const removeSchema = premiseSchema.extend({
  after_hook: param.flag().optional(),
  new_key_id: z.int({ error: 'an integer or null' }).nullable().optional(),
  fingerprint: z.string({ error: 'a string or null' }).nullable().optional(),
  /** Deploy keys: the projects holding the old key when decided; absent in earlier versions' actions: the recorded ones. */
  projects: deployProjectsSchema.optional(),
  /** Deploy keys: whether every selected project was read; if not, the rotation stays open after this removal. */
  complete: param.flag().optional(),
});
const closeSchema = rotationSchema.extend({ reason: param.text() });

function newRecord(id: string, start: z.output<typeof startSchema>, now: Date, generation: number): RotationRecord {
  return {
    id,
    kind: start.kind,
    step: 'planned',
    attempt: 1,
    title: start.title,
    old_key_id: start.old_key_id,
    old_fingerprint: start.old_fingerprint ?? null,
    owner: start.kind === 'deploy' ? null : { user_id: start.user_id, username: start.username, self: start.self === true },
    projects: start.kind === 'deploy' ? start.projects : [],
    path: start.path,
    key_type: start.key_type,
    grace_ms: start.grace_ms,
    lifetime_ms: start.lifetime_ms ?? null,
    fingerprint: null,
    new_key_id: null,
    expires_at: null,
    started_at: now.toISOString(),
    verified_at: null,
    removed_at: null,
    last_error: null,
    generation,
    ...(start.kind === 'deploy' ? { new_key_on: [] } : {}),
  };
}

/** What the record and the audit keep of a failure: the forge's answer with its request, never key material. */
function message(error: unknown): string {
  if (error instanceof ApiError) return error.summary;
  return error instanceof Error ? error.message : String(error);
}
