/**
 * Per-project integration settings ("services"; GitLab's "Project integrations API"). Slugs are neutral names for the
 * kind of service (docs/api-client.md, "Integration slugs"); parameters keep the API's snake_case names. Every slug
 * supports PUT, GET and DELETE.
 */

/** `branches_to_be_notified`: which branches' events a chat or email service reports. */
export const BRANCHES_TO_BE_NOTIFIED = ['all', 'default', 'protected', 'default_and_protected'] as const;
export type BranchesToBeNotified = (typeof BRANCHES_TO_BE_NOTIFIED)[number];

/**
 * The event flags of a service, each a boolean of the same name, in the list entry's order. The single service's
 * answer lacks two of them, LIST_ONLY_INTEGRATION_EVENT_FLAGS: only the list (`GET /projects/:id/services`) shows
 * those.
 */
export const INTEGRATION_EVENT_FLAGS = [
  'commit_events',
  'push_events',
  'issues_events',
  'confidential_issues_events',
  'merge_requests_events',
  'tag_push_events',
  'note_events',
  'confidential_note_events',
  'pipeline_events',
  'wiki_page_events',
  'job_events',
  'comment_on_event_enabled',
] as const;
export type IntegrationEventFlag = (typeof INTEGRATION_EVENT_FLAGS)[number];
export type IntegrationEventFlags = Record<IntegrationEventFlag, boolean>;

/** The single service's answer is the list entry without `commit_events` and the confidential note flag. */
export const LIST_ONLY_INTEGRATION_EVENT_FLAGS = [
  'commit_events',
  'confidential_note_events',
] as const satisfies readonly IntegrationEventFlag[];
export type ListOnlyIntegrationEventFlag = (typeof LIST_ONLY_INTEGRATION_EVENT_FLAGS)[number];

/** The event flags the single service's answer carries beside `properties`, in the list entry's order. */
export const INTEGRATION_SETTINGS_EVENT_FLAGS: readonly Exclude<IntegrationEventFlag, ListOnlyIntegrationEventFlag>[] =
  INTEGRATION_EVENT_FLAGS.filter(
    (flag): flag is Exclude<IntegrationEventFlag, ListOnlyIntegrationEventFlag> =>
      !(LIST_ONLY_INTEGRATION_EVENT_FLAGS as readonly IntegrationEventFlag[]).includes(flag),
  );

/** An entry of the service list (`GET /projects/:id/services`). */
export interface IntegrationListEntry extends IntegrationEventFlags {
  id: number;
  title: string;
  slug: string;
  created_at: string;
  updated_at: string;
  active: boolean;
}

/**
 * One service's settings: the list entry without LIST_ONLY_INTEGRATION_EVENT_FLAGS, plus `properties`, the
 * service's own parameters.
 */
export interface IntegrationSettings extends Omit<IntegrationListEntry, ListOnlyIntegrationEventFlag> {
  properties: Record<string, unknown>;
}

/**
 * How a parameter's value is written. `url` is a string that must be an absolute http(s) URL; `enum` is one of
 * `values`.
 */
export type IntegrationParameterKind = 'string' | 'url' | 'boolean' | 'integer' | 'enum';

/**
 * One parameter of a slug. `secret`: a credential (token, password, API key, or a webhook URL, which carries its own
 * credential): it is never printed, never compared with what the forge answers (the forge leaves secrets out or
 * masks them), and never echoed in an error message.
 */
export interface IntegrationParameter {
  readonly kind: IntegrationParameterKind;
  readonly required: boolean;
  readonly secret: boolean;
  /** The allowed values of an `enum`. */
  readonly values?: readonly string[];
}

/** What the table holds for one parameter: an `enum` names its values, no other kind has any. */
type ParameterEntry =
  | { readonly kind: Exclude<IntegrationParameterKind, 'enum'>; readonly required: boolean; readonly secret: boolean }
  | { readonly kind: 'enum'; readonly values: readonly string[]; readonly required: boolean; readonly secret: boolean };

const text = { kind: 'string', required: false, secret: false } as const;
const requiredText = { kind: 'string', required: true, secret: false } as const;
const url = { kind: 'url', required: false, secret: false } as const;
const requiredUrl = { kind: 'url', required: true, secret: false } as const;
const secret = { kind: 'string', required: false, secret: true } as const;
const requiredSecret = { kind: 'string', required: true, secret: true } as const;
/** A webhook URL carries its own credential: whoever knows it can post to the channel. */
const requiredSecretUrl = { kind: 'url', required: true, secret: true } as const;
const flag = { kind: 'boolean', required: false, secret: false } as const;
const integer = { kind: 'integer', required: false, secret: false } as const;
const branchesToBeNotified = { kind: 'enum', values: BRANCHES_TO_BE_NOTIFIED, required: false, secret: false } as const;

