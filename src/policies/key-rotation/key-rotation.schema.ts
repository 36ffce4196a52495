import { resolve } from 'node:path';
import { z } from 'zod';
import { definePolicyType, type PolicyConfig } from '../../config/policy-type';
import { period } from '../../config/validators';
import type { CredentialKind, CredentialKinds } from './credential-kind';
import { CREDENTIAL_KINDS, TOKEN_KINDS } from './kinds';
import type { TokenKind, TokenKinds } from './token-kind';
import type { TokenRule } from './token-rotation.schema';
import { KEY_TYPES } from './openssh';

/**
 * `key_rotation`: rotates credentials before they expire or grow old, new key first, old key removed after a grace
 * period. Each credential kind adds its section (`ssh_keys`, `deploy_keys`); the settings here are every kind's.
 * Field names are snake_case like the forge's own.
 */

const DESCRIPTION =
  'Rotates expiring SSH keys, deploy keys and access and deploy tokens: new credential first (kept in secrets_dir), delivered and verified, the old one removed after a grace period; crash-safe.';

/** What comes before the kinds' sections in the policy file. */
const SETTINGS = {
  interval: period().describe('How often the keys are read.'),
  secrets_dir: z
    .string({ error: 'expected the directory the private keys are written to' })
    .min(1, { error: 'expected the directory the private keys are written to' })
    // Resolved once, when loading: a path relative to wherever the daemon happened to start is a surprise later.
    .transform((path) => resolve(path))
    .describe(
      'Directory the new private keys are written to (mode 0600), one file per managed key under <policy name>/. Must exist and be writable.',
    ),
  key_type: z
    .enum(KEY_TYPES, { error: 'expected ed25519, rsa or ecdsa' })
    .default('ed25519')
    .describe('ed25519, rsa (4096 bits) or ecdsa (nistp256).'),
};

/** What comes after them. */
const DELIVERY = {
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
};

/** The policy type over `kinds` and `tokens`: the settings, each kind's section, then delivery and limits. */
export function keyRotationDefinition<
  Sections extends Readonly<Record<string, CredentialKind>>,
  TokenSections extends Readonly<Record<string, TokenKind>> = typeof TOKEN_KINDS.sections,
>(
  kinds: CredentialKinds<Sections>,
  tokens: TokenKinds<TokenSections> = TOKEN_KINDS as unknown as TokenKinds<TokenSections>,
) {
  const base = definePolicyType('key_rotation', DESCRIPTION, {
    ...SETTINGS,
    ...kinds.schemas(),
    ...tokens.schemas(),
    ...DELIVERY,
  });
  const tokenSections = tokens.entries().map(([section]) => section);
  const sections = [...kinds.entries().map(([section]) => section), ...tokenSections];
  const empty = (list: unknown) => list === undefined || (Array.isArray(list) && list.length === 0);
  const schema = base.schema
    .refine((policy) => sections.some((section) => !empty((policy as Record<string, unknown>)[section])), {
      path: [sections[0]],
      error: `this policy would never act: give ${sections.join(', ')}${sections.length === 2 ? ' or both' : sections.length > 2 ? ' or several' : ''}`,
      when: (payload) => {
        const input = payload.value as Record<string, unknown> | undefined;
        return sections.every((section) => empty(input?.[section]));
      },
    })
    .superRefine((policy, ctx) => {
      // A token delivered to on_rotate needs the policy's on_rotate: said where the delivery is written.
      if ((policy as Record<string, unknown>).on_rotate !== undefined) return;
      for (const section of tokenSections) {
        ((policy as Record<string, unknown>)[section] as TokenRule[] | undefined)?.forEach((rule, index) =>
          rule.deliver.forEach((delivery, at) => {
            if ('on_rotate' in delivery)
              ctx.addIssue({
                code: 'custom',
                path: [section, index, 'deliver', at, 'on_rotate'],
                message: 'this delivery runs on_rotate, which the policy does not set',
              });
          }),
        );
      }
    });
  return { ...base, schema } as const;
}

export const keyRotationPolicy = keyRotationDefinition(CREDENTIAL_KINDS);

export type KeyRotationConfig = z.output<typeof keyRotationPolicy.schema>;

/** What the core reads of a key_rotation policy whatever its kinds: the settings, delivery and limits. */
export type RotationConfig = PolicyConfig & z.output<z.ZodObject<typeof SETTINGS & typeof DELIVERY>>;

export type { DeployKeysRule } from './kinds/deploy-keys/deploy-keys';
export type { SshKeysRule, UserRef } from './kinds/ssh-keys/ssh-keys';
