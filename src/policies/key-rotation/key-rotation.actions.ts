import { HookRunner } from '../../effects/hook-runner';
import { SecretFiles } from '../../effects/secret-files';
import { readParams } from '../../engine/action-params';
import type { ActionParams, ActionResult, ActContext } from '../../engine/policy';
import type { CredentialKinds } from './credential-kind';
import { hookMarkPath, KeyFiles } from './key-rotation.key-files';
import {
  closeSchema,
  enableSchema,
  POLICY,
  readStart,
  recordOfStart,
  removeNewSchema,
  removeSchema,
  runOnRotateSchema,
  uploadSchema,
  verifySchema,
  writeSchema,
} from './key-rotation.params';
import { RotationPreconditions, uploadPlace } from './key-rotation.preconditions';
import {
  generationOf,
  HOLDER,
  isFinished,
  markOpen,
  placedOn,
  refKey,
  type RotationRecord,
  saveRecord,
} from './key-rotation.record';
import { begin, loadKnown, message, RecordedError, recording, StepNotReadyError } from './key-rotation.step-record';
import { CREDENTIAL_KINDS } from './kinds';

export { StepNotReadyError } from './key-rotation.step-record';

/** How long on_rotate may run before it counts as failed. */
export const ON_ROTATE_TIMEOUT_MS = 5 * 60_000;

/**
 * The effects of each rotation step, whatever the kind: the kind makes the forge calls, the steps keep the record.
 * Every step re-reads its record, checks that the rotation is at the step (and generation) it continues, counts the
 * attempt (before touching anything, so an interrupted attempt is followed by a new one) and records its result
 * before returning. Errors name paths, ids and fingerprints, never key material; the forge's refusals reach the
 * executor as they are (a 403 is parked there), with the record's last_error naming the request.
 */
export class RotationSteps {
  /** What each step that gives or takes access reads again first. */
  readonly preconditions: RotationPreconditions;

  constructor(
    readonly kinds: CredentialKinds,
    readonly keyFiles: KeyFiles,
    private readonly hooks: HookRunner,
  ) {
    this.preconditions = new RotationPreconditions(kinds);
  }

  /**
   * planned → key_written: the private key is on disk (0600) and its fingerprint recorded before anything is uploaded.
   * A key file already at the rotation's path is never replaced: it was written by an earlier attempt whose record was
   * lost (Redis lost its data, or the process died before recording it), and its public half may be on the forge
   * already. It is adopted instead, and the upload then finds that key on the forge rather than uploading another. (The
   * file of a closed rotation is not there any more: closing moves it aside.)
   */
  async writeKey(params: ActionParams, context: ActContext): Promise<ActionResult> {
    const { rotation: id, secrets_dir: secretsDir, generation = 1 } = readParams(POLICY, writeSchema, params);
    const existing = await loadKnown(this.kinds, context.state, id);
    const current = existing ? generationOf(existing) : undefined;
    if (existing && current !== undefined && current > generation)
      return { outcome: 'stale', detail: `rotation ${id} is at generation ${current} now` };
    if (existing && current !== undefined && current < generation && !isFinished(existing)) {
      return {
        outcome: 'stale',
        detail: `generation ${current} of rotation ${id} is still open (at ${existing.step})`,
      };
    }
    const resuming = existing !== undefined && current === generation;
    // A key whose fingerprint is recorded may already be on the forge: its file is never replaced.
    if (resuming && existing.step !== 'planned') return { detail: `already written: ${existing.fingerprint ?? '?'}` };
    const problem = await this.keyFiles.unusable(secretsDir);
    if (problem) throw new Error(`${problem}; not rotating`);
    // A first attempt records what its parameters say; a later one has it all in its record already.
    const planned: RotationRecord = resuming
      ? { ...existing, attempt: existing.attempt + 1 }
      : recordOfStart(id, readStart(this.kinds, params), context.now, generation);
    await saveRecord(context.state, planned);
    await markOpen(context.state, id, true);
    try {
      // Written before the records were dropped for another or a reset forge: that forge's key, kept aside, not adopted.
      if (context.forgeChangedAt)
        await this.keyFiles.setAsideIfOlder(planned.path, context.forgeChangedAt, context.now);
      const written = await this.keyFiles.write(planned.path, planned.key_type, `forgewarden:${id}`);
      await saveRecord(context.state, {
        ...planned,
        step: 'key_written',
        fingerprint: written.fingerprint,
        last_error: null,
      });
      return { detail: written.detail };
    } catch (error) {
      await saveRecord(context.state, { ...planned, last_error: message(error) });
      throw error;
    }
  }

