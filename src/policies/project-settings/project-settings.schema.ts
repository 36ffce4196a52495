import { z } from 'zod';
import { definePolicyType } from '../../config/policy-type';
import { period, projectSelection } from '../../config/validators';
import { approvalsSchema } from './approvals/approvals.schema';
import { integrationsSchema } from './integrations/integrations.schema';
import { protectedBranchesSchema } from './protected-branches/protected-branches.schema';

/** `project_settings`: holds the declared sections of the selected projects; each section's keys live in its folder. */

/** Each section's key in the policy file, with its schema: one line per section (docs/architecture.md). */
const SECTION_KEYS = {
  protected_branches: protectedBranchesSchema,
  approvals: approvalsSchema,
  integrations: integrationsSchema,
};

const base = definePolicyType(
  'project_settings',
  'Holds protected branches, approval settings and rules, and integrations to a declared state.',
  {
    projects: projectSelection().describe(
      'Projects to hold: by id (42), full path (acme/api) or glob ("acme/*" the group\'s own, "acme/**" with its subgroups); a quoted leading "!" excludes.',
    ),
    include_archived: z
      .boolean({ error: 'expected true or false' })
      .default(false)
      .describe(
        'Whether globs select archived projects too; a project listed by id or path is held even when archived.',
      ),
    interval: period().describe('How often the settings are read and compared.'),
    ...SECTION_KEYS,
    prune: z
      .boolean({ error: 'expected true or false' })
      .default(false)
      .describe(
        'Also remove what a declared section does not list: protections, user-defined approval rules (with approvals.rules), active integrations. Sections left out are never touched.',
      ),
    max_actions_per_run: z
      .number()
      .int({ error: 'max_actions_per_run must be a whole number' })
      .min(1, { error: 'max_actions_per_run must be at least 1' })
      .default(50)
      .describe(
        'At most this many changes in one pass; the rest wait for the next (unprotected declared branches go first).',
      ),
  },
);

const SECTIONS = Object.keys(SECTION_KEYS) as (keyof typeof SECTION_KEYS)[];

const schema = base.schema.refine((policy) => SECTIONS.some((section) => policy[section] !== undefined), {
  path: [SECTIONS[0]],
  error: `give at least one of ${SECTIONS.slice(0, -1).join(', ')} or ${SECTIONS.at(-1)}: without them the policy holds nothing`,
  when: (payload) => {
    const input = payload.value as Record<string, unknown> | undefined;
    return typeof input === 'object' && input !== null && SECTIONS.every((section) => input[section] === undefined);
  },
});

export const projectSettingsPolicy = { ...base, schema } as const;

export type ProjectSettingsConfig = z.output<typeof schema>;