/** `issue-tracker-a` and `custom-issue-tracker`. */
const ISSUE_TRACKER_PARAMETERS = {
  new_issue_url: requiredUrl,
  issues_url: requiredUrl,
  project_url: requiredUrl,
  description: text,
  title: text,
  push_events: flag,
} as const;

/** `chat-collab-a`, `chat-collab-b` and, with one more, `chat-collab-c`. */
const CHAT_COLLAB_PARAMETERS = {
  /** URL. */
  webhook: requiredSecretUrl,
  notify_only_broken_pipelines: flag,
  /** Default `default`. */
  branches_to_be_notified: branchesToBeNotified,
  push_events: flag,
  issues_events: flag,
  confidential_issues_events: flag,
  merge_requests_events: flag,
  tag_push_events: flag,
  note_events: flag,
  confidential_note_events: flag,
  pipeline_events: flag,
  wiki_page_events: flag,
} as const;

/**
 * Every service slug, in the order docs/api-client.md lists them ("Integration slugs"), and each one's parameters: kind,
 * required, secret. The one place they are written: the slugs (INTEGRATION_SLUGS), the parameter types the client's
 * `edit` takes (IntegrationParamsBySlug) and the policy file's checks are all read from it.
 */
export const INTEGRATION_PARAMETERS = {
  'task-comments': {
    /** User API token; comments are attributed to this user. */
    api_key: requiredSecret,
    /** Comma-separated branches; blank means all. */
    restrict_to_branch: text,
    push_events: flag,
  },
  'project-commits-a': { token: requiredSecret, subdomain: text, push_events: flag },
  'ci-server-a': {
    /** Root URL of the CI server. */
    ci_server_url: requiredUrl,
    /** Build plan key. */
    build_key: requiredText,
    username: requiredText,
    password: requiredSecret,
    push_events: flag,
  },
  'issue-tracker-a': ISSUE_TRACKER_PARAMETERS,
  'ci-pipeline-service': {
    token: requiredSecret,
    /** Pipeline URL. */
    project_url: requiredUrl,
    /** @deprecated No effect; verification is always on. */
    enable_ssl_verification: flag,
    push_events: flag,
  },
  'group-chat-a': { token: requiredSecret, subdomain: text, room: text, push_events: flag },
  'chat-collab-a': CHAT_COLLAB_PARAMETERS,
  'chat-collab-b': CHAT_COLLAB_PARAMETERS,
  'chat-collab-c': {
    ...CHAT_COLLAB_PARAMETERS,
    /** @deprecated Use `branches_to_be_notified`. */
    notify_only_default_branch: flag,
  },
  'custom-issue-tracker': ISSUE_TRACKER_PARAMETERS,
  'ci-platform-a': {
    token: requiredSecret,
    ci_platform_url: requiredUrl,
    enable_ssl_verification: flag,
    push_events: flag,
    merge_requests_events: flag,
    tag_push_events: flag,
  },
  'emails-on-push': {
    /** Whitespace-separated addresses. */
    recipients: requiredText,
    disable_diffs: flag,
    send_from_committer_email: flag,
    push_events: flag,
    tag_push_events: flag,
    /** Default `all`; tag pushes always notify. */
    branches_to_be_notified: branchesToBeNotified,
  },
  'wiki-cloud-workspace': { wiki_workspace_url: requiredUrl },
  'external-wiki': { external_wiki_url: requiredUrl },
  'chatops-a': { token: requiredSecret, push_events: flag },
  'code-host-status': {
    /** API token with status scope. */
    token: requiredSecret,
    repository_url: requiredUrl,
    /** Append the instance name instead of the branch to the check name. */
    static_context: flag,
  },
  'irc-gateway': {
    /** Whitespace-separated. */
    recipients: requiredText,
    // An IRC URI (irc://), not an http(s) URL.
    default_irc_uri: text,
    server_host: text,
    server_port: integer,
    colorize_messages: flag,
    push_events: flag,
  },
  'issue-tracker-b': {
    /** Project URL (a single `url` since release 8.14). */
    url: requiredUrl,
    /** Falls back to the web URL. */
    api_url: url,
    username: requiredText,
    password: requiredSecret,
    /** Default false: a PUT without `active: true` leaves the service inactive. */
    active: flag,
    /** Default false; takes precedence over the ID. */
    tracker_issue_transition_automatic: flag,
    /** Default blank (custom transitions disabled); ignored when automatic is on. */
    tracker_issue_transition_id: text,
    commit_events: flag,
    merge_requests_events: flag,
    comment_on_event_enabled: flag,
  },
  'chat-slash-commands-a': { token: requiredSecret },
  'chat-slash-commands-b': {
    token: requiredSecret,
    /** Name used to post the message. */
    username: text,
  },
  'package-registry-update': {
    username: requiredText,
    token: requiredSecret,
    /** Server URL, blank for the default: so no URL check. */
    server: text,
    push_events: flag,
    merge_requests_events: flag,
    tag_push_events: flag,
  },
  'pipelines-email': {
    /** Comma-separated addresses. */
    recipients: requiredText,
    add_pusher: flag,
    notify_only_broken_pipelines: flag,
    /** Default `default`. */
    branches_to_be_notified: branchesToBeNotified,
    /** @deprecated Use `branches_to_be_notified`. */
    notify_only_default_branch: flag,
    pipeline_events: flag,
  },
  'project-mgmt-b': {
    token: requiredSecret,
    /** Comma-separated branches, blank means all. */
    restrict_to_branch: text,
    push_events: flag,
  },
  monitoring: {
    /** Base URL. */
    api_url: requiredUrl,
    iap_audience_client_id: text,
    /** Service account credentials as JSON text. */
    iap_service_account_json: secret,
  },
  'push-notification': {
    /** Application key. */
    api_key: requiredSecret,
    /** Identifies the receiving account to the push service; with the application key it is enough to send as it. */
    user_key: requiredSecret,
    priority: requiredText,
    /** Blank means all active devices. */
    device: text,
    sound: text,
    push_events: flag,
  },
  'issue-tracker-c': {
    new_issue_url: requiredUrl,
    project_url: requiredUrl,
    issues_url: requiredUrl,
    description: text,
    push_events: flag,
  },
  /** The forge's documentation shows only these parameters of this service. */
  'chat-notifications-a': {
    /** URL. */
    webhook: requiredSecretUrl,
    username: text,
    /** Default channel when the others are unset. */
    channel: text,
    notify_only_broken_pipelines: flag,
    /** @deprecated Use `branches_to_be_notified`. */
    notify_only_default_branch: flag,
    branches_to_be_notified: branchesToBeNotified,
    commit_events: flag,
    confidential_issue_channel: text,
    confidential_issues_events: flag,
    confidential_note_channel: text,
    confidential_note_events: flag,
    deployment_channel: text,
  },
} as const satisfies Record<string, Record<string, ParameterEntry>>;

