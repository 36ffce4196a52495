import type { SettingsSection } from '../project-settings.section';
import { integrationActions } from './integrations.actions';
import { decideIntegrations, type IntegrationsPart } from './integrations.decide';
import { observeIntegrations } from './integrations.observer';

/** `integrations:`, as the core composes it. */
export const integrations: SettingsSection<IntegrationsPart> = {
  observe: observeIntegrations,
  decide: decideIntegrations,
  actions: integrationActions,
};
