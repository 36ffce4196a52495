import { readJsonObject } from '../../../engine/json';
import type { ObserveContext } from '../../../engine/policy';
import { NotFoundError } from '../../../gitlab/transport/errors';
import {
  INTEGRATION_SETTINGS_EVENT_FLAGS,
  INTEGRATION_SLUGS,
  integrationParameters,
  LIST_ONLY_INTEGRATION_EVENT_FLAGS,
  type IntegrationListEntry,
  type IntegrationSettings,
  type IntegrationSlug,
} from '../../../gitlab/types/integrations';
import { oddAnswer, shapeOf, unlessUnavailable } from '../project-settings.answers';
import type { ProjectSettingsConfig } from '../project-settings.schema';
import type { IntegrationsPart, ObservedIntegration } from './integrations.decide';
import { fingerprintStateKey } from './integrations.params';

/**
 * The declared integrations one by one (and, with prune, every active one), without their secrets: decide never
 * compares a secret, and a snapshot without them cannot leak them. With the fingerprints of what this policy last set.
 */

const KNOWN_SLUGS: ReadonlySet<string> = new Set(INTEGRATION_SLUGS);

function isKnownSlug(slug: string): slug is IntegrationSlug {
  return KNOWN_SLUGS.has(slug);
}

export async function observeIntegrations(
  config: ProjectSettingsConfig,
  context: ObserveContext,
  projectId: number,
): Promise<IntegrationsPart> {
  const [integrations, fingerprints] = await Promise.all([
    config.integrations ? readIntegrations(config, context, projectId) : undefined,
    readFingerprints(context, projectId),
  ]);
  return { ...(integrations ? { integrations } : {}), fingerprints };
}

/** A declared integration the forge answers 404 for is not set; the list's 404 or 403 is a forge without the API. */
async function readIntegrations(
  config: ProjectSettingsConfig,
  context: ObserveContext,
  projectId: number,
): Promise<Partial<Record<IntegrationSlug, ObservedIntegration>> | undefined> {
  const list = await unlessUnavailable(() => context.client.integrations.all(projectId));
  if (list === undefined) return undefined;
  const entries = new Map(list.flatMap((entry) => (isKnownSlug(entry.slug) ? [[entry.slug, entry] as const] : [])));
  const declared = INTEGRATION_SLUGS.filter((slug) => config.integrations?.[slug] !== undefined);
  const observed: Partial<Record<IntegrationSlug, ObservedIntegration>> = {};
  for (const slug of declared) {
    let settings: IntegrationSettings;
    try {
      settings = await context.client.integrations.show(projectId, slug);
    } catch (error) {
      if (error instanceof NotFoundError) continue; // not set
      throw error;
    }
    // Read as inactive, a missing `active` would be "inactive → active" and the integration set again every pass.
    const active: unknown = (settings as Partial<IntegrationSettings>).active;
    if (typeof active !== 'boolean')
      throw oddAnswer(`projects/${projectId}/services/${slug}`, undefined, 'active', shapeOf(active));
    observed[slug] = { active, properties: integrationProperties(slug, settings, entries.get(slug)) };
  }
  if (config.prune) {
    for (const [slug, entry] of entries) {
      if (observed[slug] !== undefined || config.integrations?.[slug] !== undefined) continue;
      // Only `active` decides a prune: an entry without it is not read as inactive (kept) nor as active (disabled).
      const active: unknown = (entry as Partial<IntegrationListEntry>).active;
      if (typeof active !== 'boolean')
        throw oddAnswer(`projects/${projectId}/services`, list.indexOf(entry), 'active', shapeOf(active));
      observed[slug] = { active, properties: {} };
    }
  }
  return observed;
}

function integrationProperties(
  slug: IntegrationSlug,
  settings: IntegrationSettings,
  entry: IntegrationListEntry | undefined,
): Record<string, unknown> {
  const parameters = integrationParameters(slug);
  const properties: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(settings.properties ?? {})) {
    if (parameters[name]?.secret === true) continue;
    properties[name] = value;
  }
  const answer: Record<string, unknown> = { ...settings };
  // The event flags: beside `properties` in the service's answer, the list-only ones in the list's entry.
  for (const flag of INTEGRATION_SETTINGS_EVENT_FLAGS)
    if (typeof answer[flag] === 'boolean' && !Object.hasOwn(properties, flag)) properties[flag] = answer[flag];
  const listed: Record<string, unknown> = { ...entry };
  for (const flag of LIST_ONLY_INTEGRATION_EVENT_FLAGS)
    if (typeof listed[flag] === 'boolean' && !Object.hasOwn(properties, flag)) properties[flag] = listed[flag];
  return properties;
}

/** What this policy last set on the project (`slug.param` → fingerprint); none after Redis lost its data. */
async function readFingerprints(context: ObserveContext, projectId: number): Promise<Record<string, string>> {
  const stored = readJsonObject(await context.state.get(fingerprintStateKey(projectId))) ?? {};
  return Object.fromEntries(
    Object.entries(stored).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}