  /**
   * key_written → uploaded. The key uploaded is the one read back from the file on disk; a key the forge already
   * lists with the recorded fingerprint (an upload whose answer was lost) is adopted, never uploaded twice. A key on
   * several holders is created on one (the first project that holds the old key); enable_key puts it on the others.
   */
  async uploadKey(params: ActionParams, context: ActContext): Promise<ActionResult> {
    const read = readParams(POLICY, uploadSchema, params);
    const started = await begin(this.kinds, context, read, ['key_written']);
    if ('already' in started) return started.already;
    const record = started.record;
    return recording(
      context,
      record,
      async () => {
        const publicKey = await this.publicKeyOnDisk(context, record);
        const uploaded = await this.kinds
          .named(record.kind)
          .upload(context, record, publicKey, { lifetimeMs: read.lifetime_ms, place: uploadPlace(read, record) });
        await saveRecord(context.state, { ...record, step: 'uploaded', ...uploaded.recorded, last_error: null });
        return { detail: uploaded.detail };
      },
      read.attempt,
    );
  }

  /**
   * Puts the new key on one more project that holds the old key (enabled by id, with the old key's can_push there),
   * during the rotation or after it was verified: a project that gained the old key meanwhile gets the new one.
   */
  async enableKey(params: ActionParams, context: ActContext): Promise<ActionResult> {
    const read = readParams(POLICY, enableSchema, params);
    // A done rotation too: a project that gained the old key after it was done gets its new key.
    const started = await begin(this.kinds, context, read, ['uploaded', 'verified', 'hooked', 'done']);
    if ('already' in started) return started.already;
    const record = started.record;
    const newKeyId = record.new_key_id;
    if (newKeyId === null) throw new StepNotReadyError(`not run: rotation ${record.id} has no new key id yet`);
    const kind = this.kinds.named(record.kind);
    if (!kind.spread)
      throw new TypeError(`key_rotation: a ${kind.name} key sits on one holder; it is not enabled on projects`);
    const spread = kind.spread.bind(kind);
    return recording(
      context,
      record,
      async () => {
        const { enabled, projectId } = await spread(context, record, newKeyId, {
          project: read.project,
          can_push: read.can_push,
        });
        const placed = new Set([...placedOn(record), refKey(read.project)]);
        const ids =
          projectId !== undefined ? { project_ids: { ...record.project_ids, [refKey(read.project)]: projectId } } : {};
        await saveRecord(context.state, { ...record, new_key_on: [...placed], ...ids, last_error: null });
        return {
          detail: `${enabled ? 'enabled' : 'already enabled:'} new key ${newKeyId} on ${read.project} (can_push ${read.can_push})`,
        };
      },
      read.attempt,
    );
  }

