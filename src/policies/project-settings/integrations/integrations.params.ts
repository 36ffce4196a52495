import { createHash } from 'node:crypto';
import { z } from 'zod';
import { param, readParams } from '../../../engine/action-params';
import type { ActionParams } from '../../../engine/policy';
import { INTEGRATION_SLUGS, integrationParameters, type IntegrationSlug } from '../../../gitlab/types/integrations';
import { POLICY, projectParams, projectShape, type ProjectTarget } from '../project-settings.params';
import type { ProjectSettingsConfig } from '../project-settings.schema';

/**
 * What the integration actions carry: set_integration names its secrets, and reads their values from the policy when
 * it runs (integrationRequest); not even a fingerprint travels, since a weak password's can be guessed back.
 */

/** A value of an integration parameter, as declared. */
export type IntegrationValue = string | number | boolean;

/** set_integration: the declared values that are not secrets, and the names of the declared secrets. */
export interface SetIntegrationTarget extends ProjectTarget {
  readonly slug: IntegrationSlug;
  readonly values: Readonly<Record<string, IntegrationValue>>;
  readonly secrets: readonly string[];
}

const slugSchema = z.enum(INTEGRATION_SLUGS, { error: 'an integration slug (docs/api-client.md, Integration slugs)' });
const setIntegrationSchema = z.object({
  ...projectShape,
  slug: slugSchema,
  values: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]), {
    error: 'an object of strings, numbers and booleans',
  }),
  secrets: z.array(param.text()),
});
const integrationSchema = z.object({ ...projectShape, slug: slugSchema });

export function setIntegrationParams(target: SetIntegrationTarget): ActionParams {
  return { ...projectParams(target), slug: target.slug, values: { ...target.values }, secrets: [...target.secrets] };
}

export function setIntegrationTarget(params: ActionParams): SetIntegrationTarget {
  return readParams(POLICY, setIntegrationSchema, params);
}

/** disable_integration: `DELETE /projects/:id/services/<slug>`. */
export function integrationParams(target: ProjectTarget & { readonly slug: IntegrationSlug }): ActionParams {
  return { ...projectParams(target), slug: target.slug };
}

export function integrationTarget(params: ActionParams): ProjectTarget & { readonly slug: IntegrationSlug } {
  return readParams(POLICY, integrationSchema, params);
}

/**
 * What this policy last set is known only by this fingerprint, since the forge never shows a secret: sha256 of the
 * policy's name, the slug, the parameter and the value, so none of them is a plain hash of the secret.
 */
export function parameterFingerprint(
  policy: string,
  slug: IntegrationSlug,
  parameter: string,
  value: IntegrationValue,
): string {
  return createHash('sha256')
    .update([policy, slug, parameter, JSON.stringify(value)].join('\0'))
    .digest('hex');
}

/** The name of a fingerprint in a project's map: `chat-notifications-a.webhook`. */
export function fingerprintName(slug: IntegrationSlug, parameter: string): string {
  return `${slug}.${parameter}`;
}

/** The policy state key (namespaced by the engine per policy) holding a project's fingerprints as a JSON object. */
export function fingerprintStateKey(projectId: number): string {
  return `fingerprints:${projectId}`;
}

/**
 * What set_integration sends: the values from params, the secrets from the policy as it is now, and the fingerprint of
 * each, kept once the forge has taken them. Throws when a secret the decision named is no longer declared: nothing is
 * sent, and the next pass decides afresh.
 */
export function integrationRequest(
  config: Pick<ProjectSettingsConfig, 'name' | 'integrations'>,
  target: SetIntegrationTarget,
): { readonly body: Record<string, IntegrationValue>; readonly fingerprints: Record<string, string> } {
  const declared = config.integrations?.[target.slug] as
    Readonly<Record<string, IntegrationValue | undefined>> | undefined;
  const parameters = integrationParameters(target.slug);
  const body: Record<string, IntegrationValue> = { ...target.values };
  for (const name of target.secrets) {
    const value = declared?.[name];
    if (value === undefined || parameters[name]?.secret !== true) {
      throw new Error(
        `${POLICY}: ${target.slug}: secret ${name} is no longer declared by policy ${config.name}; the next pass decides again`,
      );
    }
    body[name] = value;
  }
  const fingerprints = Object.fromEntries(
    Object.entries(body)
      // `active` is compared with the forge's own answer, never by fingerprint.
      .filter(([name]) => name !== 'active')
      .map(([name, value]) => [
        fingerprintName(target.slug, name),
        parameterFingerprint(config.name, target.slug, name, value),
      ]),
  );
  return { body, fingerprints };
}
