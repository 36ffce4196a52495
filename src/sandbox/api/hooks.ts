import {
  BRANCH_FILTER_STRATEGIES,
  PROJECT_HOOK_EVENT_FLAGS,
  type BranchFilterStrategy,
  type ProjectHook,
  type ProjectHookEventFlag,
} from '../../gitlab/types/hooks';
import {
  ApiError,
  boolParam,
  enumParam,
  intRouteParam,
  noContent,
  notFound,
  ok,
  param,
  paramError,
  type RequestContext,
} from '../http/context';
import { paginate } from '../http/pagination';
import type { Router } from '../http/router';
import { HOOK_URL_VARIABLE, interpolateHookUrl, type HookRecord, type HooksState } from '../hooks-state';
import type { ProjectRecord } from '../state';
import { isRegExp } from '../request-scope';
import { isHookUrl } from '../world';
import { findProject, MAINTAINER } from './access';

/**
 * Project webhooks (GitLab's "Project webhooks API", `lib/api/project_hooks.rb`; beyond the forge's API specification).
 * Reading and writing both need a maintainer (`read_web_hook`/`admin_web_hook`) or an administrator; a project the
 * caller cannot see is 404. Errors are the forge's: `url` missing → 400 `{"error":"url is missing"}`; a URL that is not
 * http(s) (or names a URL variable it lacks) → 422 `{"error":"Invalid url given"}`; a PUT without parameters → 400
 * `{"error":"No parameters provided"}`; an unknown hook → `404 Not found`. Unlike a default forge, local addresses are
 * accepted (the forge's "Allow requests to the local network from webhooks"), so tests can receive deliveries.
 */

/** `validates :custom_webhook_template, length: { maximum: 4096 }`. */
const MAX_TEMPLATE_LENGTH = 4096;

export function registerHookRoutes(router: Router): void {
  router
    .get('/projects/:id/hooks', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      // The list leaves out url_variables and custom_headers (`with_url_variables: false, with_custom_headers: false`).
      return paginate(ctx, hooksOf(ctx).of(project.id), (hook) => presentHook(ctx, hook, 'list'));
    })
    .get('/projects/:id/hooks/:hook_id', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      return ok(presentHook(ctx, findHook(ctx, project), 'single'));
    })
    .post('/projects/:id/hooks', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      const url = param(ctx, 'url');
      if (url === undefined) throw paramError('url is missing');
      const input = hookParams(ctx);
      const urlVariables = input.url_variables ?? {};
      const fields = {
        url,
        name: input.name ?? null,
        description: input.description ?? null,
        token: input.token ?? null,
        events: Object.fromEntries(
          PROJECT_HOOK_EVENT_FLAGS.map((f) => [f, input.events[f] ?? f === 'push_events']),
        ) as Record<ProjectHookEventFlag, boolean>,
        push_events_branch_filter: input.push_events_branch_filter ?? null,
        branch_filter_strategy: input.branch_filter_strategy ?? 'wildcard',
        enable_ssl_verification: input.enable_ssl_verification ?? true,
        custom_webhook_template: input.custom_webhook_template ?? null,
        custom_headers: input.custom_headers ?? {},
        url_variables: urlVariables,
      };
      validate(fields);
      return ok(presentHook(ctx, hooksOf(ctx).create(project.id, fields), 'single'), 201);
    })
    .put('/projects/:id/hooks/:hook_id', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      const hook = findHook(ctx, project);
      const input = hookParams(ctx);
      const url = param(ctx, 'url');
      const given =
        url !== undefined ||
        Object.keys(input.events).length > 0 ||
        Object.entries(input).some(([key, value]) => key !== 'events' && value !== undefined);
      if (!given) throw paramError('No parameters provided');
      const before = { url: hook.url, address: interpolateHookUrl(hook.url, hook.url_variables) };
      const next: HookRecord = {
        ...hook,
        url: url ?? hook.url,
        name: input.name ?? hook.name,
        description: input.description ?? hook.description,
        token: input.token ?? hook.token,
        events: { ...hook.events, ...input.events },
        push_events_branch_filter: input.push_events_branch_filter ?? hook.push_events_branch_filter,
        branch_filter_strategy: input.branch_filter_strategy ?? hook.branch_filter_strategy,
        enable_ssl_verification: input.enable_ssl_verification ?? hook.enable_ssl_verification,
        custom_webhook_template: input.custom_webhook_template ?? hook.custom_webhook_template,
        // Given headers and variables are merged into the stored ones (`update_hook_params`).
        custom_headers: { ...hook.custom_headers, ...input.custom_headers },
        url_variables: { ...hook.url_variables, ...input.url_variables },
      };
      // The model's before_validation callbacks (`WebHooks::Hook`): secrets do not follow the hook to a new address.
      // A new URL without a new token drops the token ("the secret token is reset and not retained"), and URL
      // variables not given again (the sandbox's simplification of `reset_url_variables`); a new address drops the
      // custom headers (`reset_custom_headers`).
      if (next.url !== before.url) {
        if (input.token === undefined) next.token = null;
        next.url_variables = { ...input.url_variables };
      }
      if (interpolateHookUrl(next.url, next.url_variables) !== before.address) next.custom_headers = {};
      validate(next);
      Object.assign(hook, next);
      return ok(presentHook(ctx, hook, 'single'));
    })
    .delete('/projects/:id/hooks/:hook_id', (ctx) => {
      const project = findProject(ctx, MAINTAINER);
      hooksOf(ctx).remove(findHook(ctx, project));
      return noContent();
    });
}

