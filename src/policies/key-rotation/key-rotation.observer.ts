import type { ProjectRef } from '../../config/validators';
import type { ObserveContext } from '../../engine/policy';
import { isAdminView } from '../../gitlab/types/users';
import type { CredentialKind, CredentialKinds, TokenUser } from './credential-kind';
import { type KeyRotationSnapshot, rulesOf, type RotationSnapshot } from './key-rotation.decide';
import type { KeyFiles } from './key-rotation.key-files';
import { openRotations, type RotationRecord } from './key-rotation.record';
import type { RotationConfig } from './key-rotation.schema';
import { loadKnown } from './key-rotation.step-record';

/** What a pass observed: what decide needs, and the projects whose deploy keys it read (for `plan`). */
export type KeyRotationObservation = KeyRotationSnapshot & {
  /** Every project whose deploy keys were read, each once, in the order selected; a project gone meanwhile is left out. */
  readonly deployProjects: readonly ProjectRef[];
};

/**
 * Reading what key_rotation decides on: the token's user (and whether it is an administrator), each kind's
 * credentials (each entry's, then, for the kind's open rotations, what its entries did not list), and the records of
 * rotations under way. It refuses first when secrets_dir cannot hold keys: a pass that fails names the directory, and
 * nothing is generated or uploaded (the engine goes on with the other policies). Each user and each project is read on
 * its own: one the forge refuses or fails to answer is recorded as unobserved (the pass ends partial) and the others'
 * rotations go on.
 */
export async function observeRotations(
  kinds: CredentialKinds,
  keyFiles: KeyFiles,
  config: RotationConfig,
  context: ObserveContext,
): Promise<RotationSnapshot> {
  const problem = await keyFiles.unusable(config.secrets_dir);
  if (problem) throw new Error(`${problem}; policy ${config.name} refuses to rotate keys until it is fixed`);
  const me = await context.client.users.current();
  const token: TokenUser = { id: me.id, username: me.username, admin: isAdminView(me) && me.is_admin };
  const ids = new Set(await openRotations(context.state));

  const observed: Array<{ kind: CredentialKind; rules: unknown[]; facts: unknown }> = [];
  for (const [section, kind] of kinds.entries()) {
    const rules = rulesOf(config, section);
    const { facts, rotations } = await kind.observe(rules, context, token);
    for (const id of rotations) ids.add(id);
    observed.push({ kind, rules, facts });
  }

  const rotations: Record<string, RotationRecord> = {};
  for (const id of [...ids].sort()) {
    const record = await loadKnown(kinds, context.state, id);
    if (record) rotations[id] = record;
  }
  let snapshot: RotationSnapshot = Object.assign({}, ...observed.map(({ facts }) => facts), {
    rotations,
  }) as RotationSnapshot;
  for (const { kind, rules, facts } of observed) {
    const records = Object.values(rotations).filter((record) => kinds.named(record.kind) === kind);
    if (kind.observeRotations)
      snapshot = { ...snapshot, ...(await kind.observeRotations(rules, facts, records, context, token)) };
  }
  return snapshot;
}
