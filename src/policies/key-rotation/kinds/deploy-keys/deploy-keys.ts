import { z } from 'zod';
import type { PolicyContext, TargetProbe } from '../../../../engine/policy';
import { onePage, readFirstPage, selectionProbes } from '../../../../engine/probe';
import { count } from '../../../../engine/words';
import { NotFoundError } from '../../../../gitlab/transport/errors';
import type { DeployKey } from '../../../../gitlab/types/keys';
import type { CredentialKind, KindView, ManagedKey, Premise, UnreadProject } from '../../credential-kind';
import { anotherKey, createAdopting, findByFingerprint, ignoreNotFound, type ListedKey, listKeys, newKeyIn, oldKeyProblem } from '../../key-rotation.listed';
import { placesSchema } from '../../key-rotation.params';
import { type DeployProject, deployRotationId, differs, placedOn, refKey, type RotationRecord } from '../../key-rotation.record';
import { dueByAge } from '../../key-rotation.timing';
import { type DeployKeysFacts, observeDeployKeys, type ObservedDeployKey } from './deploy-keys.observe';
import { type DeployKeysRule, deployKeysSchema } from './deploy-keys.schema';

export type { DeployKeysFacts, ObservedDeployKey } from './deploy-keys.observe';
export type { DeployKeysRule } from './deploy-keys.schema';

/**
 * Projects' deploy keys: one key spread over several projects (enabled on each, with its own can_push there), rotated
 * once it is old. The new key is created on the first project that holds the old one and enabled on the others.
 */
export const deployKeys: CredentialKind<DeployKeysRule, DeployKeysFacts> = {
  name: 'deploy',
  schema: z
    .array(deployKeysSchema, { error: 'expected a list such as [{ projects: [acme/api], titles: ["^release"], rotate_after: 90d, grace: 1d }]' })
    .default([]),
  holders: 'several',

  observe: observeDeployKeys,
  view: deployView,
  summary: (facts) => count(facts.deploy.reduce((sum, keys) => sum + keys.length, 0), 'deploy key'),
  // Only where globs or excludes decide which projects these are: a list written out needs no echo.
  covered: (rules, facts) => (rules.some((entry) => entry.projects.globs.length + entry.projects.excludes.length > 0) ? (facts.deployProjects ?? []).map(String) : undefined),
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
      id = (await createAdopting(() => context.client.deployKeys.create(place.project, { title: record.title, key: publicKey, can_push: place.can_push }), find)).key.id;
      await matchCanPush(context, id, place, await find());
    } else {
      id = known;
      await placeOn(context, record, id, place, listed);
    }
    return {
      recorded: { new_key_id: id, new_key_on: [...new Set([...placedOn(record), refKey(place.project)])] },
      detail: `${known !== undefined ? 'adopted deploy key already on the forge' : 'created deploy key'} ${id} ${record.fingerprint ?? ''} on ${place.project}`,
    };
  },

  spread: async (context, record, newKeyId, place) => placeOn(context, record, newKeyId, place, await findDeployKey(context, place.project, record)),

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
    return oldKeyProblem(keys, record, { gone: `${project} no longer holds old key ${record.old_key_id}`, named: `deploy key ${record.old_key_id} on ${project}` });
  },

  /**
   * Each of `projects`, and each project the bot put the new key on, that holds the old key now and lacks the new key
   * (or has it with another can_push than the old key there); or everywhere, when no project lists it. A project gone
   * (404) counts for neither.
   */
  async newKeyMissing(context, record, projects) {
    const wanted = new Map<string, string | number>();
    for (const { project } of projects) wanted.set(refKey(project), project);
    for (const ref of placedOn(record)) if (!wanted.has(ref)) wanted.set(ref, ref);
    const missing: string[] = [];
    const on: string[] = [];
    for (const [ref, project] of wanted) {
      const keys = await projectKeys(context, project);
      if (!keys) continue;
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
      if (!keys || !old) continue;
      const another = anotherKey(`deploy key ${record.old_key_id} on ${project}`, old, record);
      if (another) return `${another}: not removed`;
      const problem = newKeyIn(keys, record);
      if (problem) return `${problem} on ${project}, which holds old key ${record.old_key_id}: the old key is kept`;
      const fresh = keys.find((key) => key.id === record.new_key_id);
      if (fresh && fresh.can_push !== old.can_push) return `new key ${record.new_key_id} on ${project} has can_push ${fresh.can_push}, old key ${record.old_key_id} ${old.can_push}: the old key is kept`;
    }
    return undefined;
  },

  async removeOld(context, record, projects) {
    const gone: string[] = [];
    for (const { project } of projects) await ignoreNotFound(() => context.client.deployKeys.remove(project, record.old_key_id), () => gone.push(String(project)));
    return gone;
  },
};

