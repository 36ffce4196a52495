import type { IntegrationEventFlags } from '../gitlab/types/integrations';
import type { SandboxState } from './state';

/** One service's settings on one project (spec 03); `properties` holds the service's own parameters. */
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

  /** All settings of a project, oldest first. */
  of(projectId: number): IntegrationRecord[] {
    return [...(this.byProject.get(projectId)?.values() ?? [])].sort((a, b) => a.id - b.id);
  }
}

const registry = new WeakMap<SandboxState, IntegrationsState>();

/** The integration settings of a sandbox (attached to its state without widening `SandboxState`). */
export function integrationsOf(state: SandboxState): IntegrationsState {
  let integrations = registry.get(state);
  if (!integrations) registry.set(state, (integrations = new IntegrationsState()));
  return integrations;
}
