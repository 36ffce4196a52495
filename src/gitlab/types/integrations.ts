/**
 * Spec 03, per-project integration settings ("services"). Slugs are the spec's neutral names for the kind of
 * service; parameters keep the API's snake_case names. Every slug supports PUT, GET and DELETE.
 */

/** Every service slug of spec 03 §4, in the spec's order. */
export const INTEGRATION_SLUGS = [
  'task-comments',
  'project-commits-a',
  'ci-server-a',
  'issue-tracker-a',
  'ci-pipeline-service',
  'group-chat-a',
  'chat-collab-a',
  'chat-collab-b',
  'chat-collab-c',
  'custom-issue-tracker',
  'ci-platform-a',
  'emails-on-push',
  'wiki-cloud-workspace',
  'external-wiki',
  'chatops-a',
  'code-host-status',
  'irc-gateway',
  'issue-tracker-b',
  'chat-slash-commands-a',
  'chat-slash-commands-b',
  'package-registry-update',
  'pipelines-email',
  'project-mgmt-b',
  'monitoring',
  'push-notification',
  'issue-tracker-c',
  'chat-notifications-a',
] as const;
export type IntegrationSlug = (typeof INTEGRATION_SLUGS)[number];

/** Spec 03 §2 "Shared parameter vocabulary". */
export type BranchesToBeNotified = 'all' | 'default' | 'protected' | 'default_and_protected';

/** Spec 03 §2 "Service list entry" (`GET /projects/:id/services`). */
export interface IntegrationListEntry {
  id: number;
  title: string;
  slug: string;
  created_at: string;
  updated_at: string;
  active: boolean;
  commit_events: boolean;
  push_events: boolean;
  issues_events: boolean;
  confidential_issues_events: boolean;
  merge_requests_events: boolean;
  tag_push_events: boolean;
  note_events: boolean;
  confidential_note_events: boolean;
  pipeline_events: boolean;
  wiki_page_events: boolean;
  job_events: boolean;
  comment_on_event_enabled: boolean;
}

/**
 * Spec 03 §2 "Single service settings": the list entry without `commit_events` and `confidential_note_events`,
 * plus `properties`, the service's own parameters (for the slash-command services `{ token }`; the spec does not
 * show the others).
 */
export interface IntegrationSettings extends Omit<IntegrationListEntry, 'commit_events' | 'confidential_note_events'> {
  properties: Record<string, unknown>;
}

/** Parameters of the issue trackers `issue-tracker-a` and `custom-issue-tracker`. */
export interface IssueTrackerParams {
  new_issue_url: string;
  issues_url: string;
  project_url: string;
  description?: string;
  title?: string;
  push_events?: boolean;
}

/** `chat-collab-a` and `chat-collab-b`. */
export interface ChatCollabParams {
  /** URL. */
  webhook: string;
  notify_only_broken_pipelines?: boolean;
  /** Default `default`. */
  branches_to_be_notified?: BranchesToBeNotified;
  push_events?: boolean;
  issues_events?: boolean;
  confidential_issues_events?: boolean;
  merge_requests_events?: boolean;
  tag_push_events?: boolean;
  note_events?: boolean;
  confidential_note_events?: boolean;
  pipeline_events?: boolean;
  wiki_page_events?: boolean;
}

