import { z } from 'zod';
import type { ActContext, TargetProbe } from '../../../../engine/policy';
import { onePage, readFirstPage, selectionProbes } from '../../../../engine/probe';
import { count } from '../../../../engine/words';
import { ApiError, NotFoundError } from '../../../../gitlab/transport/errors';
import type { DeployKey } from '../../../../gitlab/types/keys';
import type { CredentialKind } from '../../credential-kind';
import {
  anotherKey,
  createAdopting,
  findByFingerprint,
  ignoreNotFound,
  type ListedKey,
  listKeys,
  newKeyIn,
  oldKeyProblem,
} from '../../key-rotation.listed';
import { placesSchema } from '../../key-rotation.params';
import {
  type DeployProject,
  differs,
  placedOn,
  refKey,
  REVOKED_FIRST,
  type RotationRecord,
} from '../../key-rotation.record';
import { type DeployKeysFacts, observeDeployKeys } from './deploy-keys.observe';
import { observeDeployRotations } from './deploy-keys.rotations';
import { type DeployKeysRule, deployKeysSchema } from './deploy-keys.schema';
import { deployView } from './deploy-keys.view';

export type { DeployKeysFacts, ObservedDeployKey } from './deploy-keys.observe';
export type { DeployKeysRule } from './deploy-keys.schema';

/**
 * Projects' deploy keys: one key spread over several projects (enabled on each, with its own can_push there), rotated
 * once it is old. The new key is created on the first project that holds the old one and enabled on the others.
 */
export const deployKeys: CredentialKind<DeployKeysRule, DeployKeysFacts> = {
  name: 'deploy',
  schema: z
    .array(deployKeysSchema, {
      error: 'expected a list such as [{ projects: [acme/api], titles: ["^release"], rotate_after: 90d, grace: 1d }]',
    })
    .default([]),
  holders: 'several',

  observe: observeDeployKeys,
  observeRotations: observeDeployRotations,
  view: deployView,
  summary: (facts) =>
    count(
      facts.deploy.reduce((sum, keys) => sum + keys.length, 0),
      'deploy key',
    ),
  // Only where globs or excludes decide which projects these are: a list written out needs no echo.
  covered: (rules, facts) =>
    rules.some((entry) => entry.projects.globs.length + entry.projects.excludes.length > 0)
      ? (facts.deployProjects ?? []).map(String)
      : undefined,
  probes: (rules) =>
    uniqueTargets(
      rules.flatMap((entry) =>
        selectionProbes(entry.projects, {
          what: 'deploy keys',
          needs: 'Maintainer role or higher',
          read: (client, project) => readFirstPage(client.deployKeys.all(project, onePage())),
        }),
      ),
    ),

  start: z.object({ projects: placesSchema }).transform((start) => ({ owner: null, projects: start.projects })),

  /** Created on one project (or adopted there: the recorded id, or a key with the recorded fingerprint), with the old key's can_push there. */
  async upload(context, record, publicKey, { place }) {
    if (!place) throw new Error(`rotation ${record.id} lists no project`);
    const find = () => findDeployKey(context, place.project, record);
    const listed = await find();
    const known = record.new_key_id ?? listed?.id;
    let id: number;
    if (known === undefined) {
      id = (
        await createAdopting(
          () =>
            context.client.deployKeys.create(place.project, {
              title: record.title,
              key: publicKey,
              can_push: place.can_push,
            }),
          find,
        )
      ).key.id;
      await matchCanPush(context, id, place, await find());
    } else {
      id = known;
      await placeOn(context, record, id, place, listed);
    }
    return {
      recorded: {
        new_key_id: id,
        new_key_on: [...new Set([...placedOn(record), refKey(place.project)])],
        project_ids: { ...record.project_ids, [refKey(place.project)]: await projectId(context, place.project) },
      },
      detail: `${known !== undefined ? 'adopted deploy key already on the forge' : 'created deploy key'} ${id} ${record.fingerprint ?? ''} on ${place.project}`,
    };
  },

  async spread(context, record, newKeyId, place) {
    const enabled = await placeOn(
      context,
      record,
      newKeyId,
      place,
      await findDeployKey(context, place.project, record),
    );
    return { enabled, projectId: await projectId(context, place.project) };
  },

  async listedAnywhere(context, record) {
    for (const { project } of record.projects) {
      const keys = await projectKeys(context, project);
      if (keys?.some((key) => key.fingerprint === record.fingerprint)) return true;
    }
    return false;
  },

  /** A 404 (project gone) reaches the executor as the target gone. */
  async oldKeyHeld(context, record, project) {
    if (project === undefined) throw new Error(`rotation ${record.id} lists no project`);
    const keys = await listKeys(context.client.deployKeys.all(project));
    return oldKeyProblem(keys, record, {
      gone: `${project} no longer holds old key ${record.old_key_id}`,
      named: `deploy key ${record.old_key_id} on ${project}`,
    });
  },

  /**
   * Each of `projects`, and each project the bot put the new key on, that holds the old key now and lacks the new key
   * (or has it with another can_push than the old key there), or that cannot be read now (not covered: it may hold the
   * old key); or everywhere, when no project lists it.
   */
  async newKeyMissing(context, record, projects) {
    const wanted = new Map<string, string | number>();
    for (const { project } of projects) wanted.set(refKey(project), project);
    for (const ref of placedOn(record)) if (!wanted.has(ref)) wanted.set(ref, record.project_ids?.[ref] ?? ref);
    const missing: string[] = [];
    const on: string[] = [];
    for (const [ref, project] of wanted) {
      let keys: ListedKey[];
      try {
        keys = await listKeys(context.client.deployKeys.all(project));
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        missing.push(`${project} (not readable now: ${error.summary})`);
        continue;
      }
      const fresh = keys.find((key) => key.id === record.new_key_id && !differs(key.fingerprint, record.fingerprint));
      if (fresh) on.push(ref);
      const old = keys.find((key) => key.id === record.old_key_id);
      if (old && (!fresh || fresh.can_push !== old.can_push)) missing.push(String(project));
    }
    if (on.length === 0 && missing.length === 0) missing.push('every project');
    return { missing, on };
  },

  async removeBlocked(context, record, projects) {
    for (const { project } of projects) {
      const keys = await projectKeys(context, project);
      const old = keys?.find((key) => key.id === record.old_key_id);
      if (!keys) continue;
      if (!old) {
        // Gone beside the new key, and not by the bot (which records its removal before sending it): a revocation.
        const byBot = record.old_removed_on?.includes(refKey(project)) === true;
        if (!byBot && newKeyIn(keys, record) === undefined)
          return `old key ${record.old_key_id} is gone from ${project}, not removed by the bot: ${REVOKED_FIRST}`;
        continue;
      }
      const another = anotherKey(`deploy key ${record.old_key_id} on ${project}`, old, record);
      if (another) return `${another}: not removed`;
      const problem = newKeyIn(keys, record);
      if (problem) return `${problem} on ${project}, which holds old key ${record.old_key_id}: the old key is kept`;
      const fresh = keys.find((key) => key.id === record.new_key_id);
      if (fresh && fresh.can_push !== old.can_push)
        return `new key ${record.new_key_id} on ${project} has can_push ${fresh.can_push}, old key ${record.old_key_id} ${old.can_push}: the old key is kept`;
    }
    return undefined;
  },

  async newKeyHeld(context, record, project) {
    if (project === undefined) throw new Error(`rotation ${record.id} names no project`);
    const problem = newKeyIn(await listKeys(context.client.deployKeys.all(project)), record);
    return problem && `${problem} on ${project}`;
  },

  async removeNew(context, record, project) {
    if (project === undefined || record.new_key_id === null)
      throw new Error(`rotation ${record.id} names no project or no new key`);
    let gone = false;
    const id = record.new_key_id;
    await ignoreNotFound(
      () => context.client.deployKeys.remove(project, id),
      () => (gone = true),
    );
    return gone;
  },

  async removeOld(context, record, projects) {
    const gone: string[] = [];
    for (const { project } of projects)
      await ignoreNotFound(
        () => context.client.deployKeys.remove(project, record.old_key_id),
        () => gone.push(String(project)),
      );
    return gone;
  },
};

