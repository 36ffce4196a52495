import type { Holder, KindView, Leftover, ManagedKey, Premise, UnreadProject } from '../../credential-kind';
import {
  type DeployProject,
  deployRotationId,
  differs,
  placedOn,
  refKey,
  type RotationRecord,
} from '../../key-rotation.record';
import { dueByAge } from '../../key-rotation.timing';
import type { DeployKeysFacts, InstanceKey, InstanceKeys, ObservedDeployKey } from './deploy-keys.observe';
import type { DeployKeysRule } from './deploy-keys.schema';

/** Deploy keys as the entries that manage a title show them, and those entries' projects that could not be read. */
interface DeployView {
  readonly keys: ReadonlyMap<number, ObservedDeployKey>;
  readonly unread: readonly UnreadProject[];
}

export function deployView(rules: readonly DeployKeysRule[], facts: DeployKeysFacts, now: Date): KindView {
  const views = new Map<string, DeployView>();
  /**
   * Each key with every project it is on of the entries that manage `title` (all entries when none does, for a
   * rotation whose entry changed), computed once per set of entries: a key is rotated on all the policy's projects that hold it.
   */
  const merged = (title: string): DeployView => {
    const matching = rules.flatMap((rule, index) =>
      rule.titles.some((pattern) => pattern.test(title)) ? [index] : [],
    );
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
        keys.set(key.id, {
          ...seen,
          projects: [...seen.projects, ...key.projects.filter((p) => !on.has(refKey(p.project)))],
        });
      }
      for (const project of facts.deployUnread?.[index] ?? [])
        if (!unread.has(refKey(project.project))) unread.set(refKey(project.project), project);
    }
    const view = { keys, unread: [...unread.values()] };
    views.set(id, view);
    return view;
  };
  const sight = (record: RotationRecord) => new RotationSight(merged(record.title), record, facts);
  return {
    listings: () =>
      rules.map((rule, index) => ({
        titles: rule.titles,
        keys: (facts.deploy[index] ?? []).map((key) => {
          const view = merged(key.title);
          return managedDeployKey(rule, view.keys.get(key.id) ?? key, view.unread, now);
        }),
      })),
    premise: (record) => deployPremise(sight(record), record),
    unlisted: (record) => ({
      target: `deploy key ${record.old_key_id} "${record.title}" (no longer listed)`,
      lifetime: undefined,
    }),
    leftover: (record) => sight(record).leftover(),
  };
}

function managedDeployKey(
  rule: DeployKeysRule,
  key: ObservedDeployKey,
  unread: readonly UnreadProject[],
  now: Date,
): ManagedKey {
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
    unreadable: unread.map((project) => project.project),
  };
}

/**
 * One rotation's keys as this pass sees them: the projects' listings, its recorded projects followed where they moved,
 * those out of the token's sight, and, when read, the instance's listing (positive evidence of where a key is).
 */
class RotationSight {
  readonly old: ObservedDeployKey | undefined;
  readonly fresh: ObservedDeployKey | undefined;
  private readonly moved: Readonly<Record<string, string>>;
  private readonly instance: InstanceKeys | undefined;
  /** Out of sight: the selected projects not read, and the recorded ones the token cannot read now. */
  private readonly unseen: readonly UnreadProject[];

  constructor(
    view: DeployView,
    private readonly record: RotationRecord,
    facts: DeployKeysFacts,
  ) {
    this.old = view.keys.get(record.old_key_id);
    this.fresh = record.new_key_id === null ? undefined : view.keys.get(record.new_key_id);
    const rotation = facts.deployRotations?.[record.id];
    this.moved = rotation?.moved ?? {};
    this.instance = facts.deployInstance;
    const recorded = Object.keys(rotation?.unseen ?? {}).map((ref) => ({
      project: recordedProject(record, ref),
      gone: false,
    }));
    const unseen = new Map([...view.unread, ...recorded].map((project) => [refKey(project.project), project] as const));
    this.unseen = [...unseen.values()];
  }

