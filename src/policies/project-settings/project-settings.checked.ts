import { configOf, defineAction } from '../../engine/action-params';
import { type ActionParams, type ActionResult, type PolicyAction, type ActContext, SKIP } from '../../engine/policy';
import type { ProjectTarget } from './project-settings.params';
import { type ProjectSettingsConfig, projectSettingsPolicy } from './project-settings.schema';
import { decideProject, observeProject, type SectionRules } from './project-settings.section';
import { type ObservedProject, scopeOf, subjectOf } from './project-settings.scope';

/**
 * The precondition of every project_settings action that changes the forge: its section of the project is read again
 * and decided again, and the action goes out only if the same decision comes out; else it is `stale`, with what the
 * forge shows now. What a person changed since the pass read it wins.
 */

/** What an action is about, for its stale reason. */
export interface Subject {
  /** The subject of the action's own key (`branch:main`). */
  readonly what: string;
  /** Subjects whose decisions are about the same thing (an approval rule by name and by id). */
  readonly related: readonly string[];
  /** What the forge shows now, for people: `main is protected with push maintainer, merge developer now`. */
  readonly now: string;
  /** Whether the file still declares it (a prune's subject is not declared). */
  readonly declared: boolean;
}

export const SECTION_UNREADABLE = 'cannot be read now (the forge answered 404 or 403)';

export interface CheckedActionSpec<Target extends ProjectTarget, Part extends object> {
  readonly action: string;
  readonly read: (params: ActionParams) => Target;
  /** The policy cut to what the action rests on (the approval rules alone, one integration); else its whole section. */
  readonly narrow?: (config: ProjectSettingsConfig, target: Target) => ProjectSettingsConfig;
  readonly subject: (target: Target, config: ProjectSettingsConfig, snapshot: ObservedProject & Part) => Subject;
  readonly run: (target: Target, context: ActContext) => Promise<ActionResult>;
  /** Wraps the precondition's reads: set_integration's never show a secret an answer may echo. */
  readonly guard?: (context: ActContext, check: () => Promise<string | undefined>) => Promise<string | undefined>;
}

/**
 * Undefined while deciding again on the section as the forge has it now gives the same decision (subject, action and
 * params); else what changed. A NotFoundError (the project is gone) reaches the executor: `gone`.
 */
async function decidedAgain<Target extends ProjectTarget, Part extends object>(
  rules: SectionRules<Part>,
  spec: CheckedActionSpec<Target, Part>,
  target: Target,
  params: ActionParams,
  context: ActContext,
): Promise<string | undefined> {
  const config = configOf<ProjectSettingsConfig>(context, projectSettingsPolicy);
  const policy = spec.narrow ? spec.narrow(config, target) : config;
  const snapshot = await observeProject<Part>([rules], policy, target.source, context, target.project);
  const { first, rest } = decideProject([rules], scopeOf(policy, snapshot, context.now));
  const decisions = [...first, ...rest];
  const about = spec.subject(target, config, snapshot);
  const wanted = JSON.stringify(params);
  if (
    decisions.some(
      (decision) =>
        decision.action === spec.action &&
        subjectOf(decision.key) === about.what &&
        JSON.stringify(decision.params) === wanted,
    )
  ) {
    return undefined;
  }
  const other = decisions.find(
    (decision) => decision.action !== SKIP && about.related.includes(subjectOf(decision.key)),
  );
  if (other) return `${about.now}; decided again: ${other.reason}`;
  return `${about.now}${about.declared ? ', as declared' : ''}`;
}

/** An action of `rules`' section whose precondition is deciding again (see decidedAgain). */
export function checkedAction<Target extends ProjectTarget, Part extends object>(
  rules: SectionRules<Part>,
  spec: CheckedActionSpec<Target, Part>,
): PolicyAction {
  const guard = spec.guard ?? ((_context, check) => check());
  return defineAction<{ readonly target: Target; readonly params: ActionParams }>({
    // The params as decided (raw JSON) beside the typed target: the precondition compares them with the decision again.
    read: (params) => ({ target: spec.read(params), params }),
    precondition: ({ target, params }, context) =>
      guard(context, () => decidedAgain(rules, spec, target, params, context)),
    run: ({ target }, context) => spec.run(target, context),
  });
}
