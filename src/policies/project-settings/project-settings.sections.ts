import { approvals } from './approvals/approvals.section';
import { integrations } from './integrations/integrations.section';
import { protectedBranches } from './protected-branches/protected-branches.section';
import type { SettingsSection } from './project-settings.section';

/**
 * The sections of project_settings, in the order each project's changes are made. A new section is a folder and one
 * line here, with its key in project-settings.schema.ts (docs/architecture.md).
 */
export const SECTIONS = [protectedBranches, approvals, integrations] as const;

type PartOf<Section> = Section extends SettingsSection<infer Part> ? Part : never;
type PartsOf<Sections> = Sections extends readonly [infer Head, ...infer Tail] ? PartOf<Head> & PartsOf<Tail> : unknown;

/** What the sections read of a project, together. */
export type SectionParts = PartsOf<typeof SECTIONS>;