  /** A project as this pass's listings name it: a recorded path that moved is its new path. */
  ref(project: string | number): string {
    return refKey(this.moved[refKey(project)] ?? project);
  }

  /** Where the bot put the new key, as this pass names those projects. */
  placed(): Set<string> {
    return new Set([...placedOn(this.record)].map((ref) => this.ref(ref)));
  }

  /** Where the bot removed (or is removing) the old key itself. */
  removedByBot(): Set<string> {
    return new Set((this.record.old_removed_on ?? []).map((ref) => this.ref(ref)));
  }

  /** The projects out of sight that may hold one of the rotation's keys: all, unless the instance's listing says not. */
  unreadable(): UnreadProject[] {
    const keys = [this.record.old_key_id, ...(this.record.new_key_id !== null ? [this.record.new_key_id] : [])];
    return this.unseen.filter((project) => keys.some((id) => this.onInstance(id, project.project) !== 'no'));
  }

  /** Whether the instance's listing shows key `id` on `project`: unknown without it (or for read-only links before 16.0). */
  onInstance(id: number, project: string | number): 'yes' | 'no' | 'unknown' {
    const key = this.instanceKey(id);
    if (key === undefined) return 'unknown';
    if (key === null) return 'no';
    const wanted = refKey(project);
    const idOf = /^\d+$/.test(wanted) ? Number(wanted) : this.record.project_ids?.[wanted];
    if (key.projects.some((link) => link.id === idOf || refKey(link.path) === wanted)) return 'yes';
    return this.instance?.readonlyKnown ? 'no' : 'unknown';
  }

  /** Key `id` in the instance's listing; null: looked for and gone from the forge; undefined: not looked for. */
  instanceKey(id: number): InstanceKey | null | undefined {
    if (!this.instance?.wanted.includes(id)) return undefined;
    return this.instance.keys[String(id)] ?? null;
  }

  /** Where the new key is listed now, and the projects it was put on that are out of sight (see Leftover). */
  leftover(): Leftover {
    const id = this.record.new_key_id;
    if (id === null || (this.fresh && differs(this.fresh.fingerprint, this.record.fingerprint))) return { from: [] };
    const from: Holder[] = (this.fresh?.projects ?? []).map((p) => ({ project: p.project }));
    const outOfSight = this.outOfSight(id);
    return { from, ...(outOfSight ? { outOfSight } : {}) };
  }

  /** The projects the new key was put on that the token cannot see now, unless the instance's listing says it is not there. */
  outOfSight(id: number): string | undefined {
    const placed = this.placed();
    const there = this.unseen.filter(
      (project) => placed.has(refKey(project.project)) && this.onInstance(id, project.project) !== 'no',
    );
    if (there.length === 0) return undefined;
    const listed = there.filter((project) => this.onInstance(id, project.project) === 'yes');
    const evidence = listed.length > 0 ? `; the instance's deploy keys list it on ${names(listed)}` : '';
    return `new key ${id} may still be enabled on ${names(there)}, which the token cannot see now${evidence}`;
  }
}

/** A recorded project by the reference the record keeps (refKey): the project as first recorded, for plan. */
function recordedProject(record: RotationRecord, ref: string): string | number {
  return record.projects.find((p) => refKey(p.project) === ref)?.project ?? ref;
}

function names(projects: readonly { project: string | number }[]): string {
  return projects.map((p) => p.project).join(', ');
}

/**
 * Whether a deploy rotation still rests on what the forge shows (docs/policies.md, key_rotation): the key with the old
 * id is the old key, and once created the new key is the recorded one and is still on every project the bot put it on
 * that holds the old key (a person removing it there says not to have it). A contradicted rotation first withdraws its
 * new key wherever it is still listed, then closes; nothing is concluded from a project out of sight (a 404 is not
 * gone): only the projects' own listings, or the instance's, show a key gone. Before the new key exists, an old key on
 * none of the projects read (removed by a person) is not replaced. Where a person took the old key away during the
 * rotation, the new key leaves too (`revoked`), and the rotation goes on for the other projects.
 */
