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

/**
 * The event flags of a service, each a boolean of the same name (spec 03 §2 "Service list entry"), in the list
 * entry's order. The single service's answer ("Single service settings") lacks two of them,
 * LIST_ONLY_INTEGRATION_EVENT_FLAGS: only the list (`GET /projects/:id/services`) shows those.
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

/** Spec 03 §2 "Single service settings": "without `commit_events` and the confidential note flag". */
export const LIST_ONLY_INTEGRATION_EVENT_FLAGS = ['commit_events', 'confidential_note_events'] as const satisfies readonly IntegrationEventFlag[];
export type ListOnlyIntegrationEventFlag = (typeof LIST_ONLY_INTEGRATION_EVENT_FLAGS)[number];

/** The event flags the single service's answer carries beside `properties`, in the list entry's order. */
export const INTEGRATION_SETTINGS_EVENT_FLAGS: readonly Exclude<IntegrationEventFlag, ListOnlyIntegrationEventFlag>[] = INTEGRATION_EVENT_FLAGS.filter(
  (flag): flag is Exclude<IntegrationEventFlag, ListOnlyIntegrationEventFlag> =>
    !(LIST_ONLY_INTEGRATION_EVENT_FLAGS as readonly IntegrationEventFlag[]).includes(flag),
);

/** Spec 03 §2 "Service list entry" (`GET /projects/:id/services`). */
export interface IntegrationListEntry extends IntegrationEventFlags {
  id: number;
  title: string;
  slug: string;
  created_at: string;
  updated_at: string;
  active: boolean;
}

/**
 * Spec 03 §2 "Single service settings": the list entry without LIST_ONLY_INTEGRATION_EVENT_FLAGS, plus `properties`,
 * the service's own parameters (for the slash-command services `{ token }`; the spec does not show the others).
 */
