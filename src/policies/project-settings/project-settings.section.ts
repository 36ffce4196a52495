import type { ProjectRef } from '../../config/validators';
import type { Decision, ObserveContext, PolicyAction, StepContext } from '../../engine/policy';
import { parkedDecisions } from '../../engine/refusals';
import { ApiError } from '../../gitlab/transport/errors';
import type { ProjectSettingsConfig } from './project-settings.schema';
import type { ObservedProject, ProjectScope, SectionDecisions } from './project-settings.scope';
import { declaredSecrets, withoutSecrets } from './project-settings.secrets';

/**
 * A section of project_settings (protected branches, approvals, integrations) and how the core composes sections: a
 * pass reads and decides every section of the list (project-settings.sections.ts), a precondition its own again.
 */

/** How a section reads its part of a project and decides on it: the same for a pass and for a precondition. */
export interface SectionRules<Part extends object> {
  /** Its part of one project, read now; nothing of what the policy does not declare. */
  observe(config: ProjectSettingsConfig, context: StepContext, projectId: number): Promise<Part>;
  /** Pure, as every decide: no I/O, no clock but the scope's pass. */
  decide(scope: ProjectScope<Part>): SectionDecisions;
}

export interface SettingsSection<Part extends object> extends SectionRules<Part> {
  /** The effects of the actions it decides, by action name. */
  readonly actions: Readonly<Record<string, PolicyAction>>;
}

/**
 * One project as the given sections read it now, with the decisions the engine keeps parked about it. `knownId` spares
 * a precondition the path's lookup; a 404 of that lookup is the project gone, never a section the forge lacks.
 */
export async function observeProject<Part extends object>(
  sections: readonly SectionRules<object>[],
  config: ProjectSettingsConfig,
  project: ProjectRef,
  /** A precondition's context has no open targets: it decides again on what the forge holds now. */
  context: StepContext & { readonly unsettled?: ObserveContext['unsettled'] },
  knownId?: number,
): Promise<ObservedProject & Part> {
  const projectId =
    knownId ?? (typeof project === 'number' ? project : (await context.client.projects.show(project)).id);
  const parts = await Promise.all(sections.map((section) => section.observe(config, context, projectId))).catch(
    (error: unknown) => {
      // The forge's answer becomes the reason shown by plan and once: one that quotes a declared secret must not bring it.
      throw error instanceof ApiError ? withoutSecrets(error, declaredSecrets(config)) : error;
    },
  );
  const parked = parkedDecisions(context.unsettled ?? []).filter((decision) => decision.params.project === projectId);
  // Each section returns its own part of the project, so together they are the whole.
  return Object.assign({ project, projectId }, ...parts, parked.length > 0 ? { parked } : {}) as ObservedProject & Part;
}

/** One project's decisions, section after section in the list's order. */
export function decideProject(
  sections: readonly SectionRules<object>[],
  scope: ProjectScope,
): { first: Decision[]; rest: Decision[] } {
  const first: Decision[] = [];
  const rest: Decision[] = [];
  for (const section of sections) {
    const decided = section.decide(scope);
    first.push(...decided.first);
    rest.push(...decided.rest);
  }
  return { first, rest };
}
