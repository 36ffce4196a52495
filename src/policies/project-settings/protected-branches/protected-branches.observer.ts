import type { ObserveContext } from '../../../engine/policy';
import { ApiError, ForbiddenError, NotFoundError } from '../../../gitlab/transport/errors';
import type { ProtectedBranchAccess } from '../../../gitlab/types/protected-branches';
import { oddAnswer, shapeOf } from '../project-settings.answers';
import type { ProjectSettingsConfig } from '../project-settings.schema';
import type { ObservedProtectedBranch, ProtectedBranchesPart, RecordElsewhere } from './protected-branches.decide';
import { interruptedRecords, recordedProjects } from './protected-branches.interrupted';
import { type BranchProtection, storedProtection } from './protected-branches.params';

/** Every protection of a project (prune needs the undeclared ones too), and the policy's record of interrupted reprotects. */
export async function observeProtectedBranches(
  config: ProjectSettingsConfig,
  context: ObserveContext,
  projectId: number,
): Promise<ProtectedBranchesPart> {
  if (!config.protected_branches) return {};
  const [protectedBranches, interrupted] = await Promise.all([
    readProtectedBranches(context, projectId),
    readInterrupted(context, projectId),
  ]);
  return { protectedBranches, ...(Object.keys(interrupted).length > 0 ? { interrupted } : {}) };
}

async function readProtectedBranches(context: ObserveContext, projectId: number): Promise<ObservedProtectedBranch[]> {
  const branches: ObservedProtectedBranch[] = [];
  for await (const branch of context.client.protectedBranches.all(projectId))
    branches.push(toObservedBranch(branch, branches.length, projectId));
  return branches;
}

/** A protection as decide compares it; a missing `push_access_levels` is an odd answer, never "push none → maintainer". */
function toObservedBranch(answer: unknown, item: number, projectId: number): ObservedProtectedBranch {
  const odd = (field: string, problem: string) =>
    oddAnswer(`projects/${projectId}/protected_branches`, item, field, problem);
  if (typeof answer !== 'object' || answer === null) throw odd('', 'is not a protection');
  const branch = answer as Record<string, unknown>;
  if (typeof branch.name !== 'string') throw odd('name', shapeOf(branch.name));
  if (typeof branch.allow_force_push !== 'boolean') throw odd('allow_force_push', shapeOf(branch.allow_force_push));
  const list = (
    field: 'push_access_levels' | 'merge_access_levels' | 'unprotect_access_levels',
  ): ProtectedBranchAccess[] => {
    const entries = branch[field];
    if (!Array.isArray(entries)) throw odd(field, shapeOf(entries));
    entries.forEach((entry: unknown, index) => {
      const access =
        typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>).access_level : undefined;
      if (access !== null && typeof access !== 'number') throw odd(`${field}.${index}.access_level`, shapeOf(access));
    });
    return entries as ProtectedBranchAccess[];
  };
  // A lower tier's answer has no code_owner_approval_required: left undefined, decide reports it instead of failing.
  const codeOwner = branch.code_owner_approval_required;
  return {
    name: branch.name,
    allow_force_push: branch.allow_force_push,
    push_access_levels: list('push_access_levels'),
    merge_access_levels: list('merge_access_levels'),
    unprotect_access_levels: list('unprotect_access_levels'),
    ...(typeof codeOwner === 'boolean' ? { code_owner_approval_required: codeOwner } : {}),
  };
}

/** The protections interrupted reprotects removed, by branch name; a damaged entry is left out (declared levels only). */
async function readInterrupted(context: ObserveContext, projectId: number): Promise<Record<string, BranchProtection>> {
  const stored = await interruptedRecords(context, projectId);
  const protections: Record<string, BranchProtection> = {};
  for (const [name, value] of Object.entries(stored)) {
    const protection = storedProtection(value);
    if (protection) protections[name] = protection;
  }
  return protections;
}

/**
 * The records of interrupted reprotects of projects the pass did not read (see RecordElsewhere): each project is
 * followed by its id, so a transfer or a rename is the same project, and only an administrator's 404 proves it gone.
 */
export async function readRecordsElsewhere(
  context: ObserveContext,
  read: ReadonlySet<number>,
): Promise<RecordElsewhere[]> {
  const records: RecordElsewhere[] = [];
  let administrator: boolean | undefined;
  for (const projectId of await recordedProjects(context)) {
    if (read.has(projectId)) continue;
    const kept = await readInterrupted(context, projectId);
    if (Object.keys(kept).length === 0) continue;
    try {
      const found = await context.client.projects.show(projectId);
      records.push({
        projectId,
        project: found.path_with_namespace,
        kept,
        state: 'outside',
        why: 'the project was not among those this pass decided on (no longer selected, or its read failed)',
      });
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      if (error instanceof NotFoundError) {
        if (administrator === undefined) {
          const me = await context.client.users.current();
          administrator = 'is_admin' in me && me.is_admin === true;
        }
        if (administrator) {
          records.push({
            projectId,
            project: projectId,
            kept,
            state: 'gone',
            why: `project ${projectId} is gone (an administrator's token no longer finds it)`,
          });
          continue;
        }
      }
      const why =
        error instanceof NotFoundError || error instanceof ForbiddenError
          ? 'not visible to the token now'
          : 'could not be read now';
      records.push({
        projectId,
        project: projectId,
        kept,
        state: 'unseen',
        why: `${why} (${error.summary}); protected first once it can be seen`,
      });
    }
  }
  return records;
}
