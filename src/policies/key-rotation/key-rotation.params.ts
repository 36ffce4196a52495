import { z } from 'zod';
import { param, readParams } from '../../engine/action-params';
import type { ActionParams } from '../../engine/policy';
import type { CredentialKind, CredentialKinds, Holders } from './credential-kind';
import type { RotationRecord } from './key-rotation.record';
import { KEY_TYPES } from './openssh';

/**
 * The params of each step, as they travel through the queue and Redis. Actions queued by earlier versions are read
 * by these too: a field added since is optional, and an old shape still reads (see placesSchema).
 */

export const POLICY = 'key_rotation';

/** The rotation a step is about, and its generation (absent in actions decided before generations: 1). */
export const rotationSchema = z.object({ rotation: param.text(), generation: param.integer().optional() });
export const writeSchema = rotationSchema.extend({ secrets_dir: param.text() });

const PLACES = 'a list of {project, can_push}';

/**
 * The projects of a deploy key, the first one first. Earlier versions could pass only flat values and sent the list
 * as a JSON string; actions they queued may still be waiting, so a string holding the list reads the same.
 */
export const placesSchema = z.preprocess(
  // A string that is not JSON is left as it is, for the list check to reject with what was expected.
  (value) => (typeof value === 'string' ? parsedOrAsIs(value) : value),
  z.array(z.object({ project: param.idOrPath(), can_push: param.flag() }), { error: PLACES }),
);

function parsedOrAsIs(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** What the first attempt of a rotation records besides who holds the key (its kind reads that): the old key and the new key's settings. */
const startSchema = z.object({
  path: param.text(),
  title: param.text(),
  old_key_id: param.integer(),
  old_fingerprint: z.string({ error: 'a string or null' }).nullable().optional(),
  key_type: z.enum(KEY_TYPES, { error: KEY_TYPES.join(' | ') }),
  grace_ms: param.integer(),
  lifetime_ms: z.number({ error: 'a number or null' }).nullable().optional(),
});

export type Start = z.output<typeof startSchema> & Holders & { readonly kind: CredentialKind };

/** write_key's params: the kind they name, who holds the key as that kind reads it, then the rest. */
export function readStart(kinds: CredentialKinds, params: ActionParams): Start {
  const names = kinds.names();
  const named = readParams(
    POLICY,
    z.object({
      kind: z.enum(names as [string, ...string[]], { error: names.map((name) => JSON.stringify(name)).join(' or ') }),
    }),
    params,
  );
  const kind = kinds.named(named.kind);
  const holders = readParams(POLICY, kind.start, params);
  return { ...readParams(POLICY, startSchema, params), ...holders, kind };
}

/**
 * The old key as the decision saw it, and whose: shown by `plan --json` as what the step rests on. The preconditions
 * read the record for it (the same facts, and present in actions decided before these were added).
 */
export const premiseSchema = rotationSchema.extend({
  /** The attempt the decision's key names. */
  attempt: param.integer().optional(),
  old_key_id: param.integer().optional(),
  old_fingerprint: z.string({ error: 'a string or null' }).nullable().optional(),
  user_id: param.integer().optional(),
  username: param.text().optional(),
  self: param.flag().optional(),
  holder: param.idOrPath().optional(),
});
/** A deploy key's upload names its project (earlier versions uploaded to all the recorded projects in one step). */
export const uploadSchema = premiseSchema.extend({
  lifetime_ms: z.number({ error: 'a number or null' }).nullable().optional(),
  project: param.idOrPath().optional(),
  can_push: param.flag().optional(),
});
export const enableSchema = premiseSchema.extend({ project: param.idOrPath(), can_push: param.flag() });
export const verifySchema = rotationSchema.extend({ projects: placesSchema.optional() });
export const runOnRotateSchema = rotationSchema.extend({
  command: param.text(),
  env: z.string({ error: 'a string' }).optional(),
  /** A key on several holders: the projects that hold the old key or could not be read when decided; absent in earlier versions' actions. */
  holders: z.array(param.idOrPath(), { error: 'a list of project ids or paths' }).optional(),
});
export const removeSchema = premiseSchema.extend({
  after_hook: param.flag().optional(),
  new_key_id: z.int({ error: 'an integer or null' }).nullable().optional(),
  fingerprint: z.string({ error: 'a string or null' }).nullable().optional(),
  /** Deploy keys: the projects holding the old key when decided; absent in earlier versions' actions: the recorded ones. */
  projects: placesSchema.optional(),
  /** Deploy keys: whether every selected project was read; if not, the rotation stays open after this removal. */
  complete: param.flag().optional(),
  /** The old key came back after the rotation was done: removed again where the new key is now. */
  again: param.flag().optional(),
});
export const closeSchema = rotationSchema.extend({ reason: param.text() });
/** Taking the new key away from one holder (`project` of a key on several), as a repair of the bot's own harm. */
export const removeNewSchema = premiseSchema.extend({
  new_key_id: param.integer(),
  fingerprint: z.string({ error: 'a string or null' }).nullable().optional(),
  why: z.enum(['revoked', 'withdrawn'], { error: 'revoked | withdrawn' }),
  project: param.idOrPath().optional(),
});

/** The record a rotation starts with, `planned`, from its write step's params. */
export function recordOfStart(id: string, start: Start, now: Date, generation: number): RotationRecord {
  return {
    id,
    kind: start.kind.name,
    step: 'planned',
    attempt: 1,
    title: start.title,
    old_key_id: start.old_key_id,
    old_fingerprint: start.old_fingerprint ?? null,
    owner: start.owner,
    ...(start.holder !== undefined ? { holder: start.holder } : {}),
    projects: start.projects,
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
    ...(start.kind.holders === 'several' ? { new_key_on: [] } : {}),
  };
}