export interface IntegrationSettings extends Omit<IntegrationListEntry, ListOnlyIntegrationEventFlag> {
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

/** Spec 03 §2 `branches_to_be_notified`, as a list for validation; the check below keeps it equal to the type. */
export const BRANCHES_TO_BE_NOTIFIED = ['all', 'default', 'protected', 'default_and_protected'] as const satisfies readonly BranchesToBeNotified[];
type _EveryBranchSettingListed = Exclude<BranchesToBeNotified, (typeof BRANCHES_TO_BE_NOTIFIED)[number]> extends never ? true : never;
const _branchesToBeNotifiedComplete: _EveryBranchSettingListed = true;
void _branchesToBeNotifiedComplete;

/**
 * How a parameter's value is written. `url` is a string that must be an absolute http(s) URL; `enum` is one of
 * `values`.
 */
export type IntegrationParameterKind = 'string' | 'url' | 'boolean' | 'integer' | 'enum';

/**
 * One parameter of a slug, for checking a policy file at run time (IntegrationParamsBySlug is types only).
 * `secret`: a credential (token, password, API key, or a webhook URL, which carries its own credential): it is
 * never printed, never compared with what the forge answers (the forge leaves secrets out or masks them), and
 * never echoed in an error message.
 */
export interface IntegrationParameter {
  readonly kind: IntegrationParameterKind;
  readonly required: boolean;
  readonly secret: boolean;
  /** The allowed values of an `enum`. */
  readonly values?: readonly string[];
}

/**
 * What a table entry must be for a parameter of type `T`: booleans are `boolean`, numbers `integer`, a literal union
 * an `enum` of exactly its members, a plain string `string` or `url`. Not distributive (`[T]`), so a union stays one.
 */
type ParameterKindFor<T> = [T] extends [boolean]
  ? { readonly kind: 'boolean' }
  : [T] extends [number]
    ? { readonly kind: 'integer' }
    : [string] extends [T]
      ? { readonly kind: 'string' | 'url' }
      : { readonly kind: 'enum'; readonly values: readonly T[] };

type ParameterFor<Params, P extends keyof Params> = ParameterKindFor<NonNullable<Params[P]>> & {
  /** True exactly where the type's property is not optional. */
  readonly required: Record<never, never> extends Pick<Params, P> ? false : true;
  readonly secret: boolean;
};

/** Every slug, every parameter of its type, each with the kind and requiredness its type says. */
type IntegrationParameterTable = {
  readonly [S in IntegrationSlug]: { readonly [P in keyof IntegrationParamsBySlug[S]]-?: ParameterFor<IntegrationParamsBySlug[S], P> };
};

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

const ISSUE_TRACKER_PARAMETERS = {
  new_issue_url: requiredUrl,
  issues_url: requiredUrl,
  project_url: requiredUrl,
  description: text,
  title: text,
  push_events: flag,
} as const;

const CHAT_COLLAB_PARAMETERS = {
  webhook: requiredSecretUrl,
  notify_only_broken_pipelines: flag,
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
 * The parameters of each slug (spec 03 §4) at run time, for validating a policy file: kind, required, secret.
 * `satisfies IntegrationParameterTable` makes a slug or parameter missing here, a wrong kind or a wrong `required`
 * a compile error; `_NoExtraParameters` below refuses a parameter the types do not have. So the table cannot drift
 * from IntegrationParamsBySlug, which the client's `edit` takes.
 */
export const INTEGRATION_PARAMETERS = {
  'task-comments': { api_key: requiredSecret, restrict_to_branch: text, push_events: flag },
  'project-commits-a': { token: requiredSecret, subdomain: text, push_events: flag },
  'ci-server-a': { ci_server_url: requiredUrl, build_key: requiredText, username: requiredText, password: requiredSecret, push_events: flag },
  'issue-tracker-a': ISSUE_TRACKER_PARAMETERS,
  'ci-pipeline-service': { token: requiredSecret, project_url: requiredUrl, enable_ssl_verification: flag, push_events: flag },
  'group-chat-a': { token: requiredSecret, subdomain: text, room: text, push_events: flag },
  'chat-collab-a': CHAT_COLLAB_PARAMETERS,
  'chat-collab-b': CHAT_COLLAB_PARAMETERS,
  'chat-collab-c': { ...CHAT_COLLAB_PARAMETERS, notify_only_default_branch: flag },
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
    recipients: requiredText,
    disable_diffs: flag,
    send_from_committer_email: flag,
    push_events: flag,
    tag_push_events: flag,
    branches_to_be_notified: branchesToBeNotified,
  },
  'wiki-cloud-workspace': { wiki_workspace_url: requiredUrl },
  'external-wiki': { external_wiki_url: requiredUrl },
  'chatops-a': { token: requiredSecret, push_events: flag },
  'code-host-status': { token: requiredSecret, repository_url: requiredUrl, static_context: flag },
  'irc-gateway': {
    recipients: requiredText,
    // An IRC URI (irc://), not an http(s) URL.
    default_irc_uri: text,
    server_host: text,
    server_port: integer,
    colorize_messages: flag,
    push_events: flag,
  },
  'issue-tracker-b': {
    url: requiredUrl,
    api_url: url,
    username: requiredText,
    password: requiredSecret,
    active: flag,
    tracker_issue_transition_automatic: flag,
    tracker_issue_transition_id: text,
    commit_events: flag,
    merge_requests_events: flag,
    comment_on_event_enabled: flag,
  },
  'chat-slash-commands-a': { token: requiredSecret },
  'chat-slash-commands-b': { token: requiredSecret, username: text },
  'package-registry-update': {
    username: requiredText,
    token: requiredSecret,
    // Blank means the default server, so no URL check.
    server: text,
    push_events: flag,
    merge_requests_events: flag,
    tag_push_events: flag,
  },
  'pipelines-email': {
    recipients: requiredText,
    add_pusher: flag,
    notify_only_broken_pipelines: flag,
    branches_to_be_notified: branchesToBeNotified,
    notify_only_default_branch: flag,
    pipeline_events: flag,
  },
  'project-mgmt-b': { token: requiredSecret, restrict_to_branch: text, push_events: flag },
  monitoring: { api_url: requiredUrl, iap_audience_client_id: text, iap_service_account_json: secret },
  'push-notification': {
    api_key: requiredSecret,
    // Identifies the receiving account to the push service; with the application key it is enough to send as it.
    user_key: { kind: 'string', required: true, secret: true },
    priority: requiredText,
    device: text,
    sound: text,
    push_events: flag,
  },
  'issue-tracker-c': { new_issue_url: requiredUrl, project_url: requiredUrl, issues_url: requiredUrl, description: text, push_events: flag },
  'chat-notifications-a': {
    webhook: requiredSecretUrl,
    username: text,
    channel: text,
    notify_only_broken_pipelines: flag,
    notify_only_default_branch: flag,
    branches_to_be_notified: branchesToBeNotified,
    commit_events: flag,
    confidential_issue_channel: text,
    confidential_issues_events: flag,
    confidential_note_channel: text,
    confidential_note_events: flag,
    deployment_channel: text,
  },
} as const satisfies IntegrationParameterTable;

/** `satisfies` does not see extra keys in the shared entries (ISSUE_TRACKER_PARAMETERS...): this does. */
type _NoExtraParameters = {
  [S in IntegrationSlug]: Exclude<keyof (typeof INTEGRATION_PARAMETERS)[S], keyof IntegrationParamsBySlug[S]>;
}[IntegrationSlug] extends never
  ? true
  : never;
const _integrationParametersHaveNoExtras: _NoExtraParameters = true;
void _integrationParametersHaveNoExtras;

/** The parameters of `slug`, widened for code that walks them generically. */
export function integrationParameters(slug: IntegrationSlug): Readonly<Record<string, IntegrationParameter>> {
  return INTEGRATION_PARAMETERS[slug];
}
