import type { ProjectRef } from '../../config/validators';
import { firstPositions } from '../../engine/order';
import type { Decision } from '../../engine/policy';
import type { ProjectSettingsConfig } from './project-settings.schema';
import { decideProject } from './project-settings.section';
import { SECTIONS, type SectionParts } from './project-settings.sections';
import { type ObservedProject, scopeOf } from './project-settings.scope';
import { decideRecordsElsewhere, type RecordElsewhere } from './protected-branches/protected-branches.decide';

/** Deciding what to change so that each project's settings are as declared: pure, no I/O, no clock but `now`. */

/** One project as observe saw it: a section is read only when the policy declares it (see each section's part). */
export type ProjectSettingsProjectSnapshot = ObservedProject & SectionParts;

export interface ProjectSettingsSnapshot {
  readonly projects: readonly ProjectSettingsProjectSnapshot[];
  /** Interrupted reprotects of projects the pass did not read: the bot's harm, shown until mended (or proved gone). */
  readonly recordsElsewhere?: readonly RecordElsewhere[];
}

/**
 * Every change of every project. What sections decide first (protections of declared branches that are not protected)
 * comes before anything else, whatever the project, also when `max_actions_per_run` leaves the rest for later. Then,
 * project by project in the configured order, each section's changes in the order of SECTIONS.
 */
export function decideProjectSettings(
  config: ProjectSettingsConfig,
  snapshot: ProjectSettingsSnapshot,
  now: Date,
): Decision[] {
  const positions = firstPositions(
    config.projects.explicit.map((item) => String(item.kind === 'id' ? item.id : item.path)),
  );
  const order = (a: ProjectRef, b: ProjectRef): number => {
    const [pa, pb] = [positions.get(String(a)) ?? Infinity, positions.get(String(b)) ?? Infinity];
    if (pa !== pb) return pa < pb ? -1 : 1;
    const [la, lb] = [String(a).toLowerCase(), String(b).toLowerCase()];
    return la < lb ? -1 : la > lb ? 1 : 0;
  };
  const first: Decision[] = [];
  const rest: Decision[] = [];
  for (const project of [...snapshot.projects].sort((a, b) => order(a.project, b.project))) {
    const decided = decideProject(SECTIONS, scopeOf(config, project, now));
    first.push(...decided.first);
    rest.push(...decided.rest);
  }
  return [...decideRecordsElsewhere(config, snapshot.recordsElsewhere ?? [], now), ...first, ...rest];
}
