import { z } from 'zod';
import { APPROVAL_RULE_TYPES } from '../../gitlab/types/approvals';
import { INTEGRATION_EVENT_FLAGS, INTEGRATION_SLUGS, integrationParameters } from '../../gitlab/types/integrations';
import { id } from './fields';

/**
 * What a world file says of a project's configuration besides its protected branches: merge request approval
 * settings and rules, and integrations. A world recorded from a forge (`forgewarden record`) carries them, so that
 * project_settings decides on it as on the forge.
 */

/** The project's approval settings (GitLab's "Merge request approvals API"); one left out keeps the forge's default. */
export const approvalSettingsSchema = z.strictObject({
  approvals_before_merge: z.number().int().nonnegative().optional(),
  reset_approvals_on_push: z.boolean().optional(),
  disable_overriding_approvers_per_merge_request: z.boolean().optional(),
  merge_requests_author_approval: z.boolean().optional(),
  merge_requests_disable_committers_approval: z.boolean().optional(),
  require_password_to_approve: z.boolean().optional(),
});

/** A project approval rule; its approvers by username and group full path, its branches by protected branch name. */
export const approvalRuleSchema = z.strictObject({
  id: id.optional(),
  name: z.string().min(1),
  rule_type: z.enum(APPROVAL_RULE_TYPES).default('regular'),
  approvals_required: z.number().int().nonnegative().default(0),
  users: z.array(z.string()).default([]),
  groups: z.array(z.string()).default([]),
  protected_branches: z.array(z.string()).default([]),
});

const EVENT_FLAGS: ReadonlySet<string> = new Set(INTEGRATION_EVENT_FLAGS);

/**
 * An integration set on the project. `properties` are the service's own parameters (INTEGRATION_PARAMETERS), `events` the event
 * flags; a flag left out is on when the service takes it, as a PUT without it leaves it.
 */
export const integrationSchema = z
  .strictObject({
    id: id.optional(),
    slug: z.enum(INTEGRATION_SLUGS),
    active: z.boolean().default(true),
    events: z.partialRecord(z.enum(INTEGRATION_EVENT_FLAGS), z.boolean()).default({}),
    properties: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).default({}),
  })
  .superRefine((integration, ctx) => {
    const parameters = integrationParameters(integration.slug);
    for (const name of Object.keys(integration.properties)) {
      if (name === 'active' || EVENT_FLAGS.has(name) || !Object.hasOwn(parameters, name)) {
        const known = Object.keys(parameters).filter(
          (parameter) => parameter !== 'active' && !EVENT_FLAGS.has(parameter),
        );
        ctx.addIssue({
          code: 'custom',
          path: ['properties', name],
          message: `${integration.slug} has no parameter ${name}; it takes ${known.join(', ') || 'none'}`,
        });
      }
    }
  });

export type WorldApprovalRule = z.output<typeof approvalRuleSchema>;
export type WorldIntegration = z.output<typeof integrationSchema>;

interface ProjectConfig {
  readonly protected_branches: readonly { readonly name: string }[];
  readonly approval_rules: readonly WorldApprovalRule[];
  readonly integrations: readonly WorldIntegration[];
}

/** Each rule's approvers and branches exist, rule names and integration slugs are each used once. */
export function checkProjectConfig(
  project: ProjectConfig,
  at: (string | number)[],
  known: { readonly user: (username: string) => boolean; readonly group: (path: string) => boolean },
  report: (path: (string | number)[], message: string) => void,
): void {
  const branches = new Set(project.protected_branches.map((branch) => branch.name));
  const names = new Set<string>();
  project.approval_rules.forEach((rule, r) => {
    const path = [...at, 'approval_rules', r];
    if (names.has(rule.name)) report([...path, 'name'], `duplicate approval rule ${rule.name}`);
    names.add(rule.name);
    rule.users.forEach((user, u) => known.user(user) || report([...path, 'users', u], `unknown user ${user}`));
    rule.groups.forEach((group, g) => known.group(group) || report([...path, 'groups', g], `unknown group ${group}`));
    rule.protected_branches.forEach(
      (branch, b) =>
        branches.has(branch) || report([...path, 'protected_branches', b], `the project protects no branch ${branch}`),
    );
  });
  const slugs = new Set<string>();
  project.integrations.forEach((integration, n) => {
    if (slugs.has(integration.slug))
      report([...at, 'integrations', n, 'slug'], `integration ${integration.slug} is set twice`);
    slugs.add(integration.slug);
  });
}