  /**
   * uploaded → verified: the forge lists the new key (the recorded id and fingerprint), on several holders on every
   * project of the decision that still holds the old key, with the old key's can_push there; the grace period starts.
   * Where it is missing the rotation stays where it is: the next pass enables it where it never was, and closes the
   * rotation where a person removed it.
   */
  async verifyKey(params: ActionParams, context: ActContext): Promise<ActionResult> {
    const read = readParams(POLICY, verifySchema, params);
    const started = await begin(this.kinds, context, read, ['uploaded']);
    if ('already' in started) return started.already;
    const record = started.record;
    const kind = this.kinds.named(record.kind);
    return recording(context, record, async () => {
      const found = await kind.newKeyMissing(context, record, read.projects ?? record.projects);
      if (found.missing.length > 0) {
        await saveRecord(context.state, { ...record, last_error: `not listed: ${found.missing.join(', ')}` });
        throw new RecordedError(
          `the forge does not list new key ${record.new_key_id ?? '?'} ${record.fingerprint ?? ''} (${found.missing.join(', ')}); the next pass looks again`,
        );
      }
      await saveRecord(context.state, {
        ...record,
        step: 'verified',
        verified_at: context.now.toISOString(),
        ...(kind.holders === 'several' ? { new_key_on: [...new Set([...placedOn(record), ...found.on])] } : {}),
        last_error: null,
      });
      return {
        detail: `the forge lists key ${record.new_key_id ?? '?'} ${record.fingerprint ?? ''}; old key ${record.old_key_id} stays until ${new Date(context.now.getTime() + record.grace_ms).toISOString()}`,
      };
    });
  }

  /**
   * verified → hooked: on_rotate ran with the new key's path, title and id; a failure is retried next pass. That it ran
   * is also written beside the key file (`<path>.on_rotate`, with the key's fingerprint), where it outlives Redis: the
   * forge cannot show that a hook ran, and a rotation taken up again after Redis lost its records would otherwise run
   * it a second time for the same key.
   */
  async runOnRotate(params: ActionParams, context: ActContext): Promise<ActionResult> {
    const read = readParams(POLICY, runOnRotateSchema, params);
    const started = await begin(this.kinds, context, read, ['verified']);
    if ('already' in started) return started.already;
    const record = started.record;
    const ran = await this.keyFiles.hookRanFor(record);
    if (ran) {
      await saveRecord(context.state, { ...record, step: 'hooked', last_error: null });
      return {
        detail: `on_rotate already ran for key ${record.fingerprint ?? '?'} at ${ran} (recorded in ${hookMarkPath(record.path)}); not run again`,
      };
    }
    const failure = await this.hooks.run(read.command, read.env ? read.env.split(',') : [], {
      FORGEWARDEN_KEY_PATH: record.path,
      FORGEWARDEN_PUBLIC_KEY_PATH: `${record.path}.pub`,
      FORGEWARDEN_KEY_TITLE: record.title,
      FORGEWARDEN_KEY_ID: String(record.new_key_id ?? ''),
      FORGEWARDEN_KEY_FINGERPRINT: record.fingerprint ?? '',
      FORGEWARDEN_OLD_KEY_ID: String(record.old_key_id),
    });
    if (failure) {
      await saveRecord(context.state, { ...record, last_error: `on_rotate ${failure}` });
      throw new Error(
        `on_rotate ${failure}; retried next pass; the new key stays at ${record.path} and the old key is kept`,
      );
    }
    // The file first: a crash between the two leaves the record at verified, and the next pass finds the file.
    await this.keyFiles.markHookRan(record, context.now);
    await saveRecord(context.state, { ...record, step: 'hooked', last_error: null });
    return { detail: `on_rotate ran for key ${record.new_key_id ?? '?'}` };
  }

