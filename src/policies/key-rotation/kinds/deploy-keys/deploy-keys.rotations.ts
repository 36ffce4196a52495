import type { StepContext } from '../../../../engine/policy';
import { ApiError } from '../../../../gitlab/transport/errors';
import type { TokenUser } from '../../credential-kind';
import { placedOn, refKey, type RotationRecord } from '../../key-rotation.record';
import { fingerprintOfPublicKey } from '../../openssh';
import type { DeployKeysFacts, DeployRotationFacts, InstanceKey, InstanceKeys } from './deploy-keys.observe';
import type { DeployKeysRule } from './deploy-keys.schema';

/**
 * What the deploy rotations need besides the entries' listings (docs/architecture.md, "Unseen is not gone"):
 * - Their recorded projects this pass did not read under the recorded reference, looked up by id (the forge keeps a
 *   project's id through a rename or a transfer): read under their new path (the same project), out of the token's
 *   sight now, or no longer selected (left alone).
 * - With an administrator's token, and only when something is out of sight, the instance's listing of deploy keys:
 *   where the rotations' old and new keys are enabled, seen or not, and which of them are gone from the forge.
 */
export async function observeDeployRotations(
  rules: readonly DeployKeysRule[],
  facts: DeployKeysFacts,
  records: readonly RotationRecord[],
  context: StepContext,
  token: TokenUser,
): Promise<Pick<DeployKeysFacts, 'deployRotations' | 'deployInstance'>> {
  const concerned = records.filter(
    (record) => record.step !== 'done' && (record.step !== 'closed' || record.new_key_id !== null),
  );
  if (concerned.length === 0) return {};
  const read = new Set((facts.deployProjects ?? []).map(refKey));
  const unread = new Set((facts.deployUnread ?? []).flat().map((project) => refKey(project.project)));
  const where = new Map<string, Promise<Whereabouts>>();
  const deployRotations: Record<string, DeployRotationFacts> = {};
  for (const record of concerned) {
    const moved: Record<string, string> = {};
    const unseen: Record<string, string> = {};
    for (const ref of recordedRefs(record)) {
      if (read.has(ref) || unread.has(ref)) continue;
      const id = record.project_ids?.[ref];
      const key = id !== undefined ? `#${id}` : ref;
      if (!where.has(key)) where.set(key, whereabouts(context, rules, id ?? ref, read));
      const found = await (where.get(key) as Promise<Whereabouts>);
      if ('moved' in found) moved[ref] = found.moved;
      else if ('unseen' in found) unseen[ref] = found.unseen;
    }
    deployRotations[record.id] = { moved, unseen };
  }
  const outOfSight =
    unread.size > 0 || Object.values(deployRotations).some((facts) => Object.keys(facts.unseen).length > 0);
  const deployInstance = token.admin && outOfSight ? await instanceKeys(context, concerned) : undefined;
  return { deployRotations, ...(deployInstance ? { deployInstance } : {}) };
}

/** Every project a rotation's record names: where the old key was, where the bot put the new one, and removed the old one. */
function recordedRefs(record: RotationRecord): Set<string> {
  return new Set([
    ...record.projects.map((p) => refKey(p.project)),
    ...placedOn(record),
    ...(record.old_removed_on ?? []),
  ]);
}

type Whereabouts = { readonly moved: string } | { readonly unseen: string } | { readonly outside: true };

/** A recorded project as the forge shows it now, by id where the record has it (else by its path, which follows moves). */
async function whereabouts(
  context: StepContext,
  rules: readonly DeployKeysRule[],
  ref: string | number,
  read: ReadonlySet<string>,
): Promise<Whereabouts> {
  try {
    const project = await context.client.projects.show(ref);
    const path = project.path_with_namespace;
    if (read.has(refKey(path)) || read.has(refKey(project.id)))
      return { moved: read.has(refKey(path)) ? path : String(project.id) };
    const selected = rules.some(
      (rule) => rule.projects.select([{ id: project.id, path_with_namespace: path, archived: false }], true).length > 0,
    );
    // Moved within the selection, and discovery has not found it at its new path yet: seen at the next discovery.
    return selected ? { unseen: `moved to ${path}, not read this pass` } : { outside: true };
  } catch (error) {
    if (error instanceof ApiError) return { unseen: error.summary };
    throw error;
  }
}

/**
 * The rotations' old and new keys in `GET /deploy_keys`. Optional evidence: when the listing cannot be read (the token
 * lost its administrator flag meanwhile), the rotations go on without it.
 */
async function instanceKeys(
  context: StepContext,
  records: readonly RotationRecord[],
): Promise<InstanceKeys | undefined> {
  const wanted = new Set(
    records.flatMap((record) => [record.old_key_id, ...(record.new_key_id !== null ? [record.new_key_id] : [])]),
  );
  const keys: Record<string, InstanceKey> = {};
  let readonlyKnown = false;
  try {
    for await (const key of context.client.deployKeys.allForInstance()) {
      if (key.projects_with_readonly_access !== undefined) readonlyKnown = true;
      if (!wanted.has(key.id)) continue;
      const links = (projects: typeof key.projects_with_write_access, canPush: boolean) =>
        (projects ?? []).map((project) => ({ id: project.id, path: project.path_with_namespace, can_push: canPush }));
      keys[String(key.id)] = {
        fingerprint: fingerprintOfPublicKey(key.key),
        projects: [...links(key.projects_with_write_access, true), ...links(key.projects_with_readonly_access, false)],
      };
    }
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    context.logger.warn(
      `the instance's deploy keys could not be read (${error.summary}); the rotations go on without them`,
    );
    return undefined;
  }
  return { readonlyKnown, wanted: [...wanted].sort((a, b) => a - b), keys };
}