/** Parameters of each slug (spec 03 §4); required ones are non-optional. */
export interface IntegrationParamsBySlug {
  'task-comments': {
    /** User API token; comments are attributed to this user. */
    api_key: string;
    /** Comma-separated branches; blank means all. */
    restrict_to_branch?: string;
    push_events?: boolean;
  };
  'project-commits-a': { token: string; subdomain?: string; push_events?: boolean };
  'ci-server-a': {
    /** Root URL of the CI server. */
    ci_server_url: string;
    /** Build plan key. */
    build_key: string;
    username: string;
    password: string;
    push_events?: boolean;
  };
  'issue-tracker-a': IssueTrackerParams;
  'ci-pipeline-service': {
    token: string;
    /** Pipeline URL. */
    project_url: string;
    /** @deprecated No effect; verification is always on. */
    enable_ssl_verification?: boolean;
    push_events?: boolean;
  };
  'group-chat-a': { token: string; subdomain?: string; room?: string; push_events?: boolean };
  'chat-collab-a': ChatCollabParams;
  'chat-collab-b': ChatCollabParams;
  'chat-collab-c': ChatCollabParams & {
    /** @deprecated Use `branches_to_be_notified`. */
    notify_only_default_branch?: boolean;
  };
  'custom-issue-tracker': IssueTrackerParams;
  'ci-platform-a': {
    token: string;
    ci_platform_url: string;
    enable_ssl_verification?: boolean;
    push_events?: boolean;
    merge_requests_events?: boolean;
    tag_push_events?: boolean;
  };
  'emails-on-push': {
    /** Whitespace-separated addresses. */
    recipients: string;
    disable_diffs?: boolean;
    send_from_committer_email?: boolean;
    push_events?: boolean;
    tag_push_events?: boolean;
    /** Default `all`; tag pushes always notify. */
    branches_to_be_notified?: BranchesToBeNotified;
  };
  'wiki-cloud-workspace': { wiki_workspace_url: string };
  'external-wiki': { external_wiki_url: string };
  'chatops-a': { token: string; push_events?: boolean };
  'code-host-status': {
    /** API token with status scope. */
    token: string;
    repository_url: string;
    /** Append the instance name instead of the branch to the check name. */
    static_context?: boolean;
  };
  'irc-gateway': {
    /** Whitespace-separated. */
    recipients: string;
    default_irc_uri?: string;
    server_host?: string;
    server_port?: number;
    colorize_messages?: boolean;
    push_events?: boolean;
  };
  'issue-tracker-b': {
    /** Project URL (a single `url` since release 8.14). */
    url: string;
    /** Falls back to the web URL. */
    api_url?: string;
    username: string;
    password: string;
    /** Default false: a PUT without `active: true` leaves the service inactive. */
    active?: boolean;
    /** Default false; takes precedence over the ID. */
    tracker_issue_transition_automatic?: boolean;
    /** Default blank (custom transitions disabled); ignored when automatic is on. */
    tracker_issue_transition_id?: string;
    commit_events?: boolean;
    merge_requests_events?: boolean;
    comment_on_event_enabled?: boolean;
  };
  'chat-slash-commands-a': { token: string };
  'chat-slash-commands-b': {
    token: string;
    /** Name used to post the message. */
    username?: string;
  };
  'package-registry-update': {
    username: string;
    token: string;
    /** Server URL, blank for the default (the spec lists it as boolean but describes a URL). */
    server?: string;
    push_events?: boolean;
    merge_requests_events?: boolean;
    tag_push_events?: boolean;
  };
  'pipelines-email': {
    /** Comma-separated addresses. */
    recipients: string;
    add_pusher?: boolean;
    notify_only_broken_pipelines?: boolean;
    /** Default `default`. */
    branches_to_be_notified?: BranchesToBeNotified;
    /** @deprecated Use `branches_to_be_notified`. */
    notify_only_default_branch?: boolean;
    pipeline_events?: boolean;
  };
  'project-mgmt-b': {
    token: string;
    /** Comma-separated branches, blank means all (the spec lists it as boolean but describes a list). */
    restrict_to_branch?: string;
    push_events?: boolean;
  };
  monitoring: {
    /** Base URL. */
    api_url: string;
    iap_audience_client_id?: string;
    /** Service account credentials as JSON text. */
    iap_service_account_json?: string;
  };
  'push-notification': {
    /** Application key. */
    api_key: string;
    user_key: string;
    priority: string;
    /** Blank means all active devices. */
    device?: string;
    sound?: string;
    push_events?: boolean;
  };
  'issue-tracker-c': {
    new_issue_url: string;
    project_url: string;
    issues_url: string;
    description?: string;
    push_events?: boolean;
  };
  /** Spec 03 shows only these parameters of this service. */
  'chat-notifications-a': {
    /** URL. */
    webhook: string;
    username?: string;
    /** Default channel when the others are unset. */
    channel?: string;
    notify_only_broken_pipelines?: boolean;
    /** @deprecated Use `branches_to_be_notified`. */
    notify_only_default_branch?: boolean;
    branches_to_be_notified?: BranchesToBeNotified;
    commit_events?: boolean;
    confidential_issue_channel?: string;
    confidential_issues_events?: boolean;
    confidential_note_channel?: string;
    confidential_note_events?: boolean;
    deployment_channel?: string;
  };
}

/** Compile-time check that the map covers exactly the slugs. */
type _EverySlugHasParams = [IntegrationSlug] extends [keyof IntegrationParamsBySlug]
  ? [keyof IntegrationParamsBySlug] extends [IntegrationSlug]
    ? true
    : never
  : never;
const _integrationParamsCoverEverySlug: _EverySlugHasParams = true;
void _integrationParamsCoverEverySlug;