  /**
   * verified (or hooked) → done: the old key goes, from its holder or from the projects the decision found it on. When
   * some selected project could not be read (`complete` false), it may still hold the old key: the rotation stays open,
   * and a later pass that reads it gives it the new key and takes the old one.
   */
  async removeOldKey(params: ActionParams, context: ActContext): Promise<ActionResult> {
    const read = readParams(POLICY, removeSchema, params);
    // After on_rotate ran, when the policy has one; a rotation verified before on_rotate was configured may go as it is.
    const steps =
      read.again === true
        ? (['verified', 'hooked', 'done'] as const)
        : read.after_hook === true
          ? (['hooked'] as const)
          : (['verified', 'hooked'] as const);
    const started = await begin(this.kinds, context, read, steps);
    if ('already' in started) return started.already;
    const record = started.record;
    // Defence in depth: decide checked both, from a snapshot that may be old.
    const verifiedAt = Date.parse(record.verified_at ?? '');
    if (Number.isNaN(verifiedAt) || context.now.getTime() < verifiedAt + record.grace_ms) {
      throw new StepNotReadyError(`not run: the grace period of rotation ${record.id} has not passed`);
    }
    const gone: string[] = [];
    const projects = read.projects ?? record.projects;
    const kind = this.kinds.named(record.kind);
    // Written before the removal: the old key gone from there is then known to be the bot's doing, not a person's revocation.
    const refs = kind.holders === 'several' ? projects.map((p) => refKey(p.project)) : [HOLDER];
    const removing = { ...record, old_removed_on: [...new Set([...(record.old_removed_on ?? []), ...refs])] };
    await saveRecord(context.state, removing);
    await recording(
      context,
      removing,
      async () => void gone.push(...(await kind.removeOld(context, removing, projects))),
      read.attempt,
    );
    const already = gone.length > 0 ? ` (already gone: ${gone.join(', ')})` : '';
    const from = projects.map((p) => p.project).join(', ');
    // A 404 here is no sign of a person: the client repeats a removal whose answer was lost, and meets its own work.
    if (read.complete === false) {
      await saveRecord(context.state, { ...removing, last_error: null });
      return {
        detail: `old key ${record.old_key_id} removed from ${from || 'no project'}${already}; the rotation stays open until every selected project can be read`,
      };
    }
    await saveRecord(context.state, {
      ...removing,
      step: 'done',
      removed_at: context.now.toISOString(),
      last_error: null,
    });
    await markOpen(context.state, record.id, false);
    return { detail: `old key ${record.old_key_id} removed${projects.length > 0 ? ` from ${from}` : ''}${already}` };
  }

  /**
   * Any open step → closed: the forge contradicts what the rotation rests on (see decide), so it does nothing more and
   * the key is decided afresh. Only the policy's own state changes: the record, and the private key file, which is moved
   * aside (renamed with a suffix, keeping its 0600) before the record says closed, so that no later rotation at the same
   * path adopts a key whose public half a person deleted, even after Redis lost the record.
   */
  async closeRotation(params: ActionParams, context: ActContext): Promise<ActionResult> {
    const read = readParams(POLICY, closeSchema, params);
    const record = await loadKnown(this.kinds, context.state, read.rotation);
    if (!record) return { detail: `rotation ${read.rotation} has no record; nothing to close` };
    const generation = read.generation ?? 1;
    if (generationOf(record) !== generation || isFinished(record)) {
      return {
        outcome: 'stale',
        detail: `rotation ${record.id} is at generation ${generationOf(record)}, ${record.step}; nothing to close`,
      };
    }
    const aside = await this.keyFiles.moveAside(record.path, context.now);
    await saveRecord(context.state, {
      ...record,
      step: 'closed',
      attempt: record.attempt + 1,
      closed_at: context.now.toISOString(),
      closed_reason: read.reason,
    });
    await markOpen(context.state, record.id, false);
    return { detail: `rotation ${record.id} closed: ${read.reason}${aside ? `; its key file moved to ${aside}` : ''}` };
  }