function deployPremise(sight: RotationSight, record: RotationRecord): Premise {
  const { old, fresh } = sight;
  const unreadable = sight.unreadable();
  const notRead = names(unreadable);
  const contradicted =
    old && differs(old.fingerprint, record.old_fingerprint)
      ? `deploy key ${record.old_key_id} on ${old.projects[0]?.project ?? '?'} is another key than the one this rotation replaces (${old.fingerprint ?? '?'}, not ${record.old_fingerprint ?? '?'})`
      : undefined;
  const oldOn: readonly DeployProject[] = contradicted ? [] : (old?.projects ?? []);
  if (record.new_key_id === null) {
    if (contradicted) return { close: contradicted };
    if (oldOn.length > 0) return { oldOn, newOn: new Map(), unreadable, revoked: [] };
    if (unreadable.length > 0)
      return {
        wait: `skip: old key ${record.old_key_id} is on none of the projects read; ${notRead} could not be read; the rotation waits`,
      };
    return {
      close: `old key ${record.old_key_id} is on none of the selected projects any more (${goneText(sight, record.old_key_id)}): no new key is created`,
    };
  }
  if (fresh && differs(fresh.fingerprint, record.fingerprint)) {
    return {
      close: `deploy key ${record.new_key_id} on ${fresh.projects[0]?.project ?? '?'} is not the new key ${record.fingerprint ?? '?'} (it is ${fresh.fingerprint ?? '?'})`,
    };
  }
  const newOn = new Map((fresh?.projects ?? []).map((p) => [sight.ref(p.project), p.can_push] as const));
  const placed = sight.placed();
  const removed = oldOn.filter((p) => placed.has(sight.ref(p.project)) && !newOn.has(sight.ref(p.project)));
  const why =
    contradicted ?? (removed.length > 0 ? `new key ${record.new_key_id} is gone from ${names(removed)}` : undefined);
  if (why) {
    const left = sight.leftover();
    return left.from.length === 0 && left.outOfSight === undefined ? { close: why } : { withdraw: why, ...left };
  }
  if (oldOn.length === 0 && newOn.size === 0) {
    // Neither key on any project read: gone only on positive evidence.
    if (sight.instanceKey(record.new_key_id) === null)
      return {
        close: `new key ${record.new_key_id} is gone from the forge (the instance's deploy keys do not list it)`,
      };
    if (unreadable.length > 0) {
      const outOfSight = sight.outOfSight(record.new_key_id);
      const wait = `skip: new key ${record.new_key_id} is on none of the projects read; ${notRead} could not be read; the rotation waits (what the token cannot see is not gone), and no new key is made meanwhile`;
      return outOfSight ? { wait, outOfSight } : { wait };
    }
    if ((record.revoked_on ?? []).length > 0) {
      return {
        close: `a person took old key ${record.old_key_id} away from ${record.revoked_on?.join(', ')} during the rotation, and new key ${record.new_key_id} left with it (a person's revocation wins)`,
      };
    }
    return { close: `new key ${record.new_key_id} is gone from the forge (${goneText(sight, record.new_key_id)})` };
  }
  const held = new Set(oldOn.map((p) => sight.ref(p.project)));
  const removedByBot = sight.removedByBot();
  const revoked = (fresh?.projects ?? []).filter(
    (p) =>
      placed.has(sight.ref(p.project)) && !held.has(sight.ref(p.project)) && !removedByBot.has(sight.ref(p.project)),
  );
  return { oldOn, newOn, unreadable, revoked: revoked.map((p) => ({ project: p.project })) };
}

/** Why a deploy key a rotation looks for is on no project read: the instance's word when it was read. */
function goneText(sight: RotationSight, id: number): string {
  if (sight.instanceKey(id) === null) return "the instance's deploy keys do not list it";
  return 'removed by someone else, or its projects no longer selected';
}
