import { systemClock } from '../clock';
import type { GitlabClient } from '../gitlab/client';
import { ApiError, NetworkError, NotFoundError } from '../gitlab/transport/errors';
import type { GroupDetail } from '../gitlab/types/groups';
import type { NamespaceExistsParams } from '../gitlab/types/namespaces';

/**
 * The steps of a restore that create a group through the forge's group import, shared by the restore of one archive
 * and of a backup set: where the group goes, whether its path is free, the upload (with an answer lost after it) and
 * the wait until the forge has the group. Each step answers a problem in words for the person at the terminal; the
 * command decides how it ends.
 */

const POLL_MS = 1_000;

/** What `--group` (with `--parent-id` and `--name`) asks for. */
export interface GroupTarget {
  /** The last segment of `--group`: the new group's path. */
  readonly path: string;
  /** The segments before it (`acme` for `acme/restored`), empty for a slug. */
  readonly parentPath: string;
  readonly parentId: number | undefined;
  readonly name: string | undefined;
}

/** Where the group goes, its parent looked up on the forge. */
export interface GroupPlace {
  readonly target: GroupTarget;
  readonly parent: { readonly id: number; readonly full_path: string } | undefined;
  readonly fullPath: string;
  /** The scope of the forge's path check (`GET /namespaces/:path/exists`). */
  readonly scope: NamespaceExistsParams;
}

/** A step that could not be done, in words for the person at the terminal. */
export interface Problem {
  readonly problem: string;
}

export function isProblem(value: object): value is Problem {
  return 'problem' in value;
}

/** Looks up the parent the target names; a problem when it does not exist (or the token cannot see it). */
export async function findPlace(client: GitlabClient, target: GroupTarget): Promise<GroupPlace | Problem> {
  const parentRef = target.parentPath || target.parentId;
  let parent: { id: number; full_path: string } | undefined;
  if (parentRef !== undefined) {
    parent = await findGroup(client, parentRef);
    if (!parent)
      return {
        problem: `the parent group ${target.parentPath || `with id ${target.parentId}`} does not exist, or this token cannot see it`,
      };
  }
  return {
    target,
    parent,
    fullPath: parent ? `${parent.full_path}/${target.path}` : target.path,
    scope: parent ? { parent_id: parent.id } : {},
  };
}

/** Why the group cannot be created at its place (the path is taken, with the forge's free suggestions), or undefined. */
export async function pathTakenProblem(client: GitlabClient, place: GroupPlace): Promise<string | undefined> {
  const taken = await client.namespaces.exists(place.target.path, place.scope);
  if (!taken.exists) return undefined;
  const { parent } = place;
  const free =
    taken.suggests.length > 0
      ? `; free: ${taken.suggests.map((slug) => (parent ? `${parent.full_path}/${slug}` : slug)).join(', ')}`
      : '';
  return `the path ${place.fullPath} is taken${free}`;
}

/** The group the import created, and the summary of an answer that was lost after the upload, if one was. */
export interface ImportedGroup {
  readonly group: GroupDetail;
  readonly lostAnswer: string | undefined;
}

/**
 * Uploads the archive through the forge's group import and waits (at most `waitMs`) until the forge has created the
 * group. The path must have been found free just before.
 */
export async function importGroup(
  client: GitlabClient,
  place: GroupPlace,
  file: string,
  waitMs: number,
): Promise<ImportedGroup | Problem> {
  const { target, parent, fullPath, scope } = place;
  let lostAnswer: string | undefined;
  try {
    await client.groupTransfer.import({
      name: target.name ?? target.path,
      path: target.path,
      file,
      ...(parent ? { parent_id: parent.id } : {}),
    });
  } catch (error) {
    // An answer lost after the upload (a proxy's 502 on a long upload, a reset) may follow an import that went
    // through: the path, free a moment ago, tells which.
    if (!(error instanceof ApiError) || !mayHaveActed(error)) throw error;
    if (!(await client.namespaces.exists(target.path, scope)).exists) {
      return {
        problem: `${error.summary}; ${fullPath} does not exist, so the import has not gone through; running this command again is safe (it refuses the path should the group appear meanwhile)`,
      };
    }
    lostAnswer = error.summary;
  }
  const deadline = systemClock.monotonic() + waitMs;
  for (;;) {
    if ((await client.namespaces.exists(target.path, scope)).exists) break;
    if (systemClock.monotonic() >= deadline)
      return {
        problem: `the forge accepted the import, but ${fullPath} did not exist after ${Math.round(waitMs / 1000)} s; look at the forge's import status`,
      };
    await systemClock.sleep(POLL_MS);
  }
  return { group: await client.groups.show(fullPath, { with_projects: false }), lostAnswer };
}

/** The group, or undefined when the forge says it does not exist (404). */
export async function findGroup(client: GitlabClient, ref: string | number): Promise<GroupDetail | undefined> {
  try {
    return await client.groups.show(ref, { with_projects: false });
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
}

/** Whether a failed request may still have been carried out: no answer after sending, or a server-side failure. */
export function mayHaveActed(error: ApiError): boolean {
  if (error instanceof NetworkError) return error.mayHaveReachedServer;
  return error.status === 0 || error.status >= 500;
}
