import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { param, readParams } from '../../engine/action-params';
import type { ActionParams, ActionResult, PolicyContext } from '../../engine/policy';
import { NotFoundError, ValidationError } from '../../gitlab/transport/errors';
import {
  loadRecord,
  markOpen,
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
 * The effects of each rotation step. Every step re-reads its record, checks that the rotation is at the step it
 * continues, counts the attempt (before touching anything, so an interrupted attempt is followed by a new one) and
 * records its result before returning. Errors name paths, ids and fingerprints, never key material.
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
 * already. It is adopted instead, and the upload then finds that key on the forge rather than uploading another.
 */
export async function writeKey(params: ActionParams, context: PolicyContext): Promise<ActionResult> {
  const { rotation: id, secrets_dir: secretsDir } = readParams(POLICY, writeSchema, params);
  const existing = await loadRecord(context.state, id);
  // A key whose fingerprint is recorded may already be on the forge: its file is never replaced.
  if (existing && existing.step !== 'planned') return { detail: `already written: ${existing.fingerprint ?? '?'}` };
  const problem = await unusableDirectory(secretsDir);
  if (problem) throw new Error(`${problem}; not rotating`);
  // A first attempt records what its parameters say; a later one has it all in its record already.
  const planned: RotationRecord = existing ? { ...existing, attempt: existing.attempt + 1 } : newRecord(id, readParams(POLICY, startSchema, params), context.now);
  const { path } = planned;
  await saveRecord(context.state, planned);
  await markOpen(context.state, id, true);
  try {
    await ensurePrivateDirectory(dirname(path));
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
 * lists with the recorded fingerprint (an upload whose answer was lost) is adopted, never uploaded twice.
 */
export async function uploadKey(params: ActionParams, context: PolicyContext): Promise<ActionResult> {
  const read = readParams(POLICY, uploadSchema, params);
  const started = await begin(context, read.rotation, ['key_written']);
  if ('already' in started) return started.already;
  const record = started.record;
  try {
    const publicKey = await publicKeyOnDisk(context, record);
    if (record.kind === 'ssh') {
      const lifetime = read.lifetime_ms ?? record.lifetime_ms;
      if (lifetime === null) throw new TypeError(`key_rotation: no lifetime for the new key of rotation ${record.id}`);
      const { id, adopted, expiresAt } = await uploadSshKey(context, record, publicKey, lifetime);
      await saveRecord(context.state, { ...record, step: 'uploaded', new_key_id: id, expires_at: expiresAt, last_error: null });
      return { detail: `${adopted ? 'adopted key already on the forge' : 'uploaded'}: key ${id} ${record.fingerprint ?? ''}, expires ${expiresAt ?? 'never'}` };
    }
    const { id, adopted } = await uploadDeployKey(context, record, publicKey);
    await saveRecord(context.state, { ...record, step: 'uploaded', new_key_id: id, last_error: null });
    return { detail: `${adopted ? 'adopted deploy key already on the forge' : 'created deploy key'} ${id} ${record.fingerprint ?? ''} on ${record.projects.length} project(s)` };
  } catch (error) {
    if (!(error instanceof StepNotReadyError) && !(error instanceof RecordedError)) await saveRecord(context.state, { ...record, last_error: message(error) });
    throw error;
  }
}

/** uploaded → verified: the forge lists the new key (on every project, with the old key's can_push); grace starts. */
export async function verifyKey(params: ActionParams, context: PolicyContext): Promise<ActionResult> {
  const started = await begin(context, readParams(POLICY, rotationSchema, params).rotation, ['uploaded']);
  if ('already' in started) return started.already;
  const record = started.record;
  try {
    const missing = await notListed(context, record);
    if (missing.length > 0) {
      // Back one step: the upload adopts whatever is there and adds what is not, so retrying makes no second key.
      await saveRecord(context.state, { ...record, step: 'key_written', last_error: `not listed: ${missing.join(', ')}` });
      throw new RecordedError(`the forge does not list new key ${record.new_key_id ?? '?'} ${record.fingerprint ?? ''} (${missing.join(', ')}); uploading again next pass`);
    }
    await saveRecord(context.state, { ...record, step: 'verified', verified_at: context.now.toISOString(), last_error: null });
    return { detail: `the forge lists key ${record.new_key_id ?? '?'} ${record.fingerprint ?? ''}; old key ${record.old_key_id} stays until ${new Date(context.now.getTime() + record.grace_ms).toISOString()}` };
  } catch (error) {
    if (!(error instanceof StepNotReadyError) && !(error instanceof RecordedError)) {
      await saveRecord(context.state, { ...record, last_error: message(error) });
    }
    throw error;
  }
}

/** verified → hooked: on_rotate ran with the new key's path, title and id; a failure is retried next pass. */
export async function runOnRotate(params: ActionParams, context: PolicyContext): Promise<ActionResult> {
  const read = readParams(POLICY, runOnRotateSchema, params);
  const started = await begin(context, read.rotation, ['verified']);
  if ('already' in started) return started.already;
  const record = started.record;
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
  await saveRecord(context.state, { ...record, step: 'hooked', last_error: null });
  return { detail: `on_rotate ran for key ${record.new_key_id ?? '?'}` };
}

/** verified (or hooked) → done: the old key goes, from the user or from every project it was on. */
export async function removeOldKey(params: ActionParams, context: PolicyContext): Promise<ActionResult> {
  const read = readParams(POLICY, removeSchema, params);
  // After on_rotate ran, when the policy has one; a rotation verified before on_rotate was configured may go as it is.
  const started = await begin(context, read.rotation, read.after_hook === true ? ['hooked'] : ['verified', 'hooked']);
  if ('already' in started) return started.already;
  const record = started.record;
  // Defence in depth: decide checked both, from a snapshot that may be old.
  const verifiedAt = Date.parse(record.verified_at ?? '');
  if (Number.isNaN(verifiedAt) || context.now.getTime() < verifiedAt + record.grace_ms) {
    throw new StepNotReadyError(`not run: the grace period of rotation ${record.id} has not passed`);
  }
  const gone: string[] = [];
  try {
    if (record.kind === 'ssh') {
      const owner = ownerOf(record);
      await ignoreNotFound(() => (owner.self ? context.client.sshKeys.remove(record.old_key_id) : context.client.sshKeys.removeForUser(owner.user_id, record.old_key_id)), () => gone.push('user'));
    } else {
      for (const { project } of record.projects) {
        await ignoreNotFound(() => context.client.deployKeys.remove(project, record.old_key_id), () => gone.push(String(project)));
      }
    }
  } catch (error) {
    await saveRecord(context.state, { ...record, last_error: message(error) });
    throw error;
  }
  await saveRecord(context.state, { ...record, step: 'done', removed_at: context.now.toISOString(), last_error: null });
  await markOpen(context.state, record.id, false);
  return { detail: `old key ${record.old_key_id} removed${gone.length > 0 ? ` (already gone: ${gone.join(', ')})` : ''}` };
}

/**
 * Reads the record and starts an attempt of a step that continues from one of the steps `from`: a rotation already
 * past them answers `already` (a stale decision), one not yet there raises StepNotReadyError (an earlier step of
 * this pass did not complete).
 */
async function begin(context: PolicyContext, id: string, from: readonly Step[]): Promise<{ record: RotationRecord } | { already: ActionResult }> {
  const record = await loadRecord(context.state, id);
  if (!record) throw new StepNotReadyError(`not run: rotation ${id} has no record yet (its first step did not complete)`);
  const at = STEPS.indexOf(record.step);
  if (at > Math.max(...from.map((step) => STEPS.indexOf(step)))) return { already: { detail: `already done: rotation ${id} is at ${record.step}` } };
  if (!from.includes(record.step)) throw new StepNotReadyError(`not run: rotation ${id} is at ${record.step}; retried next pass`);
  const counted = { ...record, attempt: record.attempt + 1 };
  await saveRecord(context.state, counted);
  return { record: counted };
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
  const missing = await notListed(context, { ...record, new_key_id: null });
  if (missing.length < (record.kind === 'ssh' ? 1 : record.projects.length)) {
    throw new Error(`private key ${record.path} ${problem}, yet the forge lists ${record.fingerprint ?? '?'}: not uploading; a person must replace that key`);
  }
  await saveRecord(context.state, { ...record, step: 'planned', fingerprint: null, last_error: `private key ${problem}` });
  throw new RecordedError(`private key ${record.path} ${problem}; nothing uploaded, a new key is written next pass`);
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

/** Created on the first project (or adopted there), then enabled by id on the others with the old key's can_push. */
async function uploadDeployKey(context: PolicyContext, record: RotationRecord, publicKey: string): Promise<{ id: number; adopted: boolean }> {
  const { deployKeys } = context.client;
  const [first, ...others] = record.projects;
  if (!first) throw new Error(`rotation ${record.id} lists no project`);
  let id = record.new_key_id ?? (await findDeployKey(context, first.project, record))?.id;
  const adopted = id !== undefined;
  if (id === undefined) {
    try {
      id = (await deployKeys.create(first.project, { title: record.title, key: publicKey, can_push: first.can_push })).id;
    } catch (error) {
      const again = error instanceof ValidationError ? await findDeployKey(context, first.project, record) : undefined;
      if (!again) throw error;
      id = again.id;
    }
  }
  // Recorded at once: the enables below use the id, and a retry continues with it.
  await saveRecord(context.state, { ...record, new_key_id: id });
  for (const project of [first, ...others]) {
    let listed = await findDeployKey(context, project.project, record);
    if (!listed) {
      await deployKeys.enable(project.project, id);
      listed = await findDeployKey(context, project.project, record);
    }
    if (listed && listed.can_push !== project.can_push) await deployKeys.edit(project.project, id, { can_push: project.can_push });
  }
  return { id, adopted };
}

async function findDeployKey(context: PolicyContext, project: string | number, record: RotationRecord): Promise<{ id: number; can_push: boolean } | undefined> {
  for await (const key of context.client.deployKeys.all(project)) {
    if (fingerprintOfPublicKey(key.key) === record.fingerprint) return { id: key.id, can_push: key.can_push };
  }
  return undefined;
}

/** Where the forge does not (yet) list the new key as recorded: `user`, or the projects; empty when it does everywhere. */
async function notListed(context: PolicyContext, record: RotationRecord): Promise<string[]> {
  if (record.kind === 'ssh') {
    const found = await findSshKey(context, record);
    return found && (record.new_key_id === null || found.id === record.new_key_id) ? [] : ['user'];
  }
  const missing: string[] = [];
  for (const project of record.projects) {
    const found = await findDeployKey(context, project.project, record);
    // Once uploaded, the key must be the recorded one, with the old key's can_push.
    const ok = found !== undefined && (record.new_key_id === null || (found.id === record.new_key_id && found.can_push === project.can_push));
    if (!ok) missing.push(String(project.project));
  }
  return missing;
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

/** The rotation a step is about; every step's parameters name it. */
const rotationSchema = z.object({ rotation: param.text() });
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

const uploadSchema = rotationSchema.extend({ lifetime_ms: z.number({ error: 'a number or null' }).nullable().optional() });
const runOnRotateSchema = rotationSchema.extend({ command: param.text(), env: z.string({ error: 'a string' }).optional() });
const removeSchema = rotationSchema.extend({ after_hook: param.flag().optional() });

function newRecord(id: string, start: z.output<typeof startSchema>, now: Date): RotationRecord {
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
  };
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
