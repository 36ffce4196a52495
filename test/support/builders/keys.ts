import type {
  KeyRotationSnapshot,
  ObservedDeployKey,
  ObservedSshKey,
  SshOwnerSnapshot,
} from '../../../src/policies/key-rotation/key-rotation.decide';
import type { RotationRecord } from '../../../src/policies/key-rotation/key-rotation.record';
import { type KeyRotationConfig, keyRotationPolicy } from '../../../src/policies/key-rotation/key-rotation.schema';
import { generateEd25519PublicKey } from '../../../src/sandbox/ssh-key';
import { BASE_NOW } from '../world-builders';

/**
 * Builders for key_rotation tests: small, readable defaults, with only what a test is about spelled out. The config
 * goes through the real schema, so durations and RE2 titles are the ones a policy file gets.
 */

/** The clock of the tests: the sandbox worlds' start, 2025-06-02 12:00 UTC. */
export const NOW = new Date(BASE_NOW);
const DAY_MS = 86_400_000;

export const daysFromNow = (days: number): string => new Date(NOW.getTime() + days * DAY_MS).toISOString();

/**
 * A key_rotation policy as written in YAML, parsed by the real schema: the token's own `ci-deploy` keys 14 days
 * before expiry, and `release` deploy keys of acme/api and acme/web after 90 days, a day of grace each.
 */
export function aRotationConfig(fields: Record<string, unknown> = {}): KeyRotationConfig {
  return keyRotationPolicy.schema.parse({
    name: 'rotate',
    type: 'key_rotation',
    interval: '1h',
    secrets_dir: '/var/lib/forgewarden/keys',
    ssh_keys: [{ user: 'self', titles: ['^ci-deploy'], rotate_before: '14d', lifetime: '90d', grace: '1d' }],
    deploy_keys: [{ projects: ['acme/api', 'acme/web'], titles: ['^release'], rotate_after: '90d', grace: '1d' }],
    ...fields,
  });
}

/** An SSH key of the listing, expiring `expiresInDays` after NOW (null: never). */
export function anSshKey(
  id: number,
  title: string,
  expiresInDays: number | null,
  fields: Partial<ObservedSshKey> = {},
): ObservedSshKey {
  return {
    id,
    title,
    created_at: daysFromNow(-300),
    expires_at: expiresInDays === null ? null : daysFromNow(expiresInDays),
    fingerprint: `SHA256:old-${id}`,
    ...fields,
  };
}

/** Root's new key 912 as the forge lists it once uploaded: the recorded id and fingerprint. */
export const newSshKey = (fields: Partial<ObservedSshKey> = {}): ObservedSshKey =>
  anSshKey(912, 'ci-deploy', 89, { fingerprint: 'SHA256:new-12', ...fields });

/** The token's own user `root` (id 1) with `keys`. */
export function ownKeys(...keys: ObservedSshKey[]): SshOwnerSnapshot {
  return { access: 'ok', owner: { user_id: 1, username: 'root', self: true }, keys };
}

/** A deploy key created `ageDays` before NOW on acme/api (can push) and acme/web. */
export function aDeployKey(
  id: number,
  title: string,
  ageDays: number,
  fields: Partial<ObservedDeployKey> = {},
): ObservedDeployKey {
  return {
    id,
    title,
    created_at: daysFromNow(-ageDays),
    fingerprint: `SHA256:old-${id}`,
    projects: [
      { project: 'acme/api', can_push: true },
      { project: 'acme/web', can_push: false },
    ],
    ...fields,
  };
}

/** The record of root's SSH key `oldKeyId` at `step`, as the steps leave it; verified a day before NOW when past upload. */
export function aRecord(
  oldKeyId: number,
  step: RotationRecord['step'],
  fields: Partial<RotationRecord> = {},
): RotationRecord {
  const past = (index: number) =>
    ['planned', 'key_written', 'uploaded', 'verified', 'hooked', 'done'].indexOf(step) >= index;
  return {
    id: `ssh-1-${oldKeyId}`,
    kind: 'ssh',
    step,
    attempt: 3,
    title: 'ci-deploy',
    old_key_id: oldKeyId,
    old_fingerprint: `SHA256:old-${oldKeyId}`,
    owner: { user_id: 1, username: 'root', self: true },
    projects: [],
    path: `/var/lib/forgewarden/keys/rotate/root-${oldKeyId}`,
    key_type: 'ed25519',
    grace_ms: DAY_MS,
    lifetime_ms: 90 * DAY_MS,
    fingerprint: past(1) ? `SHA256:new-${oldKeyId}` : null,
    new_key_id: past(2) ? 900 + oldKeyId : null,
    expires_at: past(2) ? daysFromNow(89) : null,
    started_at: daysFromNow(-1),
    verified_at: past(3) ? daysFromNow(-1) : null,
    removed_at: step === 'done' ? NOW.toISOString() : null,
    last_error: null,
    ...fields,
  };
}

export function aKeySnapshot(parts: Partial<KeyRotationSnapshot> = {}): KeyRotationSnapshot {
  return { ssh: [], deploy: [], rotations: {}, ...parts };
}

/** A fresh, valid public key line for sandbox worlds. */
export function aPublicKey(comment = 'old'): string {
  return generateEd25519PublicKey(comment);
}
