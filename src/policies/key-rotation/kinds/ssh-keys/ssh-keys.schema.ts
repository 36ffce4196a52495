import { z } from 'zod';
import { duration, re2List } from '../../../../config/validators';

/** The `ssh_keys` entries of a key_rotation policy. */

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

export const sshKeysSchema = z
  .strictObject({
    user: userRef()
      .prefault('self')
      .describe(
        'Whose keys: self (the token’s user), or another user by id or username (needs an administrator’s token).',
      ),
    titles: re2List().describe(
      'RE2 expressions on the key title, unanchored; one must match. Only these keys are managed.',
    ),
    rotate_before: duration().describe(
      'Rotate a key this long before its expires_at (or once it has passed while it is still listed).',
    ),
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
