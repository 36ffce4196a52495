import { endpoint, type ProjectId } from '../transport/endpoint';
import type { Transport } from '../transport/transport';
import type {
  IntegrationListEntry,
  IntegrationParamsBySlug,
  IntegrationSettings,
  IntegrationSlug,
} from '../types/integrations';

/**
 * GitLab's "Integrations API", per-project integration settings (`/projects/:id/services`). Every endpoint needs
 * Maintainer or Owner. The parameters of `edit` are typed by slug: `edit('acme/api', 'external-wiki', {
 * external_wiki_url })`.
 */
export class IntegrationsResource {
  constructor(private readonly transport: Transport) {}

  /** The project's active services (a plain array, from release 12.7). */
  all(project: ProjectId): Promise<IntegrationListEntry[]> {
    return this.transport.json<IntegrationListEntry[]>({
      method: 'GET',
      endpoint: endpoint`projects/${project}/services`,
    });
  }

  /** The settings of one service; a service without settings is a NotFoundError. */
  show(project: ProjectId, slug: IntegrationSlug): Promise<IntegrationSettings> {
    return this.transport.json<IntegrationSettings>({
      method: 'GET',
      endpoint: endpoint`projects/${project}/services/${slug}`,
    });
  }

  /**
   * `PUT`: creates or replaces the settings of the service. A missing required parameter is a ValidationError
   * (400). The forge (and the sandbox) answer with the settings.
   */
  edit<S extends IntegrationSlug>(
    project: ProjectId,
    slug: S,
    params: IntegrationParamsBySlug[S],
  ): Promise<IntegrationSettings> {
    return this.transport.json<IntegrationSettings>({
      method: 'PUT',
      endpoint: endpoint`projects/${project}/services/${slug}`,
      body: params,
    });
  }

  /** Removes the settings of the service. */
  async remove(project: ProjectId, slug: IntegrationSlug): Promise<void> {
    await this.transport.request<unknown>({
      method: 'DELETE',
      endpoint: endpoint`projects/${project}/services/${slug}`,
    });
  }
}
