import type { ProjectRef } from '../../config/validators';
import { type Decision, SKIP } from '../../engine/policy';
import { type ParkedDecision, parkedKey } from '../../engine/refusals';
import type { ProjectTarget } from './project-settings.params';
import type { ProjectSettingsConfig } from './project-settings.schema';

/**
 * How every section words and keys its decisions about one project: one decision per change, its reason one diff line
 * (`acme/api: protected branch main: push_access_level developer → maintainer`); a setting as declared decides nothing.
 */

/** What the core knows of every project, whatever its sections read. */
export interface ObservedProject {
  /** The project as configured (`acme/api` or `42`), or as a glob found it. */
  readonly project: ProjectRef;
  readonly projectId: number;
  /** Decisions about it the engine keeps parked after a final refusal: decided again the same way, they keep their key. */
  readonly parked?: readonly ParkedDecision[];
}

/** What every decision about one project shares; `Part` is what a section observed of it. */
export interface ProjectScope<Part extends object = object> {
  readonly config: ProjectSettingsConfig;
  readonly snapshot: ObservedProject & Part;
  readonly target: ProjectTarget;
  /** The pass's instant, in every action's key (see actionKey). */
  readonly pass: number;
}

export function scopeOf<Part extends object>(
  config: ProjectSettingsConfig,
  snapshot: ObservedProject & Part,
  now: Date,
): ProjectScope<Part> {
  return {
    config,
    snapshot,
    target: { project: snapshot.projectId, source: String(snapshot.project) },
    pass: now.getTime(),
  };
}

/** A section's decisions about one project: `first` go before any other change of any project. */
export interface SectionDecisions {
  readonly first: readonly Decision[];
  readonly rest: readonly Decision[];
}

export const NOT_AVAILABLE = 'not available on this forge';
/** A whole section the forge refused to read: a lower tier answers 404 or 403, and so does a token without the role. */
export const SECTION_UNAVAILABLE = 'not available on this forge, or not to this token (the forge answered 404 or 403)';

/**
 * The key names this occurrence of the drift (the pass's instant), so a drift that comes back after the ledger settled
 * the last one is repaired again (docs/architecture.md, "A policy in sections").
 */
function actionKey(scope: ProjectScope, what: string, action: string): string {
  return `${scope.snapshot.projectId}:${what}:${action}:${scope.pass}`;
}

/** The key of the same decision parked after a refusal, if it is one of this subject's keys (see actionKey). */
function parkedKeyOf(
  scope: ProjectScope,
  what: string,
  action: string,
  params: Decision['params'],
): string | undefined {
  const prefix = `${scope.snapshot.projectId}:${what}:${action}:`;
  return parkedKey(
    scope.snapshot.parked ?? [],
    { action, params },
    (key) => key.startsWith(prefix) && /^\d+$/.test(key.slice(prefix.length)),
  );
}

/** A change of `subject` (`protected branch main`), keyed by `what` (`branch:main`, see subjectOf). */
export function decision(
  scope: ProjectScope,
  action: string,
  subject: string,
  what: string,
  change: string,
  params: Decision['params'],
): Decision {
  const project = String(scope.snapshot.project);
  return {
    action,
    target: `${project} ${subject}`,
    key: parkedKeyOf(scope, what, action, params) ?? actionKey(scope, what, action),
    reason: `${project}: ${subject}: ${change}`,
    params,
  };
}

/** A skip names its target in its key; it is never acted on, so no instant is needed. */
export function skip(scope: ProjectScope, subject: string, what: string, why: string): Decision {
  const project = String(scope.snapshot.project);
  return {
    action: SKIP,
    target: `${project} ${subject}`,
    key: `${scope.snapshot.projectId}:${what}`,
    reason: `skip: ${project}: ${subject}: ${why}`,
    params: { project: scope.snapshot.projectId, source: project },
  };
}

/** The subject of an action's key (`42:branch:main:reprotect_branch:1717329600000` → `branch:main`). */
export function subjectOf(key: string): string {
  const parts = key.split(':');
  return parts.slice(1, -2).join(':');
}