export type IntegrationSlug = keyof typeof INTEGRATION_PARAMETERS;

/** Every service slug, in the table's order. */
export const INTEGRATION_SLUGS = Object.keys(INTEGRATION_PARAMETERS) as readonly IntegrationSlug[];

/** The value a parameter of this entry takes. */
type ValueOf<P> = P extends { readonly kind: 'boolean' }
  ? boolean
  : P extends { readonly kind: 'integer' }
    ? number
    : P extends { readonly kind: 'enum'; readonly values: readonly (infer V)[] }
      ? V
      : string;

type RequiredNames<T> = { [K in keyof T]: T[K] extends { readonly required: true } ? K : never }[keyof T];

/** One object type from an intersection, so an editor shows the parameters themselves. */
type Flat<T> = { [K in keyof T]: T[K] } & {};

/** A slug's parameters as the client sends them, the required ones not optional; mapped, so the table's comments show. */
type ParamsOf<T> = Flat<
  { -readonly [K in keyof T]?: ValueOf<T[K]> } & { -readonly [K in RequiredNames<T>]-?: ValueOf<T[K]> }
>;

/** The parameters of each slug, as `client.integrations.edit` takes them. */
export type IntegrationParamsBySlug = { [S in IntegrationSlug]: ParamsOf<(typeof INTEGRATION_PARAMETERS)[S]> };

/** `issue-tracker-a` and `custom-issue-tracker`. */
export type IssueTrackerParams = IntegrationParamsBySlug['issue-tracker-a'];
/** `chat-collab-a` and `chat-collab-b`. */
export type ChatCollabParams = IntegrationParamsBySlug['chat-collab-a'];

/** The parameters of `slug`, widened for code that walks them generically. */
export function integrationParameters(slug: IntegrationSlug): Readonly<Record<string, IntegrationParameter>> {
  return INTEGRATION_PARAMETERS[slug];
}
