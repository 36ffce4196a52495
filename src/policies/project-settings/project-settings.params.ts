import { param } from '../../engine/action-params';
import type { JsonValue } from '../../engine/policy';

/**
 * What every project_settings action carries: plain JSON, read back through each section's zod schema. Never a secret:
 * params are printed by `plan --json` and kept in Redis and the queue (docs/policies.md, `project_settings`).
 */

/** The policy type, as the errors of its params name it. */
export const POLICY = 'project_settings';

/** Where a change applies: the project's numeric id, and the project as the policy lists it (`acme/api` or `42`). */
export interface ProjectTarget {
  readonly project: number;
  /** The project as configured: an unsettled change is looked at again only while the policy still covers it. */
  readonly source: string;
}

export const projectShape = { project: param.integer(), source: param.text() };

export function projectParams(target: ProjectTarget): { project: number; source: string } {
  return { project: target.project, source: target.source };
}

/** Leaves out what is undefined: JSON has no undefined, and the forge's defaults apply to what is not sent. */
export function defined(record: Record<string, JsonValue | undefined>): Record<string, JsonValue> {
  return Object.fromEntries(
    Object.entries(record).filter((entry): entry is [string, JsonValue] => entry[1] !== undefined),
  );
}
