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
import {
  INTEGRATION_EVENT_FLAGS,
  integrationsOf,
  type IntegrationEventFlag,
  type IntegrationRecord,
} from '../integrations-state';
import { findProject, MAINTAINER } from './access';

/** Spec 03 §2 `branches_to_be_notified`. */
export const BRANCHES_TO_BE_NOTIFIED = ['all', 'default', 'protected', 'default_and_protected'] as const;

type ParamKind = 'string' | 'boolean' | 'integer' | 'branches';
interface ParamDef {
  name: string;
  kind: ParamKind;
  required: boolean;
}
interface ServiceDef {
  title: string;
  params: ParamDef[];
  /** Values of properties the forge sets when the parameter is omitted. */
  defaults?: Record<string, string | boolean>;
}

const FLAGS = new Set<string>(INTEGRATION_EVENT_FLAGS);
const BOOLEAN_PROPERTIES = new Set([
  'enable_ssl_verification',
  'notify_only_broken_pipelines',
  'notify_only_default_branch',
  'disable_diffs',
  'send_from_committer_email',
  'static_context',
  'colorize_messages',
  'tracker_issue_transition_automatic',
  'add_pusher',
]);

/** `name!` is a required string; otherwise the kind follows from the name (event flags and known booleans). */
function defs(...names: string[]): ParamDef[] {
  return names.map((raw) => {
    const required = raw.endsWith('!');
    const name = required ? raw.slice(0, -1) : raw;
    const kind: ParamKind =
      FLAGS.has(name) || BOOLEAN_PROPERTIES.has(name) || name === 'active'
        ? 'boolean'
        : name === 'server_port'
          ? 'integer'
          : name === 'branches_to_be_notified'
            ? 'branches'
            : 'string';
    return { name, kind, required };
  });
}

const ALL_NOTIFY_EVENTS = [
  'push_events',
  'issues_events',
  'confidential_issues_events',
  'merge_requests_events',
  'tag_push_events',
  'note_events',
  'confidential_note_events',
  'pipeline_events',
  'wiki_page_events',
];
const ISSUE_TRACKER = defs('new_issue_url!', 'issues_url!', 'project_url!', 'description', 'title', 'push_events');
const CHAT_COLLAB = defs('webhook!', 'notify_only_broken_pipelines', 'branches_to_be_notified', ...ALL_NOTIFY_EVENTS);

/** Spec 03 §4, one entry per slug. Titles are neutral names of the kind of service. */
export const INTEGRATION_SERVICES: Record<string, ServiceDef> = {
  'task-comments': { title: 'Task comments', params: defs('api_key!', 'restrict_to_branch', 'push_events') },
  'project-commits-a': { title: 'Project commits A', params: defs('token!', 'subdomain', 'push_events') },
  'ci-server-a': {
    title: 'CI server A',
    params: defs('ci_server_url!', 'build_key!', 'username!', 'password!', 'push_events'),
  },
  'issue-tracker-a': { title: 'Issue tracker A', params: ISSUE_TRACKER },
  'ci-pipeline-service': {
    title: 'CI pipeline service',
    params: defs('token!', 'project_url!', 'enable_ssl_verification', 'push_events'),
  },
  'group-chat-a': { title: 'Group chat A', params: defs('token!', 'subdomain', 'room', 'push_events') },
  'chat-collab-a': { title: 'Chat collaboration A', params: CHAT_COLLAB, defaults: { branches_to_be_notified: 'default' } },
  'chat-collab-b': { title: 'Chat collaboration B', params: CHAT_COLLAB, defaults: { branches_to_be_notified: 'default' } },
  'chat-collab-c': {
    title: 'Chat collaboration C',
    params: [...CHAT_COLLAB, ...defs('notify_only_default_branch')],
    defaults: { branches_to_be_notified: 'default' },
  },
  'custom-issue-tracker': { title: 'Custom issue tracker', params: ISSUE_TRACKER },
  'ci-platform-a': {
    title: 'CI platform A',
    params: defs('token!', 'ci_platform_url!', 'enable_ssl_verification', 'push_events', 'merge_requests_events', 'tag_push_events'),
  },
  'emails-on-push': {
    title: 'Emails on push',
    params: defs('recipients!', 'disable_diffs', 'send_from_committer_email', 'push_events', 'tag_push_events', 'branches_to_be_notified'),
    defaults: { branches_to_be_notified: 'all' },
  },
  'wiki-cloud-workspace': { title: 'Wiki cloud workspace', params: defs('wiki_workspace_url!') },
  'external-wiki': { title: 'External wiki', params: defs('external_wiki_url!') },
  'chatops-a': { title: 'ChatOps A', params: defs('token!', 'push_events') },
  'code-host-status': { title: 'Code host status', params: defs('token!', 'repository_url!', 'static_context') },
  'irc-gateway': {
    title: 'IRC gateway',
    params: defs('recipients!', 'default_irc_uri', 'server_host', 'server_port', 'colorize_messages', 'push_events'),
  },
  'issue-tracker-b': {
    title: 'Issue tracker B',
    params: defs(
      'url!',
      'api_url',
      'username!',
      'password!',
      'active',
      'tracker_issue_transition_automatic',
      'tracker_issue_transition_id',
      'commit_events',
      'merge_requests_events',
      'comment_on_event_enabled',
    ),
    defaults: { tracker_issue_transition_automatic: false, tracker_issue_transition_id: '' },
  },
  'chat-slash-commands-a': { title: 'Chat slash commands A', params: defs('token!') },
  'chat-slash-commands-b': { title: 'Chat slash commands B', params: defs('token!', 'username') },
  'package-registry-update': {
    title: 'Package registry update',
    params: defs('username!', 'token!', 'server', 'push_events', 'merge_requests_events', 'tag_push_events'),
  },
  'pipelines-email': {
    title: 'Pipelines emails',
    params: defs(
      'recipients!',
      'add_pusher',
      'notify_only_broken_pipelines',
      'branches_to_be_notified',
      'notify_only_default_branch',
      'pipeline_events',
    ),
    defaults: { branches_to_be_notified: 'default' },
  },
  'project-mgmt-b': { title: 'Project management B', params: defs('token!', 'restrict_to_branch', 'push_events') },
  monitoring: {
    title: 'Monitoring',
    params: defs('api_url!', 'iap_audience_client_id', 'iap_service_account_json'),
  },
  'push-notification': {
    title: 'Push notifications',
    params: defs('api_key!', 'user_key!', 'priority!', 'device', 'sound', 'push_events'),
  },
  'issue-tracker-c': {
    title: 'Issue tracker C',
    params: defs('new_issue_url!', 'project_url!', 'issues_url!', 'description', 'push_events'),
  },
  'chat-notifications-a': {
    title: 'Chat notifications A',
    params: defs(
      'webhook!',
      'username',
      'channel',
      'notify_only_broken_pipelines',
      'notify_only_default_branch',
      'branches_to_be_notified',
      'commit_events',
      'confidential_issue_channel',
      'confidential_issues_events',
      'confidential_note_channel',
      'confidential_note_events',
      'deployment_channel',
    ),
  },
};

