import { resolve } from 'node:path';
import { z } from 'zod';
import { definePolicyType } from '../../config/policy-type';
import { duration, period, projectSelection, re2List } from '../../config/validators';
import { KEY_TYPES } from './openssh';

/**
 * `key_rotation`: rotates the SSH keys of users and the deploy keys of projects before they expire or grow old,
 * new key first, old key removed after a grace period. Field names are snake_case like the forge's own; the rules
 * live in key-rotation.decide.ts, the crash-safe steps in key-rotation.actions.ts.
 */

const USERNAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;
const USER_HINT = 'expected self, a user id or a username';

/** Whose keys: `self` (the token's user), a numeric id, or a username. */
const userRef = () =>
  z.union(
    [
      z.literal('self'),
      z.number().int().positive({ error: 'a user id must be a positive whole number' }),
      z.string().regex(/^\d+$/).transform(Number),
      z.string().regex(USERNAME, { error: USER_HINT }),
    ],
    { error: USER_HINT },
  );

export type UserRef = z.output<ReturnType<typeof userRef>>;

const sshKeysSchema = z
  .strictObject({
    user: userRef().prefault('self').describe('Whose keys: self (the token’s user), or another user by id or username (needs an administrator’s token).'),
    titles: re2List().describe('RE2 expressions on the key title, unanchored; one must match. Only these keys are managed.'),
    rotate_before: duration().describe('Rotate a key this long before its expires_at (or once it has passed while it is still listed).'),
    lifetime: duration().describe('The new key expires this long after it is uploaded.'),
    grace: duration().describe('Both keys live this long after the new one is verified; then the old one is removed.'),
  })
  .refine((entry) => entry.lifetime > entry.rotate_before, {
    path: ['lifetime'],
    error: 'lifetime must be longer than rotate_before, or every new key would be rotated at once',
    // Only once both durations are valid (the value seen here is already in milliseconds); a bad one is reported where it is.
    when: (payload) => {
      const input = payload.value as Record<string, unknown> | undefined;
      return typeof input?.lifetime === 'number' && typeof input.rotate_before === 'number';
    },
  })
  .describe('SSH keys of one user to rotate before they expire.');

export type SshKeysRule = z.output<typeof sshKeysSchema>;

const deployKeysSchema = z
  .strictObject({
    projects: projectSelection().describe(
      'Projects whose deploy keys are rotated: by id (42), full path (acme/api) or glob ("acme/*" the group\'s own, "acme/**" with its subgroups); a quoted leading "!" excludes. A key shared by several of them is rotated once, on all of them.',
    ),
    include_archived: z
      .boolean({ error: 'expected true or false' })
      .default(false)
      .describe('Whether globs select archived projects too; a project listed by id or path is covered even when archived.'),
    titles: re2List().describe('RE2 expressions on the deploy key title, unanchored; one must match.'),
    // A period, not a delay: at 0s every deploy key is due again on every pass, so keys would be replaced endlessly.
    rotate_after: period().describe('Rotate a deploy key once it is this old (by created_at).'),
    grace: duration().describe('Both keys live this long after the new one is verified; then the old one is removed from each project.'),
  })
  .describe('Deploy keys to rotate once they are old.');

export type DeployKeysRule = z.output<typeof deployKeysSchema>;

const base = definePolicyType(
  'key_rotation',
  'Rotates expiring SSH keys and aging deploy keys: new key first, private half kept in secrets_dir, old key removed after a grace period; crash-safe.',
  {
    interval: period().describe('How often the keys are read.'),
    secrets_dir: z
      .string({ error: 'expected the directory the private keys are written to' })
      .min(1, { error: 'expected the directory the private keys are written to' })
      // Resolved once, when loading: a path relative to wherever the daemon happened to start is a surprise later.
      .transform((path) => resolve(path))
      .describe('Directory the new private keys are written to (mode 0600), one file per managed key under <policy name>/. Must exist and be writable.'),
    key_type: z.enum(KEY_TYPES, { error: 'expected ed25519, rsa or ecdsa' }).default('ed25519').describe('ed25519, rsa (4096 bits) or ecdsa (nistp256).'),
    ssh_keys: z.array(sshKeysSchema, { error: 'expected a list such as [{ user: self, titles: ["^ci"], rotate_before: 14d, lifetime: 90d, grace: 1d }]' }).default([]),
    deploy_keys: z
      .array(deployKeysSchema, { error: 'expected a list such as [{ projects: [acme/api], titles: ["^release"], rotate_after: 90d, grace: 1d }]' })
      .default([]),
    on_rotate: z
      .string({ error: 'expected a command' })
      .min(1, { error: 'expected a command, or leave the key out' })
      .optional()
      .describe(
        'Command (run by /bin/sh) once a new key is in place, with FORGEWARDEN_KEY_PATH, FORGEWARDEN_PUBLIC_KEY_PATH, FORGEWARDEN_KEY_TITLE, FORGEWARDEN_KEY_ID, FORGEWARDEN_KEY_FINGERPRINT and FORGEWARDEN_OLD_KEY_ID set. A failure is retried next pass; the old key stays until it succeeds.',
      ),
    on_rotate_env: z
      .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'expected the name of an environment variable' }))
      .default([])
      .describe(
        "Variables of the daemon's environment that on_rotate also gets; otherwise it sees only PATH, HOME, LANG and the key's facts. The daemon's own credentials (GITLAB_TOKEN, REDIS_URL, any configured secret) are never passed.",
      ),
    max_actions_per_run: z
      .number()
      .int({ error: 'max_actions_per_run must be a whole number' })
      .min(1, { error: 'max_actions_per_run must be at least 1' })
      .default(100)
      .describe('At most this many rotation steps in one pass; the rest continue next pass.'),
  },
);

const schema = base.schema.refine((policy) => policy.ssh_keys.length > 0 || policy.deploy_keys.length > 0, {
  path: ['ssh_keys'],
  error: 'this policy would never act: give ssh_keys, deploy_keys or both',
  when: (payload) => {
    const input = payload.value as Record<string, unknown> | undefined;
    const empty = (list: unknown) => list === undefined || (Array.isArray(list) && list.length === 0);
    return empty(input?.ssh_keys) && empty(input?.deploy_keys);
  },
});

export const keyRotationPolicy = { ...base, schema } as const;

export type KeyRotationConfig = z.output<typeof schema>;
