import { readParams } from '../../engine/action-params';
import type { ActionParams, ActContext } from '../../engine/policy';
import type { CredentialKinds } from './credential-kind';
import {
  enableSchema,
  POLICY,
  removeNewSchema,
  removeSchema,
  runOnRotateSchema,
  uploadSchema,
} from './key-rotation.params';
import { type DeployProject, generationOf, type RotationRecord } from './key-rotation.record';
import { loadKnown, openRecord } from './key-rotation.step-record';

/**
 * What each step that gives or takes access reads again just before it acts, whatever the kind: the new key goes only
 * where the old key still is, on_rotate hands out only a key the forge lists, and the old key goes only while the new
 * one is where it must be. The kind reads the forge; the rule of which fact each step rests on is kept here.
 */
export class RotationPreconditions {
  constructor(private readonly kinds: CredentialKinds) {}

  /**
   * upload_key: the holder (the project the key is created on) still holds the old key the decision rests on. A person
   * who removed it meanwhile may have meant to take that access away: no new key is given in its place.
   */
  async upload(params: ActionParams, context: ActContext): Promise<string | undefined> {
    const read = readParams(POLICY, uploadSchema, params);
    const record = await openRecord(this.kinds, context, read);
    if (!record) return undefined;
    const kind = this.kinds.named(record.kind);
    const problem = await kind.oldKeyHeld(context, record, uploadPlace(read, record)?.project);
    // A key an earlier upload made (its answer lost) is adopted whatever became of the old one: untracked, it would stay.
    if (problem && kind.holders !== 'several' && (await kind.listedAnywhere(context, record))) return undefined;
    return (
      problem &&
      `${problem}: ${kind.holders === 'several' ? 'the new key is not created there' : 'no new key is uploaded'}`
    );
  }

  /** enable_key: the project still holds the old key. */
  async enable(params: ActionParams, context: ActContext): Promise<string | undefined> {
    const read = readParams(POLICY, enableSchema, params);
    const record = await openRecord(this.kinds, context, read, 'done too');
    if (!record) return undefined;
    const problem = await this.kinds.named(record.kind).oldKeyHeld(context, record, read.project);
    return problem && `${problem}: the new key is not enabled there`;
  }

  /**
   * run_on_rotate: every holder has the new key as recorded (on several holders: each project decided as holding the
   * old key or unreadable, and each the bot put it on, that holds the old key now; one that cannot be read is not
   * covered). Handing consumers a key a holder lacks would lock them out there; one a person deleted opens nothing.
   */
  async hook(params: ActionParams, context: ActContext): Promise<string | undefined> {
    const read = readParams(POLICY, runOnRotateSchema, params);
    const record = await openRecord(this.kinds, context, read);
    if (!record || record.new_key_id === null) return undefined;
    const found = await this.kinds.named(record.kind).newKeyMissing(
      context,
      record,
      (read.holders ?? []).map((project) => ({ project })),
    );
    return found.missing.length > 0
      ? `new key ${record.new_key_id} is not listed on ${found.missing.join(', ')}: on_rotate waits until every holder has it`
      : undefined;
  }

  /**
   * remove_new_key: the new key is still there as recorded; for a person's revocation, the old key is still gone from
   * there too (given back, the rotation goes on there instead).
   */
  async removeNew(params: ActionParams, context: ActContext): Promise<string | undefined> {
    const read = readParams(POLICY, removeNewSchema, params);
    const record = await loadKnown(this.kinds, context.state, read.rotation);
    if (!record || generationOf(record) !== (read.generation ?? 1) || record.new_key_id !== read.new_key_id)
      return undefined;
    const kind = this.kinds.named(record.kind);
    const absent = await kind.newKeyHeld(context, record, read.project);
    if (absent) return `${absent}: nothing to take away`;
    if (read.why === 'revoked' && (await kind.oldKeyHeld(context, record, read.project)) === undefined) {
      return `old key ${record.old_key_id} is there again: the new key stays, and the rotation goes on there`;
    }
    return undefined;
  }

  /**
   * remove_old_key: the new key is listed with the recorded id and fingerprint (on several holders: on every project of
   * the decision that holds the old key, with the old key's can_push there), and the key with the old id is still the
   * old key. Otherwise removing it could leave the holder without a working key.
   */
  async remove(params: ActionParams, context: ActContext): Promise<string | undefined> {
    const read = readParams(POLICY, removeSchema, params);
    const record = await openRecord(this.kinds, context, read, 'done too');
    if (!record || record.new_key_id === null) return undefined;
    return this.kinds.named(record.kind).removeBlocked(context, record, read.projects ?? record.projects);
  }
}

/** The project an upload creates a key on, as decided; earlier versions' params name none: the first recorded. */
export function uploadPlace(
  read: { project?: string | number; can_push?: boolean },
  record: RotationRecord,
): DeployProject | undefined {
  if (read.project !== undefined) return { project: read.project, can_push: read.can_push ?? false };
  return record.projects[0];
}