interface HookParams {
  name?: string;
  description?: string;
  token?: string;
  events: Partial<Record<ProjectHookEventFlag, boolean>>;
  push_events_branch_filter?: string;
  branch_filter_strategy?: BranchFilterStrategy;
  enable_ssl_verification?: boolean;
  custom_webhook_template?: string;
  custom_headers?: Record<string, string>;
  url_variables?: Record<string, string>;
}

/** The optional parameters of POST and PUT (`common_hook_parameters`); Grape's type errors answer 400. */
function hookParams(ctx: RequestContext): HookParams {
  const events: Partial<Record<ProjectHookEventFlag, boolean>> = {};
  for (const flag of PROJECT_HOOK_EVENT_FLAGS) {
    const value = boolParam(ctx, flag);
    if (value !== undefined) events[flag] = value;
  }
  return {
    name: param(ctx, 'name'),
    description: param(ctx, 'description'),
    token: param(ctx, 'token'),
    events,
    push_events_branch_filter: param(ctx, 'push_events_branch_filter'),
    branch_filter_strategy: enumParam(ctx, 'branch_filter_strategy', BRANCH_FILTER_STRATEGIES),
    enable_ssl_verification: boolParam(ctx, 'enable_ssl_verification'),
    custom_webhook_template: param(ctx, 'custom_webhook_template'),
    custom_headers: keyValueParam(ctx, 'custom_headers'),
    url_variables: keyValueParam(ctx, 'url_variables'),
  };
}

/** `[{key, value}, ...]` (JSON body) as a map; Grape's `requires :key`/`:value` name what is missing. */
function keyValueParam(ctx: RequestContext, name: string): Record<string, string> | undefined {
  const raw = ctx.body[name];
  if (raw === undefined) return undefined;
  if (!Array.isArray(raw)) throw paramError(`${name} is invalid`);
  const result: Record<string, string> = {};
  raw.forEach((entry: unknown, i) => {
    const item = typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>) : {};
    for (const field of ['key', 'value']) {
      if (typeof item[field] !== 'string') throw paramError(`${name}[${i}][${field}] is missing`);
    }
    result[item.key as string] = item.value as string;
  });
  return result;
}

/** The model's validations, answered as `WebHooks::CreateService` and `save_hook` answer them (422). */
function validate(
  hook: Omit<HookRecord, 'id' | 'project_id' | 'created_at' | 'recent_failures' | 'disabled_until'>,
): void {
  const missing = [...hook.url.matchAll(HOOK_URL_VARIABLE)].some((m) => hook.url_variables[m[1]] === undefined);
  if (hook.url === '' || missing || !isHookUrl(interpolateHookUrl(hook.url, hook.url_variables))) {
    throw new ApiError(422, { error: 'Invalid url given' });
  }
  if (hook.branch_filter_strategy === 'all_branches') hook.push_events_branch_filter = null;
  if (
    hook.branch_filter_strategy === 'regex' &&
    hook.push_events_branch_filter !== null &&
    !isRegExp(hook.push_events_branch_filter)
  ) {
    throw new ApiError(422, { error: 'Invalid branch filter given' });
  }
  if (hook.token !== null && /\n/.test(hook.token)) throw new ApiError(422, { error: 'Token is invalid' });
  if (hook.custom_webhook_template !== null && hook.custom_webhook_template.length > MAX_TEMPLATE_LENGTH) {
    throw new ApiError(422, {
      error: `Custom webhook template is too long (maximum is ${MAX_TEMPLATE_LENGTH} characters)`,
    });
  }
}

/** `user_project.hooks.find(params[:hook_id])`: another project's hook is not found either. */
function findHook(ctx: RequestContext, project: ProjectRecord): HookRecord {
  const hook = hooksOf(ctx).hooks.get(intRouteParam(ctx, 'hook_id'));
  if (!hook || hook.project_id !== project.id) throw notFound();
  return hook;
}

function hooksOf(ctx: RequestContext): HooksState {
  return ctx.state.hooks;
}

/**
 * The forge's `API::Entities::ProjectHook` (with `Hook`): never the token; custom headers and URL variables by key
 * only, and only on a single hook.
 */
function presentHook(ctx: RequestContext, hook: HookRecord, view: 'list' | 'single'): ProjectHook {
  const keys = (entries: Record<string, string>) => Object.keys(entries).map((key) => ({ key }));
  const e = hook.events;
  return {
    id: hook.id,
    url: hook.url,
    name: hook.name,
    description: hook.description,
    created_at: hook.created_at,
    push_events: e.push_events,
    tag_push_events: e.tag_push_events,
    merge_requests_events: e.merge_requests_events,
    repository_update_events: false,
    enable_ssl_verification: hook.enable_ssl_verification,
    alert_status: hooksOf(ctx).alertStatus(hook),
    disabled_until: hook.disabled_until,
    ...(view === 'single' ? { url_variables: keys(hook.url_variables) } : {}),
    push_events_branch_filter: hook.push_events_branch_filter,
    branch_filter_strategy: hook.branch_filter_strategy,
    custom_webhook_template: hook.custom_webhook_template,
    ...(view === 'single' ? { custom_headers: keys(hook.custom_headers) } : {}),
    project_id: hook.project_id,
    issues_events: e.issues_events,
    confidential_issues_events: e.confidential_issues_events,
    note_events: e.note_events,
    confidential_note_events: e.confidential_note_events,
    pipeline_events: e.pipeline_events,
    wiki_page_events: e.wiki_page_events,
    deployment_events: e.deployment_events,
    feature_flag_events: e.feature_flag_events,
    job_events: e.job_events,
    releases_events: e.releases_events,
    milestone_events: false,
    emoji_events: e.emoji_events,
    resource_access_token_events: e.resource_access_token_events,
    resource_deploy_token_events: false,
    vulnerability_events: e.vulnerability_events,
  };
}