/** Properties the sandbox never echoes back (the forge masks password fields; spec 03 is silent). */
const SECRET_PROPERTIES = new Set(['password']);

/**
 * Per-project integration settings (spec 03). Every endpoint needs Maintainer or Owner (§5). A PUT replaces the
 * whole record; only `issue-tracker-b` has an `active` parameter (default false), the other services are active
 * once configured. DELETE removes the settings; reading or deleting a service without settings answers
 * `404 Service Not Found`, an unknown slug the unknown-route 404.
 */
export function registerIntegrationRoutes(router: Router): void {
  router
    .get('/projects/:id/services', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      const active = integrationsOf(ctx.state).of(project.id).filter((r) => r.active);
      return ok(active.map(listEntry));
    })
    .get('/projects/:id/services/:slug', (ctx) => {
      const slug = knownSlug(ctx);
      const project = findProject(ctx, MAINTAINER);
      return ok(settings(findRecord(ctx, project.id, slug)));
    })
    .put('/projects/:id/services/:slug', (ctx) => {
      const slug = knownSlug(ctx);
      const project = findProject(ctx, MAINTAINER);
      return ok(settings(save(ctx, project.id, slug)));
    })
    .delete('/projects/:id/services/:slug', (ctx) => {
      const slug = knownSlug(ctx);
      const project = findProject(ctx, MAINTAINER);
      findRecord(ctx, project.id, slug);
      integrationsOf(ctx.state).delete(project.id, slug);
      return noContent();
    });
}

function knownSlug(ctx: RequestContext): string {
  const slug = ctx.params.slug ?? '';
  if (!Object.hasOwn(INTEGRATION_SERVICES, slug)) throw new ApiError(404, { error: '404 Not Found' });
  return slug;
}

function findRecord(ctx: RequestContext, projectId: number, slug: string): IntegrationRecord {
  const record = integrationsOf(ctx.state).get(projectId, slug);
  if (!record) throw notFound('Service');
  return record;
}

function save(ctx: RequestContext, projectId: number, slug: string): IntegrationRecord {
  const service = INTEGRATION_SERVICES[slug];
  // Grape reports every missing required parameter at once.
  const missing = service.params.filter((p) => p.required && !param(ctx, p.name)).map((p) => `${p.name} is missing`);
  if (missing.length > 0) throw paramError(missing.join(', '));

  const events = Object.fromEntries(INTEGRATION_EVENT_FLAGS.map((f) => [f, false])) as Record<IntegrationEventFlag, boolean>;
  const properties: Record<string, string | number | boolean> = { ...service.defaults };
  let active = true;
  for (const def of service.params) {
    const value = read(ctx, def);
    if (def.name === 'active') {
      // Spec 03 §3: issue-tracker-b is active only when PUT with active=true; omitted means false.
      active = value === true;
    } else if (FLAGS.has(def.name)) {
      // A flag the service supports is on unless the caller turns it off.
      events[def.name as IntegrationEventFlag] = value === undefined ? true : value === true;
    } else if (value !== undefined) {
      properties[def.name] = value;
    }
  }

  const store = integrationsOf(ctx.state);
  const previous = store.get(projectId, slug);
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

function read(ctx: RequestContext, def: ParamDef): string | number | boolean | undefined {
  switch (def.kind) {
    case 'boolean':
      return boolParam(ctx, def.name);
    case 'integer':
      return intParam(ctx, def.name);
    case 'branches':
      return enumParam(ctx, def.name, BRANCHES_TO_BE_NOTIFIED);
    default:
      return param(ctx, def.name);
  }
}

/** Spec 03 §2 "Service list entry". */
function listEntry(r: IntegrationRecord): Record<string, unknown> {
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

/** Spec 03 §2 "Single service settings": the list entry without two flags, plus `properties`. */
function settings(r: IntegrationRecord): Record<string, unknown> {
  const entry = listEntry(r);
  delete entry.commit_events;
  delete entry.confidential_note_events;
  const properties = Object.fromEntries(Object.entries(r.properties).filter(([name]) => !SECRET_PROPERTIES.has(name)));
  return { ...entry, properties };
}