function findDeployKey(
  context: ActContext,
  project: string | number,
  record: RotationRecord,
): Promise<DeployKey | undefined> {
  return findByFingerprint(context.client.deployKeys.all(project), record.fingerprint);
}

/** Enables the new key on `place` unless it is `listed` there already, then gives it the old key's can_push; answers whether it enabled it. */
async function placeOn(
  context: ActContext,
  record: RotationRecord,
  id: number,
  place: DeployProject,
  listed: DeployKey | undefined,
): Promise<boolean> {
  let found = listed;
  if (!found) {
    await context.client.deployKeys.enable(place.project, id);
    found = await findDeployKey(context, place.project, record);
  }
  await matchCanPush(context, id, place, found);
  return listed === undefined;
}

async function matchCanPush(
  context: ActContext,
  id: number,
  place: DeployProject,
  listed: DeployKey | undefined,
): Promise<void> {
  if (listed && listed.can_push !== place.can_push)
    await context.client.deployKeys.edit(place.project, id, { can_push: place.can_push });
}

/** The forge's id of a project the bot puts a key on: the record follows it by id through renames and transfers. */
async function projectId(context: ActContext, project: string | number): Promise<number> {
  return typeof project === 'number' ? project : (await context.client.projects.show(project)).id;
}

/** A project's deploy keys as the forge lists them now; undefined when the project is gone (404). */
async function projectKeys(context: ActContext, project: string | number): Promise<ListedKey[] | undefined> {
  try {
    return await listKeys(context.client.deployKeys.all(project));
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
}

/** Each probe once: a project (or a glob's group) several `deploy_keys` entries name is probed once, where first named. */
function uniqueTargets(probes: readonly TargetProbe[]): TargetProbe[] {
  const seen = new Set<string>();
  return probes.filter((probe) => {
    if (seen.has(probe.target)) return false;
    seen.add(probe.target);
    return true;
  });
}
