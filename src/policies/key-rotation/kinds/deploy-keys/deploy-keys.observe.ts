import type { ProjectRef } from '../../../../config/validators';
import { selectProjects } from '../../../../engine/discovery';
import { observeTargets } from '../../../../engine/observe-targets';
import type { ObserveContext } from '../../../../engine/policy';
import { NotFoundError } from '../../../../gitlab/transport/errors';
import type { DeployKey } from '../../../../gitlab/types/keys';
import type { Observed, UnreadProject } from '../../credential-kind';
import { type DeployProject, deployRotationId, refKey } from '../../key-rotation.record';
import { fingerprintOfPublicKey } from '../../openssh';
import type { DeployKeysRule } from './deploy-keys.schema';

export interface ObservedDeployKey {
  readonly id: number;
  readonly title: string;
  readonly created_at: string;
  readonly fingerprint: string | undefined;
  /** The configured projects the key is on, in the configured order. */
  readonly projects: readonly DeployProject[];
}

/** The deploy keys' part of key_rotation's snapshot. */
export interface DeployKeysFacts {
  /** One per `deploy_keys` entry, in order: every deploy key of the entry's projects that could be read (any title). */
  readonly deploy: readonly (readonly ObservedDeployKey[])[];
  /** One per `deploy_keys` entry: its selected projects whose deploy keys could not be read. Absent: none. */
  readonly deployUnread?: readonly (readonly UnreadProject[])[];
  /** Every project whose deploy keys were read, each once, in the order selected (for `plan`). */
  readonly deployProjects?: readonly ProjectRef[];
  /** What the rotations need besides the entries' listings, by rotation id (see observeDeployRotations). */
  readonly deployRotations?: Readonly<Record<string, DeployRotationFacts>>;
  /** The rotations' keys as the instance's listing shows them (an administrator's token); absent when not read. */
  readonly deployInstance?: InstanceKeys;
}

/** Where a rotation's recorded projects are now, when this pass's entries did not read them under the recorded reference. */
export interface DeployRotationFacts {
  /** Recorded projects (refKey) read this pass under another path: renamed or moved, the same project by id. */
  readonly moved: Readonly<Record<string, string>>;
  /** Recorded projects (refKey) the token cannot read now, with the forge's answer: neither holding a key nor free of it. */
  readonly unseen: Readonly<Record<string, string>>;
}

/**
 * Deploy keys as `GET /deploy_keys` lists them for an administrator: every key of the instance with the projects it
 * is enabled on, seen or not by the project listings. Positive evidence of where a key is, and that it is gone.
 */
export interface InstanceKeys {
  /** Whether the listing names read-only projects too (`projects_with_readonly_access`, from the forge's 16.0 on). */
  readonly readonlyKnown: boolean;
  /** The ids looked for: one of these missing from `keys` is gone from the forge. */
  readonly wanted: readonly number[];
  /** By id, the keys looked for that the forge lists. */
  readonly keys: Readonly<Record<string, InstanceKey>>;
}

export interface InstanceKey {
  readonly fingerprint: string | undefined;
  readonly projects: readonly { readonly id: number; readonly path: string; readonly can_push: boolean }[];
}

/** Each entry's deploy keys, one per key with every project of the entry it is on. */
export async function observeDeployKeys(
  rules: readonly DeployKeysRule[],
  context: ObserveContext,
): Promise<Observed<DeployKeysFacts>> {
  const read = await readDeployKeys(rules, context);
  const rotations: string[] = [];
  const deploy = read.byEntry.map((keys) => {
    const byId = new Map<number, ObservedDeployKey>();
    for (const key of keys) {
      const known = byId.get(key.id);
      const link = { project: key.project, can_push: key.can_push };
      byId.set(
        key.id,
        known
          ? { ...known, projects: [...known.projects, link] }
          : {
              id: key.id,
              title: key.title,
              created_at: key.created_at,
              fingerprint: fingerprintOfPublicKey(key.key),
              projects: [link],
            },
      );
      rotations.push(deployRotationId(key.id));
    }
    return [...byId.values()];
  });
  return { facts: { deploy, deployUnread: read.unread, deployProjects: read.projects }, rotations };
}

type ListedDeployKey = DeployKey & { readonly project: ProjectRef };

/**
 * The deploy keys of each `deploy_keys` entry's projects, one list per entry, project by project in the order
 * selected (explicit ones first, then what the globs found, by path), so keys merge by id in that order. A project
 * several entries select is read once. Projects are read several at once and, in a scheduled pass, spread over the
 * interval (see TargetPace). Each on its own: a project the forge refuses (403) or answers oddly is recorded as
 * unobserved and listed among the entry's unread projects, so nothing is written there and its keys count neither as
 * there nor as gone; one that answers 404 (deleted, moved, or hidden from the token, which the forge answers alike) is
 * gone for the rotations, and, when the file names it, also recorded as unobserved, so a person sees it.
 */
async function readDeployKeys(
  rules: readonly DeployKeysRule[],
  context: ObserveContext,
): Promise<{ byEntry: ListedDeployKey[][]; unread: UnreadProject[][]; projects: ProjectRef[] }> {
  const selected = await Promise.all(
    rules.map((rule) => selectProjects(context, rule.projects, rule.include_archived)),
  );
  const named = (project: ProjectRef): boolean => rules.some((rule) => rule.projects.names(project));
  const distinct = new Map<string, ProjectRef>();
  for (const project of selected.flat()) if (!distinct.has(refKey(project))) distinct.set(refKey(project), project);
  const read = await observeTargets(
    context,
    [...distinct.values()],
    (project) => ({ target: `project ${project}`, listed: named(project) }),
    async (project): Promise<DeployKey[] | 'gone'> => {
      const keys: DeployKey[] = [];
      try {
        for await (const key of context.client.deployKeys.all(project)) keys.push(key);
      } catch (error) {
        if (!(error instanceof NotFoundError)) throw error;
        if (named(project)) {
          // Named in the file: its absence is reported against it.
          context.unobserved.record(`project ${project}`, error);
        } else {
          // A project a glob found may be deleted or moved before discovery runs again; a moved one is found again.
          context.logger.warn(`project ${project} is gone (deleted or moved since discovery); left out of this pass`);
        }
        return 'gone';
      }
      return keys;
    },
  );
  const byProject = new Map([...distinct.keys()].map((key, index) => [key, read[index]]));
  const keysOf = (project: ProjectRef): DeployKey[] | undefined => {
    const found = byProject.get(refKey(project));
    return Array.isArray(found) ? found : undefined;
  };
  return {
    // Each entry's projects as it selected them (two entries may write the same project differently).
    byEntry: selected.map((projects) =>
      projects.flatMap((project) => (keysOf(project) ?? []).map((key) => ({ ...key, project }))),
    ),
    unread: selected.map((projects) =>
      projects.flatMap((project) =>
        keysOf(project) ? [] : [{ project, gone: byProject.get(refKey(project)) === 'gone' }],
      ),
    ),
    projects: [...distinct.values()].filter((project) => keysOf(project) !== undefined),
  };
}
