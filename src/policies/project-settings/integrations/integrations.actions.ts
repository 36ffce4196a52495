import { configOf } from '../../../engine/action-params';
import { readJsonObject } from '../../../engine/json';
import type { ActionResult, PolicyAction, ActContext } from '../../../engine/policy';
import type { IntegrationParamsBySlug, IntegrationSlug } from '../../../gitlab/types/integrations';
import { checkedAction, SECTION_UNREADABLE, type Subject } from '../project-settings.checked';
import { type ProjectSettingsConfig, projectSettingsPolicy } from '../project-settings.schema';
import type { SectionRules } from '../project-settings.section';
import type { ObservedProject } from '../project-settings.scope';
import { declaredSecrets, hider, withoutSecrets } from '../project-settings.secrets';
import {
  decideIntegrations,
  DISABLE_INTEGRATION,
  type IntegrationsPart,
  SET_INTEGRATION,
  SUBJECTS,
} from './integrations.decide';
import type { DeclaredIntegrations } from './integrations.schema';
import { observeIntegrations } from './integrations.observer';
import {
  fingerprintStateKey,
  integrationRequest,
  integrationTarget,
  setIntegrationTarget,
} from './integrations.params';

/** The integration actions; details name what was set in the policy's words, never the forge's answer (it may echo a secret). */

const rules: SectionRules<IntegrationsPart> = { observe: observeIntegrations, decide: decideIntegrations };

/** The one slug (undefined when no longer declared: then prune's list read still shows whether it is active). */
function slugOnly(config: ProjectSettingsConfig, target: { readonly slug: IntegrationSlug }): ProjectSettingsConfig {
  const integrations = config.integrations
    ? ({ [target.slug]: config.integrations[target.slug] } as DeclaredIntegrations)
    : undefined;
  return { ...config, integrations };
}

/** The state only, never a parameter: a secret is never part of a reason. */
function integrationSubject(
  slug: IntegrationSlug,
  config: ProjectSettingsConfig,
  snapshot: ObservedProject & IntegrationsPart,
): Subject {
  const what = SUBJECTS.integration(slug);
  const observed = snapshot.integrations?.[slug];
  const now = !snapshot.integrations
    ? `integrations ${SECTION_UNREADABLE}`
    : observed
      ? `${slug} is set${observed.active ? '' : ' but inactive'} now`
      : `${slug} is not set now`;
  return { what, related: [what], now, declared: config.integrations?.[slug] !== undefined };
}

/** A precondition of an integration: its reads and its reason never show a secret. */
async function secretSafe(context: ActContext, check: () => Promise<string | undefined>): Promise<string | undefined> {
  const secrets = declaredSecrets(configOf<ProjectSettingsConfig>(context, projectSettingsPolicy));
  try {
    const changed = await check();
    return changed === undefined ? undefined : hider(secrets)(changed);
  } catch (error) {
    throw withoutSecrets(error, secrets);
  }
}

const setIntegration = checkedAction(rules, {
  action: SET_INTEGRATION,
  read: setIntegrationTarget,
  narrow: slugOnly,
  subject: (target, config, snapshot) => integrationSubject(target.slug, config, snapshot),
  guard: secretSafe,
  run: async (target, context): Promise<ActionResult> => {
    const config = configOf<ProjectSettingsConfig>(context, projectSettingsPolicy);
    const { body, fingerprints } = integrationRequest(config, target);
    const secrets = [
      ...declaredSecrets(config),
      ...target.secrets.flatMap((name) => (typeof body[name] === 'string' ? [body[name]] : [])),
    ];
    try {
      // The body is the declared parameters of this slug, checked against the client's table when the file was loaded.
      await context.client.integrations.edit(
        target.project,
        target.slug,
        body as unknown as IntegrationParamsBySlug[typeof target.slug],
      );
    } catch (error) {
      throw withoutSecrets(error, secrets);
    }
    // Only once the forge has taken them: a fingerprint kept for a value never set would hide the drift for good.
    const key = fingerprintStateKey(target.project);
    const kept = readJsonObject(await context.state.get(key)) ?? {};
    await context.state.set(key, JSON.stringify({ ...kept, ...fingerprints }));
    const names = Object.keys(body).filter((name) => name !== 'active');
    return {
      detail: `set ${target.slug}: ${names.map((name) => (target.secrets.includes(name) ? `${name} (secret)` : name)).join(', ')}`,
    };
  },
});

/** Only while it is still active and still not declared. A 404 (not set any more) is the executor's `gone`. */
const disableIntegration = checkedAction(rules, {
  action: DISABLE_INTEGRATION,
  read: integrationTarget,
  narrow: slugOnly,
  subject: (target, config, snapshot) => integrationSubject(target.slug, config, snapshot),
  guard: secretSafe,
  run: async (target, context): Promise<ActionResult> => {
    await context.client.integrations.remove(target.project, target.slug);
    return { detail: `removed ${target.slug}` };
  },
});

export const integrationActions: Readonly<Record<string, PolicyAction>> = {
  [SET_INTEGRATION]: setIntegration,
  [DISABLE_INTEGRATION]: disableIntegration,
};
