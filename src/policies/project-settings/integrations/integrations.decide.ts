import { quote } from '../../../config/problems';
import type { Decision } from '../../../engine/policy';
import {
  INTEGRATION_SLUGS,
  integrationParameters,
  type IntegrationParameter,
  type IntegrationSlug,
} from '../../../gitlab/types/integrations';
import {
  decision,
  type ProjectScope,
  SECTION_UNAVAILABLE,
  type SectionDecisions,
  skip,
} from '../project-settings.scope';
import {
  fingerprintName,
  integrationParams,
  type IntegrationValue,
  parameterFingerprint,
  setIntegrationParams,
} from './integrations.params';

/** Deciding a project's integrations: values as the forge may write them, secrets only by the fingerprint of what was set. */

export const SET_INTEGRATION = 'set_integration';
export const DISABLE_INTEGRATION = 'disable_integration';

/** The middle of the keys (see subjectOf). */
export const SUBJECTS = {
  integration: (slug: IntegrationSlug) => `integration:${slug}`,
} as const;

/** One integration as the forge has it. */
export interface ObservedIntegration {
  readonly active: boolean;
  /** Its `properties`, with the event flags the answer gives beside them merged in; never a secret. */
  readonly properties: Readonly<Record<string, unknown>>;
}

/** What the section reads of a project. */
export interface IntegrationsPart {
  /**
   * By slug: the declared ones (absent: not configured) and, for prune, the active ones the list gives; slugs this
   * build does not know are left out. Absent when the policy declares none, or the forge did not answer.
   */
  readonly integrations?: Readonly<Partial<Record<IntegrationSlug, ObservedIntegration>>>;
  /** What this policy last set, `slug.param` → parameterFingerprint; empty after Redis lost its data (all set again). */
  readonly fingerprints: Readonly<Record<string, string>>;
}

type IntegrationScope = ProjectScope<IntegrationsPart>;

/** A boolean as the forge may write it in `properties` (`true`, `"true"`, `"1"`), or undefined when it is none. */
function asBoolean(value: unknown): boolean | undefined {
  if (value === true || value === 'true' || value === '1' || value === 1) return true;
  if (value === false || value === 'false' || value === '0' || value === 0 || value === '') return false;
  return undefined;
}

function sameValue(parameter: IntegrationParameter, seen: unknown, declared: IntegrationValue): boolean {
  switch (parameter.kind) {
    case 'boolean':
      return asBoolean(seen) === declared;
    case 'integer':
      return (
        (typeof seen === 'number' || (typeof seen === 'string' && seen.trim() !== '')) && Number(seen) === declared
      );
    default:
      return seen === declared;
  }
}

/** A value that is no secret, for a reason: strings quoted (and cut), the rest as written. */
function shown(value: unknown): string {
  return typeof value === 'string'
    ? quote(value)
    : typeof value === 'number' || typeof value === 'boolean'
      ? String(value)
      : quote(JSON.stringify(value));
}

/**
 * Every declared parameter is sent, secrets included (the forge wants the required ones on every PUT), and nothing else:
 * a PUT changes only what it is given, so what a person set and the policy does not declare stays.
 */
function integrationDecision(scope: IntegrationScope, slug: IntegrationSlug): Decision | undefined {
  const declared = scope.config.integrations?.[slug] as
    Readonly<Record<string, IntegrationValue | undefined>> | undefined;
  if (!declared) return undefined;
  const parameters = integrationParameters(slug);
  const observed = scope.snapshot.integrations?.[slug];
  // Only issue-tracker-b takes `active`, and a PUT without it leaves that service inactive: sent, true unless declared.
  const takesActive = Object.hasOwn(parameters, 'active');
  const active = takesActive ? (declared.active ?? true) : true;
  const values: Record<string, IntegrationValue> = takesActive ? { active } : {};
  const secrets: string[] = [];
  const changes: string[] = [];
  if (observed && observed.active !== active) changes.push(observed.active ? 'active → inactive' : 'inactive → active');

  for (const [name, value] of Object.entries(declared)) {
    if (value === undefined || name === 'active') continue;
    const parameter = parameters[name];
    if (parameter.secret) secrets.push(name);
    else values[name] = value;
    if (!observed) continue;
    const known = scope.snapshot.fingerprints[fingerprintName(slug, name)];
    const matchesLastSet = known === parameterFingerprint(scope.config.name, slug, name, value);
    if (parameter.secret) {
      // Never compared with the forge's answer, which leaves secrets out or masks them; never shown.
      if (known === undefined) changes.push(`${name}: (secret) not recorded → set`);
      else if (!matchesLastSet) changes.push(`${name}: (secret) changed`);
      continue;
    }
    const seen = observed.properties[name];
    if (seen === undefined) {
      // The forge does not show every parameter in `properties`: what was last set counts.
      if (!matchesLastSet) changes.push(`${name}: (not shown by the forge) → ${shown(value)}`);
    } else if (!sameValue(parameter, seen, value)) {
      changes.push(`${name}: ${seen === null ? '(unset)' : shown(seen)} → ${shown(value)}`);
    }
  }
  if (observed && changes.length === 0) return undefined;
  const params = setIntegrationParams({ ...scope.target, slug, values, secrets });
  return decision(
    scope,
    SET_INTEGRATION,
    `integration ${slug}`,
    SUBJECTS.integration(slug),
    observed ? changes.join(', ') : 'not set → set',
    params,
  );
}

export function decideIntegrations(scope: IntegrationScope): SectionDecisions {
  const declared = scope.config.integrations;
  if (!declared) return { first: [], rest: [] };
  const observed = scope.snapshot.integrations;
  if (!observed) return { first: [], rest: [skip(scope, 'integrations', 'integrations', SECTION_UNAVAILABLE)] };
  const decisions = INTEGRATION_SLUGS.flatMap((slug) => integrationDecision(scope, slug) ?? []);
  if (scope.config.prune) {
    for (const slug of INTEGRATION_SLUGS) {
      if (declared[slug] !== undefined || observed[slug]?.active !== true) continue;
      const params = integrationParams({ ...scope.target, slug });
      decisions.push(
        decision(
          scope,
          DISABLE_INTEGRATION,
          `integration ${slug}`,
          SUBJECTS.integration(slug),
          'active, not declared → disable',
          params,
        ),
      );
    }
  }
  return { first: [], rest: decisions };
}
