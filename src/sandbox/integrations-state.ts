import {
  INTEGRATION_EVENT_FLAGS,
  integrationParameters,
  type IntegrationEventFlag,
  type IntegrationEventFlags,
  type IntegrationSlug,
} from '../gitlab/types/integrations';
import type { SeededProject } from './namespaces-state';
import type { WorldSeeding } from './seeding';

export interface ServiceDef {
  title: string;
  /** Values of properties the forge sets when the parameter is omitted. */
  defaults?: Record<string, string | boolean>;
}

/**
 * One entry per slug: the title (a neutral name of the kind of service) and the values the forge fills in.
 * Which parameters a slug takes, of which kind and whether required, is the client's table (INTEGRATION_PARAMETERS).
 */
export const INTEGRATION_SERVICES: Record<IntegrationSlug, ServiceDef> = {
  'task-comments': { title: 'Task comments' },
  'project-commits-a': { title: 'Project commits A' },
  'ci-server-a': { title: 'CI server A' },
  'issue-tracker-a': { title: 'Issue tracker A' },
  'ci-pipeline-service': { title: 'CI pipeline service' },
  'group-chat-a': { title: 'Group chat A' },
  'chat-collab-a': { title: 'Chat collaboration A', defaults: { branches_to_be_notified: 'default' } },
  'chat-collab-b': { title: 'Chat collaboration B', defaults: { branches_to_be_notified: 'default' } },
  'chat-collab-c': { title: 'Chat collaboration C', defaults: { branches_to_be_notified: 'default' } },
  'custom-issue-tracker': { title: 'Custom issue tracker' },
  'ci-platform-a': { title: 'CI platform A' },
  'emails-on-push': { title: 'Emails on push', defaults: { branches_to_be_notified: 'all' } },
  'wiki-cloud-workspace': { title: 'Wiki cloud workspace' },
  'external-wiki': { title: 'External wiki' },
  'chatops-a': { title: 'ChatOps A' },
  'code-host-status': { title: 'Code host status' },
  'irc-gateway': { title: 'IRC gateway' },
  'issue-tracker-b': {
    title: 'Issue tracker B',
    defaults: { tracker_issue_transition_automatic: false, tracker_issue_transition_id: '' },
  },
  'chat-slash-commands-a': { title: 'Chat slash commands A' },
  'chat-slash-commands-b': { title: 'Chat slash commands B' },
  'package-registry-update': { title: 'Package registry update' },
  'pipelines-email': { title: 'Pipelines emails', defaults: { branches_to_be_notified: 'default' } },
  'project-mgmt-b': { title: 'Project management B' },
  monitoring: { title: 'Monitoring' },
  'push-notification': { title: 'Push notifications' },
  'issue-tracker-c': { title: 'Issue tracker C' },
  'chat-notifications-a': { title: 'Chat notifications A' },
};

/** One service's settings on one project; `properties` holds the service's own parameters. */
export interface IntegrationRecord {
  id: number;
  project_id: number;
  slug: string;
  title: string;
  created_at: string;
  updated_at: string;
  active: boolean;
  events: IntegrationEventFlags;
  properties: Record<string, string | number | boolean>;
}

/** The sandbox's integration settings, keyed by project id, then slug. */
export class IntegrationsState {
  readonly byProject = new Map<number, Map<string, IntegrationRecord>>();
  private lastId = 0;

  nextId(): number {
    return ++this.lastId;
  }

  get(projectId: number, slug: string): IntegrationRecord | undefined {
    return this.byProject.get(projectId)?.get(slug);
  }

  set(record: IntegrationRecord): void {
    let services = this.byProject.get(record.project_id);
    if (!services) this.byProject.set(record.project_id, (services = new Map<string, IntegrationRecord>()));
    services.set(record.slug, record);
  }

  delete(projectId: number, slug: string): boolean {
    return this.byProject.get(projectId)?.delete(slug) ?? false;
  }

  /**
   * The world's integrations of each project, as a PUT would have left them: the service's defaults under the world's
   * properties, the event flags the service takes on unless the world turns them off.
   */
  seed(projects: readonly SeededProject[], seeding: WorldSeeding): void {
    for (const { world } of projects)
      for (const integration of world.integrations) this.lastId = Math.max(this.lastId, integration.id ?? 0);
    const now = seeding.now();
    for (const { world, record } of projects) {
      for (const integration of world.integrations) {
        const slug: IntegrationSlug = integration.slug;
        const parameters = integrationParameters(slug);
        const events = Object.fromEntries(
          INTEGRATION_EVENT_FLAGS.map((flag: IntegrationEventFlag) => [
            flag,
            integration.events[flag] ?? Object.hasOwn(parameters, flag),
          ]),
        ) as IntegrationEventFlags;
        this.set({
          id: integration.id ?? this.nextId(),
          project_id: record.id,
          slug,
          title: INTEGRATION_SERVICES[slug].title,
          created_at: now,
          updated_at: now,
          active: integration.active,
          events,
          properties: { ...INTEGRATION_SERVICES[slug].defaults, ...integration.properties },
        });
      }
    }
  }

  /** All settings of a project, oldest first. */
  of(projectId: number): IntegrationRecord[] {
    return [...(this.byProject.get(projectId)?.values() ?? [])].sort((a, b) => a.id - b.id);
  }
}

const registry = new WeakMap<object, IntegrationsState>();

/** The integration settings of a sandbox's state (attached to it without widening `SandboxState`, or importing it). */
export function integrationsOf(state: object): IntegrationsState {
  let integrations = registry.get(state);
  if (!integrations) registry.set(state, (integrations = new IntegrationsState()));
  return integrations;
}
