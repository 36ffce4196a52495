import {
  INTEGRATION_EVENT_FLAGS,
  integrationParameters,
  LIST_ONLY_INTEGRATION_EVENT_FLAGS,
  type IntegrationEventFlag,
  type IntegrationEventFlags,
  type IntegrationListEntry,
  type IntegrationParameter,
  type IntegrationSettings,
  type IntegrationSlug,
  type ListOnlyIntegrationEventFlag,
} from '../../gitlab/types/integrations';
import {
  ApiError,
  boolParam,
  enumParam,
  intParam,
  noContent,
  notFound,
  ok,
  param,
  paramError,
  type RequestContext,
} from '../http/context';
import type { Router } from '../http/router';
import { INTEGRATION_SERVICES, integrationsOf, type IntegrationRecord } from '../integrations-state';
import { findProject, MAINTAINER } from './access';

const FLAGS: ReadonlySet<string> = new Set(INTEGRATION_EVENT_FLAGS);

/** Properties the sandbox never echoes back (the forge masks password fields). */
const SECRET_PROPERTIES = new Set(['password']);

/**
 * Per-project integration settings, under `/services` and the forge's current name `/integrations` (GitLab's
 * "Integrations API"), the same handlers. Every endpoint needs Maintainer or Owner. A PUT creates the
 * settings or changes only the parameters it is given, as the forge does; only `issue-tracker-b` has an `active`
 * parameter (default false), the other services are active once configured. DELETE removes the settings; reading or
 * deleting a service without settings answers `404 Service Not Found`, an unknown slug the unknown-route 404.
 */
export function registerIntegrationRoutes(router: Router): void {
  for (const base of ['/projects/:id/services', '/projects/:id/integrations']) {
    router
      .get(base, (ctx) => {
        const project = findProject(ctx, MAINTAINER);
        const active = integrationsOf(ctx.state)
          .of(project.id)
          .filter((r) => r.active);
        return ok(active.map(listEntry));
      })
      .get(`${base}/:slug`, (ctx) => {
        const slug = knownSlug(ctx);
        const project = findProject(ctx, MAINTAINER);
        return ok(settings(findRecord(ctx, project.id, slug)));
      })
      .put(`${base}/:slug`, (ctx) => {
        const slug = knownSlug(ctx);
        const project = findProject(ctx, MAINTAINER);
        return ok(settings(save(ctx, project.id, slug)));
      })
      .delete(`${base}/:slug`, (ctx) => {
        const slug = knownSlug(ctx);
        const project = findProject(ctx, MAINTAINER);
        findRecord(ctx, project.id, slug);
        integrationsOf(ctx.state).delete(project.id, slug);
        return noContent();
      });
  }
}

function knownSlug(ctx: RequestContext): IntegrationSlug {
  const slug = ctx.params.slug ?? '';
  if (!Object.hasOwn(INTEGRATION_SERVICES, slug)) throw new ApiError(404, { error: '404 Not Found' });
  return slug as IntegrationSlug;
}

function findRecord(ctx: RequestContext, projectId: number, slug: string): IntegrationRecord {
  const record = integrationsOf(ctx.state).get(projectId, slug);
  if (!record) throw notFound('Service');
  return record;
}

/**
 * The forge's PUT (`declared_params(include_missing: false)`): the parameters given change, the others keep their
 * values; a new record starts from the defaults. Required parameters are Grape's `requires`, so every PUT sends
 * them, an update too.
 */
function save(ctx: RequestContext, projectId: number, slug: IntegrationSlug): IntegrationRecord {
  const service = INTEGRATION_SERVICES[slug];
  const parameters = Object.entries(integrationParameters(slug));
  // Grape reports every missing required parameter at once.
  const missing = parameters
    .filter(([name, p]) => p.required && !param(ctx, name))
    .map(([name]) => `${name} is missing`);
  if (missing.length > 0) throw paramError(missing.join(', '));

  const store = integrationsOf(ctx.state);
  const previous = store.get(projectId, slug);
  const events = previous
    ? { ...previous.events }
    : (Object.fromEntries(INTEGRATION_EVENT_FLAGS.map((f) => [f, false])) as IntegrationEventFlags);
  const properties: Record<string, string | number | boolean> = previous
    ? { ...previous.properties }
    : { ...service.defaults };
  let active = true;
  for (const [name, parameter] of parameters) {
    const value = read(ctx, name, parameter);
    if (name === 'active') {
      // issue-tracker-b is active only when PUT with active=true; omitted means false.
      active = value === true;
    } else if (FLAGS.has(name)) {
      // A flag the service supports starts on unless the caller turns it off.
      if (value !== undefined) events[name as IntegrationEventFlag] = value === true;
      else if (!previous) events[name as IntegrationEventFlag] = true;
    } else if (value !== undefined) {
      properties[name] = value;
    }
  }

  const now = ctx.state.nowIso();
  const record: IntegrationRecord = {
    id: previous?.id ?? store.nextId(),
    project_id: projectId,
    slug,
    title: service.title,
    created_at: previous?.created_at ?? now,
    updated_at: now,
    active,
    events,
    properties,
  };
  store.set(record);
  return record;
}

/** A URL is taken as any text: the forge's integrations API does not check it on PUT. */
function read(
  ctx: RequestContext,
  name: string,
  parameter: IntegrationParameter,
): string | number | boolean | undefined {
  switch (parameter.kind) {
    case 'boolean':
      return boolParam(ctx, name);
    case 'integer':
      return intParam(ctx, name);
    case 'enum':
      return enumParam(ctx, name, parameter.values ?? []);
    default:
      return param(ctx, name);
  }
}

/** An entry of the service list. */
function listEntry(r: IntegrationRecord): IntegrationListEntry {
  return {
    id: r.id,
    title: r.title,
    slug: r.slug,
    created_at: r.created_at,
    updated_at: r.updated_at,
    active: r.active,
    ...r.events,
  };
}

/** One service's settings: the list entry without the list-only flags, plus `properties`. */
function settings(r: IntegrationRecord): IntegrationSettings {
  const entry: Partial<IntegrationListEntry> = listEntry(r);
  for (const flag of LIST_ONLY_INTEGRATION_EVENT_FLAGS) delete entry[flag];
  const properties = Object.fromEntries(Object.entries(r.properties).filter(([name]) => !SECRET_PROPERTIES.has(name)));
  return { ...(entry as Omit<IntegrationListEntry, ListOnlyIntegrationEventFlag>), properties };
}