function findDeployKey(context: PolicyContext, project: string | number, record: RotationRecord): Promise<DeployKey | undefined> {
  return findByFingerprint(context.client.deployKeys.all(project), record.fingerprint);
}

/** Enables the new key on `place` unless it is `listed` there already, then gives it the old key's can_push; answers whether it enabled it. */
async function placeOn(context: PolicyContext, record: RotationRecord, id: number, place: DeployProject, listed: DeployKey | undefined): Promise<boolean> {
  let found = listed;
  if (!found) {
    await context.client.deployKeys.enable(place.project, id);
    found = await findDeployKey(context, place.project, record);
  }
  await matchCanPush(context, id, place, found);
  return listed === undefined;
}

async function matchCanPush(context: PolicyContext, id: number, place: DeployProject, listed: DeployKey | undefined): Promise<void> {
  if (listed && listed.can_push !== place.can_push) await context.client.deployKeys.edit(place.project, id, { can_push: place.can_push });
}

/** A project's deploy keys as the forge lists them now; undefined when the project is gone (404). */
async function projectKeys(context: PolicyContext, project: string | number): Promise<ListedKey[] | undefined> {
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

/** Deploy keys as the entries that manage a title show them, and those entries' projects that could not be read. */
interface DeployView {
  readonly keys: ReadonlyMap<number, ObservedDeployKey>;
  readonly unread: readonly UnreadProject[];
}

function deployView(rules: readonly DeployKeysRule[], facts: DeployKeysFacts, now: Date): KindView {
  const views = new Map<string, DeployView>();
  /**
   * Each key with every project it is on of the entries that manage `title` (all entries when none does, for a
   * rotation whose entry changed), computed once per set of entries: a key is rotated on all the policy's projects that hold it.
   */
  const merged = (title: string): DeployView => {
    const matching = rules.flatMap((rule, index) => (rule.titles.some((pattern) => pattern.test(title)) ? [index] : []));
    const entries = matching.length > 0 ? matching : rules.map((_, index) => index);
    const id = entries.join(',');
    const known = views.get(id);
    if (known) return known;
    const keys = new Map<number, ObservedDeployKey>();
    const unread = new Map<string, UnreadProject>();
    for (const index of entries) {
      for (const key of facts.deploy[index] ?? []) {
        const seen = keys.get(key.id);
        if (!seen) {
          keys.set(key.id, key);
          continue;
        }
        const on = new Set(seen.projects.map((p) => refKey(p.project)));
        keys.set(key.id, { ...seen, projects: [...seen.projects, ...key.projects.filter((p) => !on.has(refKey(p.project)))] });
      }
      for (const project of facts.deployUnread?.[index] ?? []) if (!unread.has(refKey(project.project))) unread.set(refKey(project.project), project);
    }
    const view = { keys, unread: [...unread.values()] };
    views.set(id, view);
    return view;
  };
  return {
    listings: () =>
      rules.map((rule, index) => ({
        titles: rule.titles,
        keys: (facts.deploy[index] ?? []).map((key) => managedDeployKey(rule, merged(key.title).keys.get(key.id) ?? key, now)),
      })),
    premise: (record) => deployPremise(merged(record.title), record),
    unlisted: (record) => ({ target: `deploy key ${record.old_key_id} "${record.title}" (no longer listed)`, lifetime: undefined }),
  };
}

function managedDeployKey(rule: DeployKeysRule, key: ObservedDeployKey, now: Date): ManagedKey {
  const due = dueByAge(rule.rotate_after, key.created_at, now);
  return {
    keyId: key.id,
    title: key.title,
    fingerprint: key.fingerprint,
    rotation: deployRotationId(key.id),
    target: `deploy key ${key.id} "${key.title}" (${key.projects.map((p) => p.project).join(', ')})`,
    // The new key is created on the first project the old one is on: with none, there is nowhere to create it.
    due: key.projects.length === 0 ? { ...due, rotate: false } : due,
    lifetime: undefined,
    grace: rule.grace,
    owner: null,
    projects: key.projects,
    holderName: String(key.projects[0]?.project ?? ''),
  };
}

/**
 * Whether a deploy rotation still rests on what the forge shows: the key with the old id is the old key, and once
 * created the new key is the recorded one and is still on every project the bot put it on that holds the old key (a
 * person removing it there says not to have it). Before the new key exists, an old key on none of the projects read
 * (removed by a person, its projects gone) is not replaced.
 */
function deployPremise(view: DeployView, record: RotationRecord): Premise {
  const old = view.keys.get(record.old_key_id);
  const unreadable = view.unread.filter((project) => !project.gone);
  const notRead = unreadable.map((project) => project.project).join(', ');
  if (old && differs(old.fingerprint, record.old_fingerprint)) {
    return { close: `deploy key ${record.old_key_id} on ${old.projects[0]?.project ?? '?'} is another key than the one this rotation replaces (${old.fingerprint ?? '?'}, not ${record.old_fingerprint ?? '?'})` };
  }
  const oldOn = old?.projects ?? [];
  if (record.new_key_id === null) {
    if (oldOn.length > 0) return { oldOn, newOn: new Map(), unreadable };
    if (unreadable.length > 0) return { wait: `skip: old key ${record.old_key_id} is on none of the projects read; ${notRead} could not be read; the rotation waits` };
    return { close: `old key ${record.old_key_id} is on none of the selected projects any more (${goneText(record, view.unread)}): no new key is created` };
  }
  const fresh = view.keys.get(record.new_key_id);
  if (fresh && differs(fresh.fingerprint, record.fingerprint)) {
    return { close: `deploy key ${record.new_key_id} on ${fresh.projects[0]?.project ?? '?'} is not the new key ${record.fingerprint ?? '?'} (it is ${fresh.fingerprint ?? '?'})` };
  }
  const newOn = new Map((fresh?.projects ?? []).map((p) => [refKey(p.project), p.can_push]));
  const placed = placedOn(record);
  const removed = oldOn.filter((p) => placed.has(refKey(p.project)) && !newOn.has(refKey(p.project)));
  if (removed.length > 0) return { close: `new key ${record.new_key_id} is gone from ${removed.map((p) => p.project).join(', ')}` };
  if (newOn.size === 0) {
    if (unreadable.length > 0) return { wait: `skip: new key ${record.new_key_id} is on none of the projects read; ${notRead} could not be read; the rotation waits` };
    return { close: `new key ${record.new_key_id} is gone from the forge (${goneText(record, view.unread)})` };
  }
  return { oldOn, newOn, unreadable };
}

/** Why a deploy rotation finds nothing: its recorded projects that are gone, or that the keys were removed. */
function goneText(record: RotationRecord, unread: readonly UnreadProject[]): string {
  const gone = new Set(unread.filter((p) => p.gone).map((p) => refKey(p.project)));
  const projects = record.projects.filter((p) => gone.has(refKey(p.project))).map((p) => p.project);
  if (projects.length > 0 && projects.length === record.projects.length) return `${projects.length === 1 ? 'project' : 'projects'} ${projects.join(', ')} gone from the forge`;
  return 'removed by someone else, or its projects gone or no longer selected';
}