  /**
   * A repair of the bot's own harm (see key-rotation.harms.ts): the new key leaves one holder, because a person took the
   * old key away from it (`revoked`), or because no rotation vouches for it any more (`withdrawn`). The record says
   * where it is no longer; a key gone already counts as taken away. A closed rotation's key is withdrawn too.
   */
  async removeNewKey(params: ActionParams, context: ActContext): Promise<ActionResult> {
    const read = readParams(POLICY, removeNewSchema, params);
    const record = await loadKnown(this.kinds, context.state, read.rotation);
    if (!record || generationOf(record) !== (read.generation ?? 1) || record.new_key_id !== read.new_key_id) {
      return { outcome: 'stale', detail: `rotation ${read.rotation} no longer records new key ${read.new_key_id}` };
    }
    const kind = this.kinds.named(record.kind);
    const counted = { ...record, attempt: record.attempt + 1 };
    await saveRecord(context.state, counted);
    let gone = false;
    await recording(context, counted, async () => void (gone = await kind.removeNew(context, counted, read.project)));
    const ref = read.project !== undefined ? refKey(read.project) : HOLDER;
    const placed = [...placedOn(counted)].filter((placedRef) => placedRef !== ref);
    const revoked = read.why === 'revoked' ? { revoked_on: [...new Set([...(counted.revoked_on ?? []), ref])] } : {};
    await saveRecord(context.state, {
      ...counted,
      ...(kind.holders === 'several' ? { new_key_on: placed } : {}),
      ...revoked,
      last_error: null,
    });
    const where = read.project !== undefined ? ` from ${read.project}` : '';
    return {
      detail: `${gone ? 'new key already gone' : 'removed new key'} ${record.new_key_id}${where}${read.why === 'revoked' ? `, as old key ${record.old_key_id} was taken away there` : ''}`,
    };
  }

  /**
   * The public half of the private key on disk, checked against the recorded fingerprint. When the file is gone or
   * holds another key, nothing is uploaded: if the forge does not list the recorded key either, the rotation goes
   * back to `planned` and a new key is written; if it does, a person must look (its private half is lost).
   */
  private async publicKeyOnDisk(context: ActContext, record: RotationRecord): Promise<string> {
    const onDisk = await this.keyFiles.publicKey(record);
    if ('publicKey' in onDisk) return onDisk.publicKey;
    if (await this.kinds.named(record.kind).listedAnywhere(context, record)) {
      throw new Error(
        `private key ${record.path} ${onDisk.problem}, yet the forge lists ${record.fingerprint ?? '?'}: not uploading; a person must replace that key`,
      );
    }
    await saveRecord(context.state, {
      ...record,
      step: 'planned',
      fingerprint: null,
      last_error: `private key ${onDisk.problem}`,
    });
    throw new RecordedError(
      `private key ${record.path} ${onDisk.problem}; nothing uploaded, a new key is written next pass`,
    );
  }
}

/** The steps as the daemon runs them: this build's kinds, on its disk, with on_rotate as its child. */
export const keyRotationSteps = new RotationSteps(
  CREDENTIAL_KINDS,
  new KeyFiles(new SecretFiles()),
  new HookRunner(ON_ROTATE_TIMEOUT_MS),
);

// Each step and precondition of this build on its own, for a test that drives one step.
const steps = keyRotationSteps;
const { preconditions } = keyRotationSteps;

export const writeKey = (params: ActionParams, context: ActContext) => steps.writeKey(params, context);
export const uploadKey = (params: ActionParams, context: ActContext) => steps.uploadKey(params, context);
export const enableKey = (params: ActionParams, context: ActContext) => steps.enableKey(params, context);
export const verifyKey = (params: ActionParams, context: ActContext) => steps.verifyKey(params, context);
export const runOnRotate = (params: ActionParams, context: ActContext) => steps.runOnRotate(params, context);
export const removeOldKey = (params: ActionParams, context: ActContext) => steps.removeOldKey(params, context);
export const closeRotation = (params: ActionParams, context: ActContext) => steps.closeRotation(params, context);
export const removeNewKey = (params: ActionParams, context: ActContext) => steps.removeNewKey(params, context);
export const uploadPrecondition = (params: ActionParams, context: ActContext) => preconditions.upload(params, context);
export const enablePrecondition = (params: ActionParams, context: ActContext) => preconditions.enable(params, context);
export const hookPrecondition = (params: ActionParams, context: ActContext) => preconditions.hook(params, context);
export const removePrecondition = (params: ActionParams, context: ActContext) => preconditions.remove(params, context);
export const removeNewPrecondition = (params: ActionParams, context: ActContext) =>
  preconditions.removeNew(params, context);
