import type { PolicyAction } from '../../engine/policy';
import { SECTIONS } from './project-settings.sections';

/** Every section's actions by name; the executor is their only caller. */
export const projectSettingsActions: Readonly<Record<string, PolicyAction>> = Object.fromEntries(
  SECTIONS.flatMap((section) => Object.entries(section.actions)),
);
