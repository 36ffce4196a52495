import type { Timestamp } from './common';

/**
 * Project webhooks, as GitLab's public API docs describe them ("Project webhooks API", `doc/api/project_webhooks.md`;
 * the answer is the forge's `API::Entities::ProjectHook`). The forge's API specification does not cover them.
 * Fields that newer forges added are optional: an older forge leaves them out.
 */

/**
 * `alert_status` of the forge's auto-disabling (`WebHooks::AutoDisabling`): `temporarily_disabled` while a backoff
 * runs (`disabled_until` in the future) after 4 consecutive failures, `disabled` after 40.
 */
export type HookAlertStatus = 'executable' | 'temporarily_disabled' | 'disabled';

/** How `push_events_branch_filter` is read; `wildcard` is the forge's default. */
export const BRANCH_FILTER_STRATEGIES = ['wildcard', 'regex', 'all_branches'] as const;
export type BranchFilterStrategy = (typeof BRANCH_FILTER_STRATEGIES)[number];

/** The flags of ProjectHookEventFlags as a list: the events a project hook can subscribe to. */
export const PROJECT_HOOK_EVENT_FLAGS = [
  'push_events',
  'tag_push_events',
  'issues_events',
  'confidential_issues_events',
  'merge_requests_events',
  'note_events',
  'confidential_note_events',
  'job_events',
  'pipeline_events',
  'wiki_page_events',
  'deployment_events',
  'releases_events',
  'feature_flag_events',
  'emoji_events',
  'resource_access_token_events',
  'vulnerability_events',
] as const;
export type ProjectHookEventFlag = (typeof PROJECT_HOOK_EVENT_FLAGS)[number];

/** The events a project hook can subscribe to (each a boolean flag of the same name). */
export interface ProjectHookEventFlags {
  /** The forge's default is true (its `web_hooks.push_events` column defaults to true); every other flag false. */
  push_events: boolean;
  tag_push_events: boolean;
  issues_events: boolean;
  confidential_issues_events: boolean;
  merge_requests_events: boolean;
  note_events: boolean;
  confidential_note_events: boolean;
  job_events: boolean;
  pipeline_events: boolean;
  wiki_page_events: boolean;
  deployment_events: boolean;
  releases_events: boolean;
  feature_flag_events?: boolean;
  emoji_events?: boolean;
  resource_access_token_events?: boolean;
  vulnerability_events?: boolean;
}

/** Compile-time check that PROJECT_HOOK_EVENT_FLAGS lists exactly the flags of ProjectHookEventFlags. */
type _EveryHookFlagListed = [ProjectHookEventFlag] extends [keyof ProjectHookEventFlags]
  ? [keyof ProjectHookEventFlags] extends [ProjectHookEventFlag]
    ? true
    : never
  : never;
const _hookEventFlagsComplete: _EveryHookFlagListed = true;
void _hookEventFlagsComplete;

/** A custom header or URL variable as the forge shows it: the key only, the value is never sent back. */
export interface MaskedHookEntry {
  key: string;
}

/** A project webhook. The secret `token` is write-only: the forge never returns it. */
export interface ProjectHook extends ProjectHookEventFlags {
  id: number;
  url: string;
  /** GitLab 17.1 and later. */
  name?: string | null;
  description?: string | null;
  project_id: number;
  created_at: Timestamp;
  push_events_branch_filter: string | null;
  branch_filter_strategy?: BranchFilterStrategy;
  repository_update_events: boolean;
  enable_ssl_verification: boolean;
  alert_status: HookAlertStatus;
  /** When a temporarily disabled hook is tried again; null while it is executable. */
  disabled_until: Timestamp | null;
  /** Keys only; absent from the list (`GET /projects/:id/hooks`), present on a single hook. */
  url_variables?: MaskedHookEntry[];
  /** Keys only; absent from the list, present on a single hook (GitLab 17.1 and later). */
  custom_headers?: MaskedHookEntry[];
  custom_webhook_template?: string | null;
  /** Shown by newer forges; not settable through this API. */
  milestone_events?: boolean;
  resource_deploy_token_events?: boolean;
}

/** A header or URL variable as it is set: `{key, value}`. The value is write-only. */
export interface HookKeyValue {
  key: string;
  value: string;
}

/** `POST /projects/:id/hooks`. */
export interface CreateProjectHookParams extends Partial<ProjectHookEventFlags> {
  /** http(s) only; anything else is a `ValidationError` (422 `Invalid url given`). `{name}` refers to a URL variable. */
  url: string;
  name?: string;
  description?: string;
  /** Sent back to the receiver as `X-Gitlab-Token`; never returned by the forge. */
  token?: string;
  enable_ssl_verification?: boolean;
  push_events_branch_filter?: string;
  branch_filter_strategy?: BranchFilterStrategy;
  custom_webhook_template?: string;
  custom_headers?: HookKeyValue[];
  url_variables?: HookKeyValue[];
}

/**
 * `PUT /projects/:id/hooks/:hook_id`: only the given fields change (at least one is required, else a 400). A new
 * `url` without a `token` clears the stored token, as on the forge ("When you change the webhook URL, the secret
 * token is reset and not retained").
 */
export type EditProjectHookParams = Partial<CreateProjectHookParams>;
